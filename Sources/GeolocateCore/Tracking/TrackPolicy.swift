import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool

/// What `track` collects and when it emits a record (SPEC §4).
package struct TrackPolicy: Sendable, Equatable {
    /// GeoManager's limits: an emission at least every 60 s and at most every 1800 s.
    package static let intervalRange: ClosedRange<Int64> = 60_000...1_800_000
    package static let defaultIntervalMilliseconds: Int64 = 300_000
    /// GeoManager's limits on the distance that triggers an emission.
    package static let distanceRange: ClosedRange<Double> = 200...500
    package static let defaultDistanceMetres = 300.0

    /// Emit when this much (fix) time has passed since the last emitted record.
    package var intervalMilliseconds = TrackPolicy.defaultIntervalMilliseconds
    /// Or when the device is this far from the last emitted record.
    package var distanceMetres = TrackPolicy.defaultDistanceMetres
    package var accuracy = AccuracyLevel.best
    package var window = CollectionWindow.allDay
    /// Emit every fix that passes the filters (gpspipe-like).
    package var everyFix = false
    /// Stop after this many records.
    package var count: Int?
    /// Stop after this much source time (log time on a replay).
    package var durationMilliseconds: Int64?
    /// Stay detection for `location_context`; `nil` when off.
    package var visits: VisitSettings? = VisitSettings()

    package init() {}

    /// `1m-30m`: `intervalRange` as help and warnings write it.
    package static let intervalRangeText =
        "\(DurationText.format(intervalRange.lowerBound))-\(DurationText.format(intervalRange.upperBound))"
    /// `200-500`: `distanceRange` in metres, as help and warnings write it.
    package static let distanceRangeText = "\(distanceRange.lowerBound.shortText)-\(distanceRange.upperBound.shortText)"

    /// `interval` if GeoManager allows it, else the default and the warning to print.
    package static func checkedInterval(_ milliseconds: Int64) -> (value: Int64, warning: String?) {
        if intervalRange.contains(milliseconds) { return (milliseconds, nil) }
        return (defaultIntervalMilliseconds, "--interval \(DurationText.format(milliseconds)) is outside \(intervalRangeText); "
                    + "using the default \(DurationText.format(defaultIntervalMilliseconds))")
    }

    /// `distance` if GeoManager allows it, else the default and the warning to print.
    package static func checkedDistance(_ metres: Double) -> (value: Double, warning: String?) {
        if distanceRange.contains(metres) { return (metres, nil) }
        return (defaultDistanceMetres, "--distance \(String(format: "%.6g", metres)) is outside \(distanceRangeText) m; "
                    + "using the default \(defaultDistanceMetres.shortText) m")
    }
}

/// `--accuracy`: the worst 68 % radius a fix may have to be collected (iOS's desired accuracy levels).
package enum AccuracyLevel: String, Sendable, CaseIterable {
    /// Every fix, whatever its accuracy (also one that reports none).
    case best
    case tenMetres = "10m"
    case hundredMetres = "100m"
    case kilometre = "1km"
    case threeKilometres = "3km"

    package var maximumMetres: Double? {
        switch self {
        case .best: return nil
        case .tenMetres: return 10
        case .hundredMetres: return 100
        case .kilometre: return 1000
        case .threeKilometres: return 3000
        }
    }

    /// Whether `fix` is good enough; a fix without an accuracy passes only `best`.
    package func accepts(_ fix: Fix) -> Bool {
        guard let maximum = maximumMetres else { return true }
        guard let accuracy = fix.horizontalAccuracy else { return false }
        return accuracy <= maximum
    }
}

/// `--window HH:MM-HH:MM`: the local times of day fixes are collected in, both minutes
/// included; a window whose end is before its start crosses midnight.
package struct CollectionWindow: Sendable, Equatable, CustomStringConvertible {
    /// Minutes after local midnight.
    package var startMinute: Int
    package var endMinute: Int

    package static let allDay = CollectionWindow(startMinute: 0, endMinute: 23 * 60 + 59)

    package init(startMinute: Int, endMinute: Int) {
        self.startMinute = startMinute
        self.endMinute = endMinute
    }

    /// Parses `HH:MM-HH:MM`.
    /// - Throws: `GeolocateError.usage` naming the form.
    package init(parsing text: String) throws {
        func minute(_ part: Substring) -> Int? {
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false)
            guard pieces.count == 2, pieces.allSatisfy({ $0.count == 2 }),
                  let hour = Int(pieces[0]), let minute = Int(pieces[1]),
                  (0...23).contains(hour), (0...59).contains(minute) else { return nil }
            return hour * 60 + minute
        }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let start = minute(parts[0]), let end = minute(parts[1]) else {
            throw GeolocateError.usage("invalid window '\(text)' (use HH:MM-HH:MM in local time, such as 08:00-18:30 or 22:00-06:00)")
        }
        self.init(startMinute: start, endMinute: end)
    }

    /// Whether the instant `milliseconds` since 1970 falls in the window in `timeZone`.
    package func contains(_ milliseconds: Int64, in timeZone: TimeZone) -> Bool {
        if self == .allDay { return true }  // no time zone lookup for every fix of the default
        let seconds = milliseconds / 1000 + Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(milliseconds) / 1000)))
        let minute = Int(((seconds % 86_400) + 86_400) % 86_400 / 60)
        if startMinute <= endMinute { return (startMinute...endMinute).contains(minute) }
        return minute >= startMinute || minute <= endMinute
    }

    package var description: String {
        String(format: "%02d:%02d-%02d:%02d", startMinute / 60, startMinute % 60, endMinute / 60, endMinute % 60)
    }
}

/// Finds stays in a stream of fixes, as OpenLocate's visit monitoring does: a stay begins at a
/// fix (its anchor) and lasts while later fixes are within the radius of it; once it has lasted
/// the minimum duration it is a visit (`visit_entry`), and the first fix outside the radius ends
/// it (`visit_exit`) and anchors the next possible stay.
package struct VisitDetector: Sendable {
    package let settings: VisitSettings
    private var anchor: Fix?
    private var inVisit = false

    package init(settings: VisitSettings) { self.settings = settings }

    /// The visit event `fix` causes, if any.
    package mutating func observe(_ fix: Fix) -> LocationContext? {
        guard let anchor else {
            self.anchor = fix
            return nil
        }
        let away = Geodesy.greatCircle(anchor, fix) > settings.radiusMetres
        if inVisit {
            guard away else { return nil }
            inVisit = false
            self.anchor = fix
            return .visitExit
        }
        if away {
            self.anchor = fix
            return nil
        }
        guard fix.timestamp - anchor.timestamp >= settings.minDurationMilliseconds else { return nil }
        inVisit = true
        return .visitEntry
    }
}

/// Decides which fixes become records: the first, then one when `--interval` has passed or the
/// device moved `--distance` from the last record (GeoManager), or every one with `--every-fix`.
package struct EmissionFilter: Sendable {
    package let policy: TrackPolicy
    private(set) var lastEmitted: Fix?

    package init(policy: TrackPolicy) { self.policy = policy }

    package func isDue(_ fix: Fix) -> Bool {
        guard let last = lastEmitted, !policy.everyFix else { return true }
        return fix.timestamp - last.timestamp >= policy.intervalMilliseconds
            || Geodesy.greatCircle(last, fix) >= policy.distanceMetres
    }

    /// Notes that a record was made of `fix`: intervals and distances count from it.
    package mutating func emitted(_ fix: Fix) { lastEmitted = fix }
}

import Foundation
import GeolocateConfig
import GeolocateModel

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

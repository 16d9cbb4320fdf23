import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

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

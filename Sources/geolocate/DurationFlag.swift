import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

/// The durations flags take, parsed where ArgumentParser reads them. Every duration has a unit
/// (`1500ms`, `2s`, `30m`, `2h`, `10d`); a bare number other than 0 is refused, as it could be
/// read as milliseconds or seconds (REFERENCE "Configuration").
enum DurationFlag {
    /// A duration above 0: 0 would stop track at once, or flush without a pause.
    static func positive(_ text: String, flag: String) throws -> Int64 {
        // Not "negative (use 0 or more)": 0 is refused too.
        if text.hasPrefix("-") { throw GeolocateError.usage("\(flag) must be above 0 (such as 30s or 10m)") }
        let milliseconds = try DurationText.milliseconds(text, bareUnit: .refused)
        guard milliseconds > 0 else { throw GeolocateError.usage("\(flag) must be above 0 (such as 30s or 10m)") }
        return milliseconds
    }

    /// `--timeout`: 0 (only what gpsd already holds), or 10 ms to 10 minutes: a shorter one is
    /// a unit mistaken, such as `2ms` meant as seconds.
    static func queryTimeout(_ text: String) throws -> Int64 {
        let milliseconds = try DurationText.milliseconds(text, bareUnit: .refused)
        guard milliseconds <= Defaults.maximumQueryTimeoutMilliseconds else {
            throw GeolocateError.usage("--timeout \(text) is over the \(DurationText.format(Defaults.maximumQueryTimeoutMilliseconds)) a query may take")
        }
        guard milliseconds == 0 || milliseconds >= Defaults.minimumTimeoutMilliseconds else {
            let hint = text.hasSuffix("ms") ? "; did you mean \(text.dropLast(2))s?" : ""
            throw GeolocateError.usage("--timeout \(text) is under \(DurationText.format(Defaults.minimumTimeoutMilliseconds)), too short for any fix\(hint)")
        }
        return milliseconds
    }
}

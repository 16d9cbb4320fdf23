import Foundation

/// Parses `--now` values: ISO 8601 (`2026-11-22T05:00:00Z`, fractional seconds allowed) or epoch milliseconds.
public enum TimeText {
    public static func milliseconds(_ text: String) throws -> Int64 {
        if !text.isEmpty, text.allSatisfy(\.isNumber), let value = Int64(text) { return value }
        for options in [ISO8601DateFormatter.Options.withInternetDateTime,
                        [.withInternetDateTime, .withFractionalSeconds]] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = options
            if let date = formatter.date(from: text) {
                return Int64((date.timeIntervalSince1970 * 1000).rounded())
            }
        }
        throw GeolocateError.usage("invalid time '\(text)' (use ISO 8601 such as 2026-11-22T05:00:00Z, or epoch milliseconds)")
    }

    /// `milliseconds` since 1970 as ISO 8601 UTC, for messages.
    public static func iso8601(_ milliseconds: Int64) -> String {
        ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }
}

import NMEA

/// Parses `--now` values and writes times for messages.
///
/// ISO 8601 is read strictly (RFC 3339's profile): `2026-11-22T05:00:00Z`, fractional seconds
/// and an offset such as `+01:00` allowed, every field in its range, so a typo such as
/// `+25:00` or `2026-02-30` is refused rather than read as some other time.
package enum TimeText {
    /// The last millisecond of 9999, the latest time ISO 8601 can write: a time beyond means
    /// nothing.
    package static let latestMilliseconds: Int64 = 253_402_300_799_999

    /// Milliseconds since 1970 in `text`: ISO 8601 or epoch milliseconds.
    /// - Throws: `GeolocateError.usage` naming the accepted forms.
    package static func milliseconds(_ text: String) throws -> Int64 {
        if !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int64(text), value <= latestMilliseconds {
            return value
        }
        guard let value = iso8601Milliseconds(Array(text.utf8)) else {
            throw GeolocateError.usage("invalid time '\(text)' (use ISO 8601 such as 2026-11-22T05:00:00Z, or epoch milliseconds)")
        }
        return value
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`, or `nil` when any part is missing or out of range.
    package static func iso8601Milliseconds(_ bytes: [UInt8]) -> Int64? {
        var index = 0
        func digits(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
              expect("Tt "), let hour = digits(2), expect(":"), let minute = digits(2), expect(":"),
              let second = digits(2) else { return nil }
        let date = CivilDate(year: year, month: month, day: day)
        guard date.isValid, hour <= 23, minute <= 59, second <= 60 else { return nil }
        var milliseconds = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 100
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                milliseconds += Int(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offsetMinutes = 0
        if expect("Zz") {
            offsetMinutes = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = digits(2), expect(":"), let minutes = digits(2), hours <= 23, minutes <= 59 else { return nil }
            offsetMinutes = sign * (hours * 60 + minutes)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let seconds = Int64(date.daysSinceEpoch) * 86_400 + Int64(hour * 3600 + minute * 60 + second - offsetMinutes * 60)
        return seconds * 1000 + Int64(milliseconds)
    }

    /// `milliseconds` since 1970 as ISO 8601 UTC to the millisecond (`…T10:00:00.250Z`), for
    /// exported points.
    package static func iso8601WithMilliseconds(_ milliseconds: Int64) -> String {
        let fraction = Int(milliseconds - milliseconds.dividedRoundingDown(by: 1000) * 1000)
        let text = String(fraction)
        return iso8601(milliseconds).dropLast() + "." + String(repeating: "0", count: 3 - text.count) + text + "Z"
    }

    /// `milliseconds` since 1970 as ISO 8601 UTC to the second, for messages.
    package static func iso8601(_ milliseconds: Int64) -> String {
        let seconds = milliseconds.dividedRoundingDown(by: 1000)
        let days = seconds.dividedRoundingDown(by: 86_400)
        let date = CivilDate(daysSinceEpoch: Int(clamping: days))
        let secondOfDay = Int(seconds - days * 86_400)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let year = String(date.year)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + "-" + two(date.month) + "-" + two(date.day)
            + "T" + two(secondOfDay / 3600) + ":" + two(secondOfDay / 60 % 60) + ":" + two(secondOfDay % 60) + "Z"
    }
}

extension Int64 {
    /// Division rounding towards negative infinity, so times before 1970 fall on the right day.
    package func dividedRoundingDown(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }
}

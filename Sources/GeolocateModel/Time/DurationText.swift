/// Parses and prints durations such as `1500ms`, `2s`, `30m`, `2h`.
package enum DurationText {
    /// The unit a number without a suffix is taken in; `refused` asks for a unit.
    package enum BareUnit: Sendable { case milliseconds, seconds, minutes, refused }

    /// The longest duration accepted: 100 years, far beyond any timeout or retention, and far
    /// below where milliseconds overflow `Int64` (SPEC §8: refused, never an arithmetic trap).
    package static let maximumMilliseconds: Int64 = maximumYears * 365 * 86_400_000
    package static let maximumYears: Int64 = 100

    /// Milliseconds in `text`; a bare number is read in `bareUnit`.
    /// - Throws: `GeolocateError.usage` naming the accepted forms.
    package static func milliseconds(_ text: String, bareUnit: BareUnit) throws -> Int64 {
        let units: [(String, Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        var number = Substring(text)
        var scale: Double
        switch bareUnit {
        case .milliseconds: scale = 1
        case .seconds: scale = 1000
        case .minutes: scale = 60_000
        case .refused: scale = .nan
        }
        for (suffix, unitScale) in units where text.hasSuffix(suffix) {
            number = text.dropLast(suffix.count)
            scale = unitScale
            break
        }
        if number.hasPrefix("-"), NumberText.isDecimal(number.dropFirst()) {
            throw GeolocateError.usage("invalid duration '\(text)': it is negative (use 0 or more, such as 1500ms or 2s)")
        }
        if scale.isNaN {
            if let value = Double(number), value == 0, NumberText.isDecimal(number) { return 0 }  // 0 in any unit
            throw GeolocateError.usage(NumberText.isDecimal(number)
                ? "invalid duration '\(text)': say its unit, such as \(number.contains(".") ? "" : "\(text)ms or ")\(text)s"
                : "invalid duration '\(text)' (use a number with ms, s, m, h or d, such as 1500ms, 2s, 30m, 2h, 10d)")
        }
        guard NumberText.isDecimal(number), let value = Double(number), value.isFinite, value >= 0, !number.hasPrefix("+"),
              (value * scale).rounded() <= Double(maximumMilliseconds) else {
            throw GeolocateError.usage(
                "invalid duration '\(text)' (use a number with ms, s, m, h or d up to \(maximumYears) years, such as 1500ms, 2s, 30m, 2h, 10d)")
        }
        // Durations are whole milliseconds: 1.5ms is a unit mistaken (1.5s?), not a wish.
        guard abs(value * scale - (value * scale).rounded()) < 1e-6 else {
            let hint = scale == 1 ? "; did you mean \(number)s?" : ""
            throw GeolocateError.usage("invalid duration '\(text)': a fraction of a millisecond (durations are whole milliseconds\(hint))")
        }
        return Int64((value * scale).rounded())
    }

    /// "a duration" with what `range` allows ("above 0", "of 1h or more", "from 10ms to 10m"),
    /// then ", " or " " before examples: valid values as messages and help quote them.
    package static func describe(_ range: ClosedRange<Int64>) -> String {
        switch (range.lowerBound, range.upperBound) {
        case (...0, maximumMilliseconds...): return "a duration "
        case (1, maximumMilliseconds...): return "a duration above 0, "
        case (let lower, maximumMilliseconds...): return "a duration of \(format(lower)) or more, "
        case (let lower, let upper): return "a duration from \(format(lower)) to \(format(upper)), "
        }
    }

    /// The shortest exact spelling: `10d`, `2h`, `30m`, `90s`, `1500ms`.
    package static func format(_ milliseconds: Int64) -> String {
        if milliseconds > 0 && milliseconds % 86_400_000 == 0 { return "\(milliseconds / 86_400_000)d" }
        if milliseconds > 0 && milliseconds % 3_600_000 == 0 { return "\(milliseconds / 3_600_000)h" }
        if milliseconds > 0 && milliseconds % 60_000 == 0 { return "\(milliseconds / 60_000)m" }
        if milliseconds % 1000 == 0 { return "\(milliseconds / 1000)s" }
        return "\(milliseconds)ms"
    }
}

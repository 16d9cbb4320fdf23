/// Walks the comma-separated fields of one sentence body and decodes them without allocating.
///
/// Every decoder returns `nil` for an empty or malformed field: unknown stays unknown
/// (STYLE principle 5), and numbers are read from bytes, never through `String` or `Double(_:)`.
struct NMEAFieldCursor {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position: Int

    /// Starts at the first data field, after the address field (`GPGGA`).
    init(body: UnsafeBufferPointer<UInt8>) {
        self.bytes = body
        var i = 0
        while i < body.count && body[i] != 0x2C { i += 1 }
        position = i + 1
    }

    /// Whether all fields have been consumed.
    var isAtEnd: Bool { position > bytes.count }

    /// The next field's byte range, or `nil` past the last field.
    @inline(__always)
    mutating func next() -> Range<Int>? {
        guard position <= bytes.count else { return nil }
        let start = position
        var i = start
        while i < bytes.count && bytes[i] != 0x2C { i += 1 }
        position = i + 1
        return start..<i
    }

    /// Skips `count` fields.
    @inline(__always)
    mutating func skip(_ count: Int) {
        for _ in 0..<count { _ = next() }
    }

    /// The next field as one character, or `nil` if empty.
    @inline(__always)
    mutating func character() -> UInt8? {
        guard let field = next(), !field.isEmpty else { return nil }
        return bytes[field.lowerBound]
    }

    /// The next field as a non-negative integer.
    @inline(__always)
    mutating func integer() -> Int? {
        guard let field = next() else { return nil }
        return integer(in: field)
    }

    /// The next GSV satellite (PRN, elevation, azimuth, C/N0) as its PRN and C/N0, or `nil`
    /// when fewer than four fields are left: NMEA 4.1's signal ID may follow the last one.
    @inline(__always)
    mutating func satelliteInView() -> (prn: Int?, cn0: Int?)? {
        guard let prn = next(), next() != nil, next() != nil, let cn0 = next() else { return nil }
        return (integer(in: prn), integer(in: cn0))
    }

    /// The non-negative integer in `field`, or `nil` when it is empty or not all digits.
    @inline(__always)
    private func integer(in field: Range<Int>) -> Int? {
        guard !field.isEmpty else { return nil }
        var value = 0
        for i in field {
            let digit = bytes[i] &- 0x30
            guard digit < 10 else { return nil }
            value = value &* 10 &+ Int(digit)
        }
        return value
    }

    /// The next field as a decimal number (optional sign, digits, optional fraction).
    @inline(__always)
    mutating func decimal() -> Double? {
        guard let field = next(), let parsed = parseDecimal(field) else { return nil }
        // Dividing two exact values rounds once, so "0.69" becomes the double nearest 0.69.
        return Double(parsed.mantissa) / Double(NMEAFieldCursor.power(parsed.scale))
    }

    /// The next two fields as a coordinate `dddmm.mmmm` and its hemisphere letter, which must
    /// be `positive` or `negative` (N/S, E/W): any other letter leaves the coordinate unknown.
    ///
    /// Degrees and minutes are split in integer arithmetic so 8-decimal minutes keep
    /// their precision.
    @inline(__always)
    mutating func coordinate(positive: UInt8, negative: UInt8) -> Double? {
        let valueField = next()
        let hemisphere = character()
        guard let valueField, let parsed = parseDecimal(valueField), parsed.mantissa >= 0,
              let hemisphere, hemisphere == positive || hemisphere == negative
        else { return nil }
        let unit = NMEAFieldCursor.power(parsed.scale)
        let degrees = parsed.mantissa / (100 * unit)
        let minutesScaled = parsed.mantissa - degrees * 100 * unit
        guard minutesScaled < 60 * unit else { return nil }
        let value = Double(degrees) + Double(minutesScaled) / Double(NMEAFieldCursor.power(parsed.scale)) / 60
        return hemisphere == negative ? -value : value
    }

    /// The next field as a UTC time of day `hhmmss[.sss]`, in milliseconds.
    @inline(__always)
    mutating func timeOfDay() -> Int? {
        guard let field = next(), field.count >= 6 else { return nil }
        let s = field.lowerBound
        guard let hh = twoDigits(s), let mm = twoDigits(s + 2), let ss = twoDigits(s + 4),
              hh < 24, mm < 60, ss <= 60
        else { return nil }
        var millis = 0
        if field.count > 6 {
            guard bytes[s + 6] == 0x2E else { return nil }
            var scale = 100
            var i = s + 7
            while i < field.upperBound {
                let digit = bytes[i] &- 0x30
                guard digit < 10 else { return nil }
                millis += Int(digit) * scale
                scale /= 10
                i += 1
            }
        }
        return ((hh * 60 + mm) * 60 + ss) * 1000 + millis
    }

    /// The next field as an RMC date `ddmmyy`; two-digit years map to 1980–2079.
    @inline(__always)
    mutating func date() -> CivilDate? {
        guard let field = next(), field.count == 6 else { return nil }
        let s = field.lowerBound
        guard let day = twoDigits(s), let month = twoDigits(s + 2), let yy = twoDigits(s + 4) else {
            return nil
        }
        let date = CivilDate(year: yy < 80 ? 2000 + yy : 1900 + yy, month: month, day: day)
        return date.isValid ? date : nil
    }

    @inline(__always)
    private func twoDigits(_ at: Int) -> Int? {
        let a = bytes[at] &- 0x30, b = bytes[at + 1] &- 0x30
        guard a < 10, b < 10 else { return nil }
        return Int(a) * 10 + Int(b)
    }

    @inline(__always)
    private func parseDecimal(_ field: Range<Int>) -> (mantissa: Int, scale: Int)? {
        guard !field.isEmpty else { return nil }
        var i = field.lowerBound
        var negative = false
        if bytes[i] == 0x2D || bytes[i] == 0x2B {
            negative = bytes[i] == 0x2D
            i += 1
        }
        var mantissa = 0
        var scale = 0
        var digits = 0
        var seenPoint = false
        while i < field.upperBound {
            let byte = bytes[i]
            if byte == 0x2E {
                guard !seenPoint else { return nil }
                seenPoint = true
            } else {
                let digit = byte &- 0x30
                guard digit < 10, digits < 17 else { return nil }
                mantissa = mantissa * 10 + Int(digit)
                digits += 1
                if seenPoint { scale += 1 }
            }
            i += 1
        }
        guard digits > 0 else { return nil }
        return (negative ? -mantissa : mantissa, scale)
    }

    /// 10^exponent for the 0…17 fraction digits a field may have.
    @inline(__always)
    private static func power(_ exponent: Int) -> Int {
        var value = 1
        for _ in 0..<exponent { value &*= 10 }
        return value
    }
}

/// A calendar date in UTC, as NMEA carries it.
public struct CivilDate: Sendable, Hashable, Codable {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Whether the fields form a real Gregorian date of years 1 to 9999 (NMEA's four digits;
    /// a wider year would overflow the day arithmetic).
    public var isValid: Bool {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1 else { return false }
        return day <= CivilDate.daysIn(month: month, year: year)
    }

    /// Days since 1970-01-01 (Howard Hinnant's `days_from_civil`).
    public var daysSinceEpoch: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let monthIndex = month > 2 ? month - 3 : month + 9
        let dayOfYear = (153 * monthIndex + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after this one.
    public func adding(days: Int) -> CivilDate { CivilDate(daysSinceEpoch: daysSinceEpoch + days) }

    /// The date of a day count since 1970-01-01 (Hinnant's `civil_from_days`).
    public init(daysSinceEpoch: Int) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

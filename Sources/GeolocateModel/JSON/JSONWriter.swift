import Foundation

/// Writes JSON into one growing byte buffer, keys in the order given, which `JSONEncoder` does
/// not keep.
///
/// Records are read by people and diffed in golden files, so their key order is part of the
/// format. Every record printed, spooled or sent goes through here, so a whole batch body is
/// written into one buffer rather than built from a `String` a field.
package struct JSONWriter {
    package private(set) var bytes: [UInt8] = []
    /// Whether the next key or value follows another in the same object or array.
    private var needsComma = false

    package init(capacity: Int = 640) { bytes.reserveCapacity(capacity) }

    /// The bytes as text.
    package var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Ends the line: a newline after the last value, as NDJSON separates records.
    package mutating func endLine() { bytes.append(UInt8(ascii: "\n")) }

    package mutating func beginObject(_ key: String? = nil) { open(key, UInt8(ascii: "{")) }

    package mutating func endObject() { close(UInt8(ascii: "}")) }

    package mutating func beginArray(_ key: String? = nil) { open(key, UInt8(ascii: "[")) }

    package mutating func endArray() { close(UInt8(ascii: "]")) }

    /// `key`, then the one value `write` writes (an object an encoder makes, nested here).
    package mutating func member(_ key: String, _ write: (inout JSONWriter) -> Void) {
        self.key(key)
        needsComma = false
        write(&self)
        needsComma = true
    }

    private mutating func open(_ key: String?, _ bracket: UInt8) {
        self.key(key)
        bytes.append(bracket)
        needsComma = false
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        needsComma = true
    }

    /// Ends a line of NDJSON: the next value starts a new document.
    package mutating func newline() {
        bytes.append(UInt8(ascii: "\n"))
        needsComma = false
    }

    /// A string, or `null`.
    package mutating func string(_ key: String?, _ value: String?) {
        self.key(key)
        if let value { appendQuoted(value) } else { appendNull() }
    }

    package mutating func stringIfPresent(_ key: String, _ value: String?) {
        if let value { string(key, value) }
    }

    /// An integer, or `null`.
    package mutating func integer(_ key: String, _ value: Int64?) {
        self.key(key)
        guard let value else { return appendNull() }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        JSONWriter.appendDigits(value.magnitude, to: &bytes)
    }

    package mutating func integerIfPresent(_ key: String, _ value: Int64?) {
        if let value { integer(key, value) }
    }

    package mutating func strings(_ key: String, _ values: [String]) {
        beginArray(key)
        for value in values { string(nil, value) }
        endArray()
    }

    /// A number written as a decimal string with `digits` after the point, when present: the
    /// Mosaic record's style.
    package mutating func decimalStringIfPresent(_ key: String, _ value: Double?, digits: Int) {
        guard let value else { return }
        self.key(key)
        bytes.append(UInt8(ascii: "\""))
        JSONWriter.appendDecimal(value, digits: digits, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// A number with `digits` after the point, or `null` when missing or not finite.
    package mutating func number(_ key: String?, _ value: Double?, digits: Int) {
        self.key(key)
        if let value, value.isFinite { JSONWriter.appendDecimal(value, digits: digits, to: &bytes) } else { appendNull() }
    }

    /// A number with `digits` after the point, when present and finite.
    package mutating func numberIfPresent(_ key: String, _ value: Double?, digits: Int) {
        if let value, value.isFinite { number(key, value, digits: digits) }
    }

    package mutating func bool(_ key: String, _ value: Bool) {
        self.key(key)
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    package mutating func boolIfPresent(_ key: String, _ value: Bool?) {
        if let value { bool(key, value) }
    }

    /// `null` under `key`.
    /// `key: true|false`, or `key: null` for `nil`.
    package mutating func bool(_ key: String, orNull value: Bool?) {
        if let value { bool(key, value) } else { null(key) }
    }

    package mutating func null(_ key: String) {
        self.key(key)
        appendNull()
    }

    private mutating func key(_ key: String?) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
        guard let key else { return }
        appendQuoted(key)
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func appendNull() { bytes.append(contentsOf: "null".utf8) }

    private mutating func appendQuoted(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        defer { bytes.append(UInt8(ascii: "\"")) }
        // Ids, keys and names almost never need an escape: copy them whole.
        let copied: Bool? = string.utf8.withContiguousStorageIfAvailable { buffer in
            for byte in buffer where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                return false
            }
            bytes.append(contentsOf: buffer)
            return true
        }
        if copied == true { return }
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\n"): bytes.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): bytes.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): bytes.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
    }

    /// `string` as a JSON string literal, quotes included.
    package static func quoted(_ string: String) -> String {
        var writer = JSONWriter(capacity: string.utf8.count + 2)
        writer.appendQuoted(string)
        return writer.text
    }

    private static func appendDigits(_ value: UInt64, to bytes: inout [UInt8]) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0
            bytes.append(contentsOf: buffer[(20 - count)...])
        }
    }

    /// Fixed-point text of `value` as `%.Nf` prints it (ties to even), without a negative zero.
    package static func decimal(_ value: Double, digits: Int) -> String {
        var bytes: [UInt8] = []
        appendDecimal(value, digits: digits, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `decimal(value, digits:)`.
    ///
    /// Written out by hand: `String(format:)` costs microseconds a field on Linux, and every
    /// record has up to eight of them.
    package static func appendDecimal(_ value: Double, digits: Int, to bytes: inout [UInt8]) {
        let digits = min(max(digits, 0), 9)
        let scale = powersOfTen[digits]
        let product = abs(value) * Double(scale)
        let scaled = product.rounded(.toNearestOrEven)
        guard value.isFinite, scaled < 9e15 else {
            let text = String(format: "%.\(digits)f", value)
            bytes.append(contentsOf: (text.hasPrefix("-") && Double(text) == 0 ? String(text.dropFirst()) : text).utf8)
            return
        }
        var units = UInt64(scaled)
        // The product is rounded once, so it lands on the same side of a half as the exact
        // value, or on the half itself. Then the exact product decides, as printf's exact
        // decimal does: its rounding error, which a fused multiply-add gives exactly, says on
        // which side of the half it lies, and a true tie goes to the even neighbour.
        let below = product.rounded(.down)
        if product - below == 0.5 {
            let error = (-product).addingProduct(abs(value), Double(scale))
            if error > 0 { units = UInt64(below) + 1 } else if error < 0 { units = UInt64(below) }
        }
        if value < 0 && units != 0 { bytes.append(UInt8(ascii: "-")) }
        appendDigits(units / scale, to: &bytes)
        guard digits > 0 else { return }
        bytes.append(UInt8(ascii: "."))
        let fraction = units % scale
        var width = 1
        while width < digits && fraction >= powersOfTen[width] { width += 1 }
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: digits - width))
        appendDigits(fraction, to: &bytes)
    }

    private static let powersOfTen: [UInt64] = (0...9).map { (0..<$0).reduce(1) { acc, _ in acc * 10 } }
}

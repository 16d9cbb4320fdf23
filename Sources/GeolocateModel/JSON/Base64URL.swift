/// Base64url without padding (RFC 7515 §2), the encoding of every part of a JWS.
///
/// Written by hand, byte to byte into one buffer: a `jwt` flush encodes three parts a record,
/// and Foundation's base64 plus two replacements cost more than the signature.
/// `LocationTokenTests` checks it against Foundation's on every length up to 300.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    package static func encode<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        var out: [UInt8] = []
        append(Array(bytes), to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the encoding of `bytes` to `out`.
    package static func append(_ bytes: [UInt8], to out: inout [UInt8]) {
        out.reserveCapacity(out.count + (bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let word = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(word >> 18 & 63)])
            out.append(alphabet[Int(word >> 12 & 63)])
            out.append(alphabet[Int(word >> 6 & 63)])
            out.append(alphabet[Int(word & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let word = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(word >> 18 & 63)])
            out.append(alphabet[Int(word >> 12 & 63)])
        case 2:
            let word = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(word >> 18 & 63)])
            out.append(alphabet[Int(word >> 12 & 63)])
            out.append(alphabet[Int(word >> 6 & 63)])
        default:
            break
        }
    }

    /// The bytes `text` encodes, or `nil` unless it is canonical unpadded base64url: only the
    /// alphabet, no `=`, no length of 4n+1, and zero bits where the last character has spare
    /// ones, so each byte string has exactly one text (a challenge is compared as text).
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(characters.count * 3 / 4)
        var word: UInt32 = 0, bits = 0
        for character in characters {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            word = word << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: word >> UInt32(bits)))
                word &= (1 << UInt32(bits)) - 1
            }
        }
        return word == 0 ? out : nil
    }
}

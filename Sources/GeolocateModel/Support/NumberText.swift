/// Numbers as people write them in flags and settings.
package enum NumberText {
    /// Whether `text` is a decimal number: an optional sign, digits with an optional fraction,
    /// and an optional exponent (`2`, `-0.5`, `1e3`). `Double(_:)` also reads hex (`0x1p3`),
    /// `nan` and `inf`, which nobody means as a radius or a duration.
    package static func isDecimal<S: StringProtocol>(_ text: S) -> Bool {
        var sawDigit = false, sawDot = false, sawExponent = false
        var previous: Character?
        for character in text {
            switch character {
            case "0"..."9":
                sawDigit = true
            case ".":
                if sawDot || sawExponent { return false }
                sawDot = true
            case "e", "E":
                if sawExponent || !sawDigit { return false }
                sawExponent = true
                sawDigit = false
            case "-", "+":
                if !(previous == nil || previous == "e" || previous == "E") { return false }
            default:
                return false
            }
            previous = character
        }
        return sawDigit
    }
}

import ArgumentParser
import Foundation
import GeolocateModel
import Synchronization

/// A value the argument parser refused, as our own parsing function refused it: the value
/// typed, our reason, or the values an enumeration takes; kept by that function as it refuses,
/// so the usage error is made of these (SPEC §8) and not of the parser's English.
///
/// swift-argument-parser's public API says only that a value was invalid; its error values
/// are internal. Each parsing function a flag or argument uses (`RefusedValue.checking` for a
/// transform, `RefusedValue.choice` for an enumeration's `init?(argument:)`) records what it
/// refused here; the flag as typed is found in the arguments (`flag(in:)`). The parser stops
/// at the first value it cannot take, so one record is enough.
struct RefusedValue: Sendable {
    var value: String
    /// The names of the flag that refused it (`["-w", "--warning"]`), where its parsing
    /// function knows them; empty for an enumeration, which any flag may take.
    var names: [String]
    /// Our sentence, quoting the value itself where it may (a URL is quoted redacted).
    var reason: String?
    /// The values an enumeration takes, when `reason` is nil.
    var values: [String]

    private static let last = Mutex<RefusedValue?>(nil)

    /// The value refused while the arguments were parsed, nil if none was.
    static var recorded: RefusedValue? { last.withLock { $0 } }

    /// `parse` as the transform of the flag named `names`, recording the value it refuses and why.
    static func checking<Value>(_ names: String..., parse: @escaping @Sendable (String) throws -> Value) -> @Sendable (String) throws -> Value {
        { text in
            do {
                return try parse(text)
            } catch {
                let reason = (error as? LocalizedError)?.errorDescription ?? String(describing: error)
                last.withLock { $0 = RefusedValue(value: text, names: names, reason: reason, values: []) }
                throw error
            }
        }
    }

    /// The transform of a number flag named `names`: the parser's own reading of a number,
    /// recording a value it refuses.
    static func number<Number: ExpressibleByArgument>(_ names: String...) -> @Sendable (String) throws -> Number {
        { text in
            guard let number = Number(argument: text) else {
                last.withLock { $0 = RefusedValue(value: text, names: names, reason: nil, values: []) }
                throw ValidationError("'\(text)' is not a value it takes")
            }
            return number
        }
    }

    /// The case `parse` finds for `argument`, else nil, recorded as refused with the values of `Choice`.
    static func choice<Choice: ExpressibleByArgument>(_ argument: String, _ parse: (String) -> Choice?) -> Choice? {
        guard let value = parse(argument) else {
            last.withLock { $0 = RefusedValue(value: argument, names: [], reason: nil, values: Choice.allValueStrings) }
            return nil
        }
        return value
    }

    /// The flag the value was given to, as typed (`--timeout`, `-w`), nil for a positional
    /// argument: the word before the value, or the name before `=` in `--timeout=1.5`; one of
    /// `names` where they are known.
    func flag(in arguments: [String]) -> String? {
        func isFlag(_ word: Substring) -> Bool { word.hasPrefix("-") && word != "--" && (names.isEmpty || names.contains(String(word))) }
        for (index, word) in arguments.enumerated() {
            if word == "--" { return nil }
            if let equals = word.firstIndex(of: "="), isFlag(word[..<equals]), word[word.index(after: equals)...] == value {
                return String(word[..<equals])
            }
            if word == value, index > 0, isFlag(arguments[index - 1][...]) {
                return arguments[index - 1]
            }
        }
        return nil
    }

    /// The one sentence: `--format: 'xml' is not one of mosaic, …` (a reason that names its
    /// flag already, `--timeout 5ms is under 10ms`, is not prefixed again).
    func sentence(in arguments: [String]) -> String {
        let flag = flag(in: arguments)
        func naming(_ text: String) -> String {
            guard let flag, !text.hasPrefix(flag) else { return text }
            return "\(flag): \(text)"
        }
        if let reason { return naming(reason) }
        guard !values.isEmpty else { return naming("'\(value)' is not a value it takes") }
        return naming("'\(value)' is not one of \(values.joined(separator: ", "))" + Suggestion.didYouMean(value, among: values))
    }
}

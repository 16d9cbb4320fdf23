import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery

/// A value the argument parser refused for a flag or argument: the flag as its synopsis
/// writes it (`--format`), the value typed, and the error our parsing function threw, if any
/// (none for a value outside an enumeration's cases).
///
/// swift-argument-parser keeps its errors internal (`CommandError`, `ParserError` in 1.8.2)
/// and words them in English we would otherwise have to take apart; the values it stores are
/// read here by reflection instead, so a change of its wording cannot reach our messages.
/// Package.swift pins its version exactly; should a new version store them differently, this
/// is nil, the parser's own sentence is printed, and UsageErrorEndToEndTests fail on that bump.
struct RefusedValue {
    var flag: String?
    var value: String
    var reason: (any Error)?

    /// The refused value in `error`, nil for every other error.
    init?(_ error: any Error) {
        // A `CommandError` holds the `ParserError` beside the command stack.
        let wrapped = Mirror(reflecting: error).children.first { $0.label == "parserError" }?.value ?? error
        // `unableToParseValue(InputOrigin, Name?, String, forKey: InputKey, originalError: Error?)`
        guard let failure = Mirror(reflecting: wrapped).children.first, failure.label == "unableToParseValue" else { return nil }
        let fields = Array(Mirror(reflecting: failure.value).children)
        guard fields.count == 5, let value = fields[2].value as? String else { return nil }
        self.value = value
        reason = fields[4].value as? any Error
        flag = Mirror(reflecting: fields[1].value).children.first.flatMap { RefusedValue.synopsis(of: $0.value) }
    }

    /// `--name`, `-n` or `-name` for the parser's `Name` (`.long`, `.short`, `.longWithSingleDash`).
    private static func synopsis(of name: Any) -> String? {
        guard let (label, value) = Mirror(reflecting: name).children.first.map({ ($0.label, $0.value) }) else { return nil }
        switch label {
        case "long": return (value as? String).map { "--\($0)" }
        case "longWithSingleDash": return (value as? String).map { "-\($0)" }
        case "short":
            // `.short(Character, allowingJoined: Bool)`
            return (Mirror(reflecting: value).children.first?.value as? Character).map { "-\($0)" }
        default: return nil
        }
    }

    /// The values `flag` of `command` takes, from the parser's description of the command
    /// (its `ToolInfoV0` JSON, as `--experimental-dump-help` prints it: `command.arguments`,
    /// each with `names` and `allValues`); empty if it lists none.
    static func allValues(of flag: String?, in command: ParsableCommand.Type) -> [String] {
        guard let flag,
              let info = try? JSONSerialization.jsonObject(with: Data(command._dumpHelp().utf8)) as? [String: Any],
              let arguments = (info["command"] as? [String: Any])?["arguments"] as? [[String: Any]] else { return [] }
        let argument = arguments.first { argument in
            (argument["names"] as? [[String: Any]] ?? []).contains { name in
                guard let kind = name["kind"] as? String, let text = name["name"] as? String else { return false }
                return (kind == "long" ? "--" : "-") + text == flag
            }
        }
        return argument?["allValues"] as? [String] ?? []
    }
}

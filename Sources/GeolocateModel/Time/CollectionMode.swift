/// Which location to report for a risk event (SPEC §3).
package enum CollectionMode: Sendable, Equatable, CustomStringConvertible {
    /// Resolve through the per-action default, the built-in table, then `defaultInterval`.
    case `default`
    /// Report no location.
    case disabled
    /// Query the source now; fall back to the last known location after the query timeout.
    case forceCurrent
    /// Report the last known location whatever its age; never wait on the source.
    case forceLastKnown
    /// The last known location if at most `maxAgeMilliseconds` old, otherwise as `forceCurrent`.
    case lastKnown(maxAgeMilliseconds: Int64)

    /// Parses `default`, `disabled`, `force-current`, `force-last-known` or `last-known:N`,
    /// where `N` is minutes or a duration such as `90s`, `30m`, `2h`.
    package init(parsing text: String) throws {
        switch text {
        case "default": self = .default
        case "disabled": self = .disabled
        case "force-current": self = .forceCurrent
        case "force-last-known": self = .forceLastKnown
        default:
            guard text.hasPrefix("last-known:") else {
                throw GeolocateError.usage("unknown mode '\(text)'" + (CollectionMode.suggestion(for: text).map { "; did you mean \($0)?" }
                    ?? " (valid: \(CollectionMode.validValues))"))
            }
            let age = String(text.dropFirst("last-known:".count))
            guard let milliseconds = try? DurationText.milliseconds(age, bareUnit: .minutes) else {
                throw GeolocateError.usage(
                    "invalid mode '\(text)': N must be minutes or a duration up to 100 years (valid: \(CollectionMode.validValues))")
            }
            self = .lastKnown(maxAgeMilliseconds: milliseconds)
        }
    }

    /// The mode nearest to a mistyped one, keeping every part the user gave (SPEC §8):
    /// `last_known:1` is `last-known:1` and `LAST-KNOWN:30` is `last-known:30`, never a default
    /// age in place of theirs.
    package static func suggestion(for text: String) -> String? {
        let word = String(text.prefix { $0 != ":" })
        let argument = text.dropFirst(word.count)
        let words = spellings.map { String($0.prefix { $0 != ":" }) }
        guard let nearest = Suggestion.closest(to: word, among: words) ?? (words.contains(word) ? word : nil) else { return nil }
        guard nearest == "last-known" else { return nearest }
        return argument.count > 1 ? nearest + argument : spellings.first { $0.hasPrefix(nearest + ":") }
    }

    /// One spelling of each mode, for suggestions and shell completion.
    package static let spellings = ["default", "disabled", "force-current", "force-last-known", "last-known:5m"]

    /// The valid spellings, for error messages.
    package static let validValues = "default, disabled, force-current, force-last-known, last-known:N (N minutes, or 90s, 30m, 2h)"

    package var description: String {
        switch self {
        case .default: return "default"
        case .disabled: return "disabled"
        case .forceCurrent: return "force-current"
        case .forceLastKnown: return "force-last-known"
        case .lastKnown(let age): return "last-known:\(DurationText.format(age))"
        }
    }

    /// The built-in per-action defaults (SPEC §3); `nil` for actions not in the table.
    package static func builtInDefault(for action: String) -> CollectionMode? {
        builtInModes[action]
    }

    /// The actions Mosaic names, each with its built-in mode.
    package static let builtInModes: [String: CollectionMode] = [
        "login": .forceCurrent, "register": .forceCurrent, "transaction": .forceCurrent, "checkout": .forceCurrent,
        "password_reset": .forceCurrent, "account_details_change": .forceCurrent, "account_auth_change": .forceCurrent,
        "credits_change": .forceCurrent,
        "logout": .forceLastKnown, "withdraw": .forceLastKnown,
    ]
}

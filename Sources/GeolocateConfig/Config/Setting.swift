import Foundation

extension ConfigStore {
    /// Whether `text` is an http or https URL with a host, a port from 1 to 65535 if any, and
    /// no spaces or control characters.
    package static func isHTTPURL(_ text: String) -> Bool {
    guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }),
          let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
          scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else { return false }
    return url.port.map { (1...65_535).contains($0) } ?? true
    }
}

/// One configuration key: its name, the kind of value, the built-in default and what it means.
///
/// A `NAME` segment in the key matches any name, as in `actions.NAME.mode`.
package struct Setting<Value: Sendable>: Sendable {
    /// The dotted key, with `NAME` for a name the user picks.
    package let key: String
    package let kind: SettingKind<Value>
    /// What the key means, in a few words, for help and tables.
    package let help: String
    /// The key's parts, `*` for `NAME`.
    package let pattern: [String]
    private let builtIn: @Sendable (_ name: String) -> Value
    /// How help and tables name a default that depends on `NAME`; `nil` shows the value.
    private let defaultText: String?

    package init(_ key: String, _ kind: SettingKind<Value>, default value: Value, help: String) {
        self.init(key, kind, defaultForName: { _ in value }, described: nil, help: help)
    }

    /// A setting whose default depends on the `NAME` in its key, `described` in help and tables.
    package init(_ key: String, _ kind: SettingKind<Value>, defaultForName: @escaping @Sendable (String) -> Value,
         described defaultText: String?, help: String) {
        self.key = key
        self.kind = kind
        self.help = help
        self.pattern = key.split(separator: ".").map { $0 == "NAME" ? "*" : String($0) }
        self.builtIn = defaultForName
        self.defaultText = defaultText
    }

    /// The value used when the file sets none.
    package var builtInValue: Value { builtIn("") }

    /// The value used for `name` when the file sets none.
    package func builtInValue(for name: String) -> Value { builtIn(name) }

    /// The key's path with each `NAME` replaced by `name`.
    package func path(name: String) -> [String] { pattern.map { $0 == "*" ? name : $0 } }

    /// The type-erased entry of the table.
    package var entry: AnySetting {
        AnySetting(key: key, pattern: pattern, help: help, valid: kind.valid, choices: kind.choices, describedDefault: defaultText,
                   builtIn: { name in
                       let value = kind.encode(builtIn(name))
                       return value == .null ? nil : value
                   },
                   parse: { [kind] text in kind.encode(try kind.parse(text)) },
                   check: { [kind] json in
                       do { _ = try kind.decode(json); return nil } catch { return "\(error)" }
                   })
    }
}

/// A setting of the table with its value type erased: what validation, `config` and the
/// generated help and tables work from.
package struct AnySetting: Sendable {
    package let key: String
    /// The key's parts, `*` for `NAME`.
    package let pattern: [String]
    package let help: String
    package let valid: String
    /// The values shell completion offers; empty when they are too many to list.
    package let choices: [String]
    package let describedDefault: String?
    /// The built-in value as stored, for the `NAME` given; `nil` when there is none.
    package let builtIn: @Sendable (_ name: String) -> JSONValue?
    /// The stored form of `config set` text.
    package let parse: @Sendable (String) throws -> JSONValue
    /// Why a value in the file is refused; `nil` when it is valid.
    package let check: @Sendable (JSONValue) -> String?

    /// Whether `path` is this key, with a name for each `NAME`.
    package func matches(_ path: [String]) -> Bool {
        pattern.count == path.count && startsWith(path)
    }

    /// Whether the key begins with `path`, such as a group (`privacy`, `endpoints.primary`).
    package func startsWith(_ path: [String]) -> Bool {
        pattern.count >= path.count && zip(pattern, path).allSatisfy { $0 == "*" ? !$1.isEmpty : $0 == $1 }
    }

    /// The name `path` gives the first `NAME` of the key, or "" when it has none.
    package func name(in path: [String]) -> String {
        zip(pattern, path).first { $0.0 == "*" }?.1 ?? ""
    }

    /// The built-in value as `config get` prints it, or "none".
    package var defaultText: String {
        if let describedDefault { return describedDefault }
        guard let value = builtIn("") else { return "none" }
        if case .array(let items) = value, items.isEmpty { return "none" }
        return value.compactText
    }
}

extension Double {
    /// Up to eight significant digits and no trailing `.0`: `0.01`, `20000000`, `300000000`.
    ///
    /// Not `String(format:)`: every command that reads the settings makes these texts, and
    /// Foundation's formatter costs a trigger about a third of a millisecond on its first call.
    package var shortText: String {
        guard isFinite else { return description }
        if self == rounded(), abs(self) < 1e15 { return String(Int64(self)) }
        let scale = pow(10, 7 - log10(abs(self)).rounded(.down))
        let text = ((self * scale).rounded(.toNearestOrEven) / scale).description
        return text.hasSuffix(".0") ? String(text.dropLast(2)) : text
    }
}

extension JSONValue {
    /// One line: a string as it is, a list as `a, b`, anything else as JSON.
    package var compactText: String {
        switch self {
        case .string(let text): return text
        case .array(let items): return items.map(\.compactText).joined(separator: ", ")
        default: return prettyPrinted()
        }
    }
}

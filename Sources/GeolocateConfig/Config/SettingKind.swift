import Foundation
import GeolocateModel

/// How values of one type are read from what a person types, checked in the file, and stored.
///
/// `parse` reads `config set` text, where a duration needs its unit; `decode` reads the file,
/// where a bare number of a duration is milliseconds, as Mosaic stores them (the one unit rule,
/// REFERENCE "Configuration").
package struct SettingKind<Value: Sendable>: Sendable {
    /// The values taken, for help, tables and messages: "a duration above 0, such as 30s".
    package let valid: String
    package let parse: @Sendable (String) throws -> Value
    package let decode: @Sendable (JSONValue) throws -> Value
    /// The stored form; `.null` is "not set" and removes the key.
    package let encode: @Sendable (Value) -> JSONValue
    /// The values to offer when the set is small (shell completion); empty otherwise.
    package var choices: [String] = []
}

extension SettingKind {
    /// A value stored as the text it is typed as, such as a mode or a URL.
    package static func text(_ valid: String, parse: @escaping @Sendable (String) throws -> Value,
                             format: @escaping @Sendable (Value) -> String) -> SettingKind {
        SettingKind(valid: valid, parse: parse, decode: { json in
            // A number or true where text belongs (`"mqttVersion": 5`): the value may be right,
            // its JSON type is not, and saying only the valid values would leave that unsaid.
            guard case .string(let text) = json else { throw GeolocateError.usage("must be \(valid), written as a JSON string (in quotes)") }
            return try parse(text)
        }, encode: { .string(format($0)) })
    }

    /// The same values, or not set (`nil`, no built-in value).
    package var optional: SettingKind<Value?> {
        SettingKind<Value?>(valid: valid, parse: { try parse($0) },
                            decode: { json in json == .null ? nil : try decode(json) },
                            encode: { $0.map(encode) ?? .null }, choices: choices)
    }
}

extension SettingKind where Value == Int64 {
    /// Milliseconds within `range`, written with a unit (`1500ms`, `2s`, `30m`, `2h`, `10d`);
    /// `examples` ("such as 1500ms or 2s") end the valid values, which quote `range` itself.
    package static func duration(_ range: ClosedRange<Int64>, examples: String) -> SettingKind {
        let valid = DurationText.describe(range) + examples
        return SettingKind(valid: valid, parse: { text in
            // A negative value is told the range when it starts above 0, where "use 0 or more"
            // would be wrong advice; the other mistakes keep their own hints.
            guard !(text.hasPrefix("-") && range.lowerBound > 0) else { throw GeolocateError.usage("invalid duration '\(text)' (use \(valid))") }
            let milliseconds = try DurationText.milliseconds(text, bareUnit: .refused)
            guard range.contains(milliseconds) else { throw GeolocateError.usage("invalid duration '\(text)' (use \(valid))") }
            return milliseconds
        }, decode: { json in
            switch json {
            case .string(let text):
                // Text needs its unit, as on the command line; only a JSON number is milliseconds.
                if let milliseconds = try? DurationText.milliseconds(text, bareUnit: .refused), range.contains(milliseconds) {
                    return milliseconds
                }
            case .number(let number) where isWhole(number, in: range): return Int64(number)
            default: break
            }
            throw GeolocateError.usage("must be \(valid)")
        }, encode: { .string(DurationText.format($0)) })
    }

    /// Whole milliseconds within `range`, stored as a number: the unit is in the key's name
    /// (Mosaic's `triggerActionQueryTimeout`), so a bare number is milliseconds here.
    package static func milliseconds(_ range: ClosedRange<Int64>) -> SettingKind {
        let valid = "whole milliseconds from \(range.lowerBound) to \(range.upperBound), or a duration such as 1500ms or 2s"
        return SettingKind(valid: valid, parse: { text in
            let milliseconds: Int64? = Int64(text) ?? (Double(text) == nil ? try? DurationText.milliseconds(text, bareUnit: .refused) : nil)
            guard let milliseconds, range.contains(milliseconds) else { throw GeolocateError.usage("invalid value '\(text)' (use \(valid))") }
            return milliseconds
        }, decode: { json in
            guard case .number(let number) = json, isWhole(number, in: range) else {
                throw GeolocateError.usage("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return Int64(number)
        }, encode: { .number(Double($0)) })
    }
}

extension SettingKind where Value == Int64? {
    /// A duration above 0, or `off` (`nil`).
    package static var durationOrOff: SettingKind {
        let duration = SettingKind<Int64>.duration(1...DurationText.maximumMilliseconds, examples: "such as 30m or 6h, or off")
        return SettingKind(valid: duration.valid, parse: { $0 == "off" ? nil : try duration.parse($0) },
                           decode: { $0 == .string("off") ? nil : try duration.decode($0) },
                           encode: { $0.map(duration.encode) ?? .string("off") })
    }
}

extension SettingKind where Value == Int {
    /// A whole number within `range`, such as a count of records.
    package static func integer(_ range: ClosedRange<Int64>) -> SettingKind {
        let valid = "a whole number from \(range.lowerBound) to \(range.upperBound)"
        return SettingKind(valid: valid, parse: { text in
            guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
                throw GeolocateError.usage("invalid value '\(text)' (use \(valid))")
            }
            return Int(value)
        }, decode: { json in
            guard case .number(let number) = json, isWhole(number, in: range) else {
                throw GeolocateError.usage("must be \(valid), not \(json.prettyPrinted())")
            }
            return Int(number)
        }, encode: { .number(Double($0)) })
    }
}

extension SettingKind where Value == Double {
    /// Metres within `range`: a radius beyond the Earth's half circumference (20,000 km)
    /// means nothing, and overflows what uses it.
    package static func metres(_ range: ClosedRange<Double>) -> SettingKind { number(range, unit: "metres") }

    /// A decimal number of `unit` within `range`, such as metres per second or dB-Hz.
    package static func number(_ range: ClosedRange<Double>, unit: String) -> SettingKind {
        let valid = "\(unit) from \(range.lowerBound.shortText) to \(range.upperBound.shortText)"
        return SettingKind(valid: valid, parse: { text in
            guard NumberText.isDecimal(text), let number = Double(text), range.contains(number) else {
                throw GeolocateError.usage("invalid value '\(text)' (use \(valid))")
            }
            return number
        }, decode: { json in
            guard case .number(let number) = json, range.contains(number) else { throw GeolocateError.usage("must be \(valid)") }
            return number
        }, encode: { .number($0) })
    }
}

extension SettingKind where Value == Bool {
    package static var boolean: SettingKind {
        SettingKind(valid: "true or false", parse: { text in
            switch text.lowercased() {
            case "true", "yes", "on", "1": return true
            case "false", "no", "off", "0": return false
            default: throw GeolocateError.usage("invalid value '\(text)' (use true or false)")
            }
        }, decode: { json in
            guard case .bool(let on) = json else { throw GeolocateError.usage("must be true or false") }
            return on
        }, encode: { .bool($0) }, choices: ["true", "false"])
    }
}

extension SettingKind where Value == String {
    /// An http or https URL; never quoted with its credentials.
    package static var url: SettingKind {
        .text("an http or https URL", parse: { text in
            guard ConfigStore.isHTTPURL(text) else {
                throw GeolocateError.usage("invalid URL '\(ConfigStore.redactedURL(text))' (use http://HOST[:PORT]/PATH or https://...)")
            }
            return text
        }, format: { $0 })
    }

    /// An endpoint's URL: http or https, or an MQTT broker and topic.
    package static var endpointURL: SettingKind {
        .text("an http(s) URL, or mqtt://HOST[:PORT]/TOPIC or mqtts://...", parse: { text in
            if ConfigStore.isHTTPURL(text) { return text }
            guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }), try MQTTBroker.address(of: text) != nil else {
                throw GeolocateError.usage("invalid URL '\(ConfigStore.redactedURL(text))' (use http://HOST[:PORT]/PATH, https://..., mqtt://HOST[:PORT]/TOPIC or mqtts://...)")
            }
            return text
        }, format: { $0 })
    }

    /// Text without control characters, such as a user name.
    package static var plainText: SettingKind {
        .text("text without control characters", parse: { text in
            guard !text.isEmpty, PlainText.isPlain(text) else {
                throw GeolocateError.usage("the value must be text without control characters")
            }
            return text
        }, format: { $0 })
    }

    /// A TCTI (the TSS2 transport to a TPM): one of the TCTIs Debian ships, then `:` and its
    /// configuration. Never a library path: the TCTI loader would load any library named.
    package static var tcti: SettingKind {
        .text("device:PATH, swtpm:…, mssim:… or tabrmd:…", parse: { text in
            let name = text.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            guard ["device", "swtpm", "mssim", "tabrmd"].contains(name), PlainText.isPlain(text) else {
                throw GeolocateError.usage("the value must be a TCTI: device:/dev/tpmrm0, swtpm:host=HOST,port=PORT, mssim:… or tabrmd:…")
            }
            return text
        }, format: { $0 })
    }

    /// A password: text without control characters, or `file:/PATH` naming the file that
    /// holds it (`SecretFile`).
    package static var secretText: SettingKind {
        .text("text without control characters, or file:/PATH", parse: { text in
            if let problem = SecretFile.problem(in: text) { throw GeolocateError.usage(problem) }
            return try plainText.parse(text)
        }, format: { $0 })
    }

    /// OwnTracks' tracker id: one to three letters or digits, as its apps show them.
    package static var trackerID: SettingKind {
        .text("one to three letters or digits, such as JD", parse: { text in
            guard (1...3).contains(text.count), text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw GeolocateError.usage("invalid tid '\(text)' (use one to three letters or digits, such as JD)")
            }
            return text
        }, format: { $0 })
    }

    /// An HTTP header value: no control characters (a CR from a CRLF token file would split
    /// the request), never echoed in messages since it is a secret.
    package static var headerValue: SettingKind {
        .text("a header value without control characters, or file:/PATH", parse: { text in
            if let problem = SecretFile.problem(in: text) { throw GeolocateError.usage(problem) }
            let bad = text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }
            if bad {
                throw GeolocateError.usage("a header value cannot hold control characters such as CR or LF (was it read from a file with CRLF line ends?)")
            }
            return text
        }, format: { $0 })
    }

    /// Two capital letters, as ISO 3166-1 alpha-2 codes are.
    package static var countryCode: SettingKind {
        .text("two letters, such as XB", parse: { text in
            let code = text.uppercased()
            guard code.utf8.count == 2, code.utf8.allSatisfy({ (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }) else {
                throw GeolocateError.usage("invalid country code '\(text)' (use two letters, such as XB)")
            }
            return code
        }, format: { $0 })
    }
}

extension SettingKind where Value == String {
    /// A file's path, as typed; a relative path is taken from the working directory.
    package static var path: SettingKind {
        .text("a file's path", parse: { text in
            guard !text.isEmpty, !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw GeolocateError.usage("invalid path '\(text)' (no control characters)")
            }
            return text
        }, format: { $0 })
    }

    /// The name of an endpoint (`endpoints.NAME`); whether one is configured by that name is
    /// checked when it is used, as `--endpoint` is.
    package static var endpointName: SettingKind {
        .text("an endpoint name (\(plainNameRule))", parse: { text in
            guard isPlainName(text) else { throw GeolocateError.usage("'\(text)' is not an endpoint name (\(plainNameRule))") }
            return text
        }, format: { $0 })
    }
}

extension SettingKind where Value == [String] {
    /// ISO 3166-1 alpha-2 codes, as a list.
    package static var countryList: SettingKind {
        let code = SettingKind<String>.countryCode
        return SettingKind(valid: "a list of two-letter country codes, such as IE, FR", parse: { text in
            let codes = try ListText.items(text).map(code.parse)
            guard !codes.isEmpty else { throw GeolocateError.usage("invalid list '\(text)' (use two-letter country codes, such as IE,FR)") }
            return codes
        }, decode: { json in
            guard let names = json.strings, case .array(let items) = json, names.count == items.count, !names.isEmpty else {
                throw GeolocateError.usage("must be a list of country codes such as [\"IE\", \"FR\"]")
            }
            return try names.map(code.parse)
        }, encode: { .array($0.map { .string($0) }) })
    }
}

extension SettingKind where Value == [String] {
    /// A list of action names (`endpoints.NAME.actions`): `login`, `track` for track records…
    package static var actionList: SettingKind {
        @Sendable func checked(_ names: [String]) throws -> [String] {
            guard !names.isEmpty else { throw GeolocateError.usage("must name at least one action, such as login,track (unset it for all)") }
            if let bad = names.first(where: { !isPlainName($0) }) {
                throw GeolocateError.usage("invalid action name '\(bad)' (\(plainNameRule))")
            }
            return names
        }
        return SettingKind(valid: "a list of action names, such as login,transaction (track: track records)", parse: { text in
            try checked(try ListText.items(text))
        }, decode: { json in
            guard let names = json.strings, case .array(let items) = json, names.count == items.count else {
                throw GeolocateError.usage("must be a list of action names such as [\"login\", \"track\"]")
            }
            return try checked(names)
        }, encode: { .array($0.map { .string($0) }) })
    }
}

extension SettingKind where Value == [DistrustedSignal] {
    /// A list of signal names (`policy.distrust`); `none` or an empty list for none.
    package static var signalList: SettingKind {
        let names = DistrustedSignal.allCases.map(\.rawValue)
        let valid = "a list of \(names.joined(separator: ", ")) (none or empty for none)"
        @Sendable func parse(_ items: [String]) throws -> [DistrustedSignal] {
            var signals: [DistrustedSignal] = []
            for item in items == ["none"] ? [] : items {
                guard let signal = DistrustedSignal(rawValue: item) else {
                    let hint = item == "none" ? " (none stands alone)" : Suggestion.didYouMean(item, among: names)
                    throw GeolocateError.usage("unknown signal '\(item)'\(hint) (valid: \(names.joined(separator: ", ")), or none alone)")
                }
                if !signals.contains(signal) { signals.append(signal) }
            }
            return signals
        }
        return SettingKind(valid: valid, parse: { text in
            let items = try ListText.items(text)
            // An empty value (an unset shell variable) must not turn the gate off by accident.
            guard !items.isEmpty || text.trimmingCharacters(in: .whitespaces) == "[]" else {
                throw GeolocateError.usage("an empty list turns the gate off; say none for that, or name signals such as jumped,spoofingSuspected")
            }
            return try parse(items)
        }, decode: { json in
            guard let names = json.strings, case .array(let items) = json, names.count == items.count else {
                throw GeolocateError.usage("must be a list such as [\"jumped\", \"spoofingSuspected\"]")
            }
            return try parse(names)
        }, encode: { .array($0.map { .string($0.rawValue) }) })
    }
}

extension SettingKind where Value == [Permission] {
    package static var permissions: SettingKind {
        SettingKind(valid: "a list of fine, coarse (none or empty for none)", parse: Permission.parseList, decode: { json in
            guard let names = json.strings, case .array(let items) = json, names.count == items.count else {
                throw GeolocateError.usage("must be a list such as [\"fine\"]")
            }
            return try Permission.parseList(names.joined(separator: ","))
        }, encode: { .array($0.map { .string($0.rawValue) }) }, choices: ["fine", "coarse", "fine,coarse", "none"])
    }
}

extension SettingKind where Value == LocationAttributes {
    /// The fields a location object may carry, by name.
    package static var attributeList: SettingKind {
        let valid = "a list of " + LocationAttributes.names.map(\.name).joined(separator: ", ")
        return SettingKind(valid: valid, parse: { try LocationAttributes(parsingNames: try ListText.items($0)) }, decode: { json in
            guard let names = json.strings, case .array(let items) = json, names.count == items.count else {
                throw GeolocateError.usage("must be a list of field names such as [\"countryCode\", \"city\"]")
            }
            return try LocationAttributes(parsingNames: names)
        }, encode: { attributes in
            .array(LocationAttributes.names.filter { $0.name != "coordinates" && attributes.contains($0.attributes) }.map { .string($0.name) })
        })
    }
}

extension SettingKind where Value == CollectionMode {
    /// A mode as stored: any but `default`, which only a flag can ask for.
    package static var mode: SettingKind {
        var kind = SettingKind.text("disabled, force-current, force-last-known or last-known:N", parse: { text in
            let mode = try CollectionMode(parsing: text)
            if mode == .default {
                throw GeolocateError.usage("'default' cannot be stored as a mode (valid: disabled, force-current, force-last-known, last-known:N)")
            }
            return mode
        }, format: \.description)
        kind.choices = CollectionMode.spellings.filter { $0 != "default" }
        return kind
    }
}

extension SettingKind where Value == SourceSpecifier {
    package static var source: SettingKind {
        .text("gpsd, gpsd://HOST:PORT or nmea:FILE", parse: SourceSpecifier.init(parsing:),
              format: { $0 == .defaultGPSD ? "gpsd" : $0.description })
    }
}

extension SettingKind where Value: RawRepresentable & CaseIterable & Sendable, Value.RawValue == String {
    /// One of the cases, by raw value; `normalize` spells typed text as the raw values are.
    package static func choice(normalize: @escaping @Sendable (String) -> String = { $0 }) -> SettingKind {
        let valid = Value.allCases.map(\.rawValue).joined(separator: ", ")
        var kind = SettingKind.text("one of \(valid)", parse: { text in
            guard let value = Value(rawValue: normalize(text)) else {
                throw GeolocateError.usage("invalid value '\(text)'\(Suggestion.didYouMean(normalize(text), among: Value.allCases.map(\.rawValue))) (valid: \(valid))")
            }
            return value
        }, format: \.rawValue)
        kind.choices = Value.allCases.map(\.rawValue)
        return kind
    }
}

/// Whether `number` is a whole number within `range` (so converting it cannot trap).
package func isWhole(_ number: Double, in range: ClosedRange<Int64>) -> Bool {
    number.isFinite && number.rounded() == number && number >= Double(range.lowerBound) && number <= Double(range.upperBound)
}

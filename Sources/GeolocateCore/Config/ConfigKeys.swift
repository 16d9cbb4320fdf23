import Foundation

/// The keys a configuration file may hold, each with how its value is checked (SPEC §7).
///
/// A `*` segment matches any name, as in `actions.*.mode`. Adding a setting means adding a
/// row here and a field to `Settings`.
public enum ConfigKeys {
    /// What kind of value a key takes.
    package enum Kind {
        case permissions, mode, duration, source, boolean
        case url, text, endpointFormat, durationOrOff, precision, countryCode, attributeList
        /// A duration above zero: a timeout, a retention or an interval of 0 would make every
        /// request fail or every record expire.
        case positiveDuration
        /// An HTTP header value: no control characters (a CR from a CRLF token file would
        /// split the request), never echoed in messages since it is a secret.
        case headerValue
        /// A whole number within the range, such as a count of records.
        case integer(ClosedRange<Int64>)
        /// A whole number of milliseconds within the range; `config set` also takes `2s`.
        case milliseconds(ClosedRange<Int64>)
        /// A query timeout: a duration from 1 ms to `Defaults.maximumQueryTimeoutMilliseconds`,
        /// as `triggerActionQueryTimeout` takes, so no action can block a login for days.
        case queryTimeout
        /// A distance in metres within the range: a radius or threshold beyond the Earth's
        /// half circumference (20,000 km) means nothing, and overflows what uses it.
        case metres(ClosedRange<Double>)
    }

    struct Spec {
        let pattern: [String]
        let kind: Kind
        let help: String
    }

    static let all: [Spec] = [
        Spec(pattern: ["permissions"], kind: .permissions,
             help: "granted location permissions: fine, coarse, none (list)"),
        Spec(pattern: ["defaultInterval"], kind: .mode,
             help: "mode for actions without a default (built-in force-current)"),
        Spec(pattern: ["triggerActionQueryTimeout"], kind: .milliseconds(1...Defaults.maximumQueryTimeoutMilliseconds),
             help: "query timeout in milliseconds, 1 to 600000 (built-in 1500)"),
        Spec(pattern: ["lastKnownMaxAge"], kind: .duration,
             help: "the oldest last known location reported after a timeout or an unavailable source, such as 30m (built-in unlimited)"),
        Spec(pattern: ["currentMaxAge"], kind: .duration,
             help: "how old a fix gpsd holds may be and still count as current (built-in 2s)"),
        Spec(pattern: ["actions", "*", "mode"], kind: .mode, help: "collection mode for action NAME"),
        Spec(pattern: ["actions", "*", "timeout"], kind: .queryTimeout, help: "query timeout for action NAME, 1ms to 10m"),
        Spec(pattern: ["actions", "*", "lastKnownMaxAge"], kind: .duration,
             help: "lastKnownMaxAge for action NAME"),
        Spec(pattern: ["source"], kind: .source, help: "gpsd, gpsd://HOST:PORT or nmea:FILE (built-in gpsd)"),
        Spec(pattern: ["spool", "maxRetention"], kind: .positiveDuration,
             help: "records older than this are expired from the spool, never sent (built-in 10d)"),
        Spec(pattern: ["spool", "maxRecords"], kind: .integer(1...1_000_000_000),
             help: "the spool keeps at most this many records, expiring the oldest, 1 to 1000000000 (built-in 1000000)"),
        Spec(pattern: ["visits", "enabled"], kind: .boolean, help: "detect stays for location_context (built-in true)"),
        Spec(pattern: ["visits", "radius"], kind: .metres(1...20_000_000),
             help: "metres a stay stays within, 1 to 20000000 (built-in 200)"),
        Spec(pattern: ["visits", "minDuration"], kind: .positiveDuration, help: "how long a stay lasts before it is a visit (built-in 10m)"),
        Spec(pattern: ["endpoints", "*", "url"], kind: .url, help: "where flush POSTs records for endpoint NAME (http or https)"),
        Spec(pattern: ["endpoints", "*", "headers", "*"], kind: .headerValue, help: "a header sent to endpoint NAME (shown redacted)"),
        Spec(pattern: ["endpoints", "*", "format"], kind: .endpointFormat,
             help: "openlocate ({\"locations\":[...]}, built-in), mosaic-ndjson, or mosaic (one record per request)"),
        Spec(pattern: ["endpoints", "*", "batchSize"], kind: .integer(1...100_000), help: "records per request, 1 to 100000 (built-in 500)"),
        Spec(pattern: ["endpoints", "*", "timeout"], kind: .positiveDuration, help: "request timeout (built-in 10s)"),
        Spec(pattern: ["transmissionInterval"], kind: .durationOrOff,
             help: "how often track runs a flush (built-in 6h; off)"),
        Spec(pattern: ["privacy", "precision"], kind: .precision,
             help: "how much records tell: NONE, COUNTRY, DISTRICT, CITY, STREET, STREET_NUMBER or GPS_LOCATION (built-in GPS_LOCATION)"),
        Spec(pattern: ["privacy", "accuracyThreshold"], kind: .metres(0.01...20_000_000),
             help: "metres of accuracy a fix needs for its country code to be reported, 0.01 to 20000000 (built-in 50)"),
        Spec(pattern: ["privacy", "countryCodeReplacement"], kind: .countryCode,
             help: "reported instead of a country code from a less accurate fix (built-in XB)"),
        Spec(pattern: ["privacy", "locationAttributeFilter"], kind: .attributeList,
             help: "the fields the location object may carry (list; built-in all)"),
        Spec(pattern: ["geocoder", "url"], kind: .url,
             help: "a Nominatim server for street and number (/reverse is appended; built-in none)"),
        Spec(pattern: ["geocoder", "minInterval"], kind: .duration,
             help: "at most one geocoder request this often (built-in 60s)"),
        Spec(pattern: ["geocoder", "timeout"], kind: .positiveDuration, help: "geocoder request timeout (built-in 2s)"),
    ] + RecordFields.keys.map { field in
        Spec(pattern: ["fields", field.name], kind: .boolean, help: "records carry \(field.name) (built-in true)")
    }

    /// The kinds of value keys take, for the fuzz target.
    package static var allKinds: [Kind] { all.map(\.kind) }

    /// The valid key patterns, for error messages.
    public static var validKeys: String { all.map { $0.pattern.joined(separator: ".").replacingOccurrences(of: "*", with: "NAME") }.joined(separator: ", ") }

    /// Every key with its meaning, one per line, for `--help`.
    public static var summary: String {
        all.map { "  \($0.pattern.joined(separator: ".").replacingOccurrences(of: "*", with: "NAME")): \($0.help)" }
            .joined(separator: "\n")
    }

    static func spec(for path: [String]) -> Spec? {
        all.first { spec in
            spec.pattern.count == path.count
                && zip(spec.pattern, path).allSatisfy { pattern, part in pattern == "*" ? !part.isEmpty : pattern == part }
        }
    }

    /// Whether `path` names a group of keys, such as `endpoints.primary` or `privacy`: the
    /// start of at least one key pattern.
    static func isGroup(_ path: [String]) -> Bool {
        all.contains { spec in
            spec.pattern.count > path.count
                && zip(spec.pattern, path).allSatisfy { pattern, part in pattern == "*" ? !part.isEmpty : pattern == part }
        }
    }

    /// Parses the text given to `config set` into the value stored, or explains the refusal.
    package static func parse(_ text: String, as kind: Kind) throws -> JSONValue {
        switch kind {
        case .permissions:
            return .array(try Permission.parseList(text).map { .string($0.rawValue) })
        case .mode:
            return .string(try checkedMode(text))
        case .integer(let range):
            guard let value = Int64(text.trimmingCharacters(in: .whitespaces)), range.contains(value) else {
                throw GeolocateError.usage("invalid value '\(text)' (use a whole number from \(range.lowerBound) to \(range.upperBound))")
            }
            return .number(Double(value))
        case .milliseconds(let range):
            let value: Int64
            if let whole = Int64(text) {
                value = whole
            } else if Double(text) != nil {
                value = -1  // a bare number with a fraction: not a whole number of milliseconds
            } else {
                value = (try? DurationText.milliseconds(text, bareUnit: .milliseconds)) ?? -1
            }
            guard range.contains(value) else {
                throw GeolocateError.usage("invalid value '\(text)' (use whole milliseconds from \(range.lowerBound) to \(range.upperBound), or a duration such as 1500ms or 2s)")
            }
            return .number(Double(value))
        case .duration:
            _ = try DurationText.milliseconds(text, bareUnit: .milliseconds)
            return .string(text)
        case .queryTimeout:
            guard isQueryTimeout(text) else {
                throw GeolocateError.usage("invalid timeout '\(text)' (use a duration from 1ms to 10m, such as 1500ms or 2s)")
            }
            return .string(text)
        case .positiveDuration:
            try checkedPositive(text)
            return .string(text)
        case .source:
            _ = try SourceSpecifier(parsing: text)
            return .string(text)
        case .boolean:
            switch text.lowercased() {
            case "true", "yes", "on", "1": return .bool(true)
            case "false", "no", "off", "0": return .bool(false)
            default: throw GeolocateError.usage("invalid value '\(text)' (use true or false)")
            }
        case .metres(let range):
            guard NumberText.isDecimal(text), let number = Double(text), range.contains(number) else {
                throw GeolocateError.usage("invalid value '\(text)' (use metres from \(range.lowerBound.shortText) to \(range.upperBound.shortText))")
            }
            return .number(number)
        case .url:
            guard isHTTPURL(text) else {
                throw GeolocateError.usage("invalid URL '\(ConfigStore.redactedURL(text))' (use http://HOST[:PORT]/PATH or https://...)")
            }
            return .string(text)
        case .text:
            return .string(text)
        case .headerValue:
            if let problem = headerValueProblem(text) { throw GeolocateError.usage(problem) }
            return .string(text)
        case .endpointFormat:
            guard EndpointFormat(rawValue: text) != nil else {
                throw GeolocateError.usage("invalid format '\(text)' (use \(EndpointFormat.validValues))")
            }
            return .string(text)
        case .durationOrOff:
            if text != "off" { try checkedPositive(text) }
            return .string(text)
        case .precision:
            guard LocationPrecision(rawValue: text.uppercased()) != nil else {
                throw GeolocateError.usage("invalid precision '\(text)' (valid: \(LocationPrecision.validValues))")
            }
            return .string(text.uppercased())
        case .countryCode:
            guard isCountryCode(text.uppercased()) else {
                throw GeolocateError.usage("invalid country code '\(text)' (use two letters, such as XB)")
            }
            return .string(text.uppercased())
        case .attributeList:
            let names = try listItems(text)
            _ = try LocationAttributes(parsingNames: names)
            return .array(names.map { .string($0) })
        }
    }

    /// The items of a list value: a JSON array of strings, or a comma list.
    static func listItems(_ text: String) throws -> [String] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("[") else {
            return trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        guard let array = try? JSONSerialization.jsonObject(with: Data(trimmed.utf8)) as? [String] else {
            throw GeolocateError.usage("invalid list '\(text)' (use a comma list or a JSON array of strings)")
        }
        return array
    }

    private static func isCountryCode(_ text: String) -> Bool {
        text.utf8.count == 2 && text.utf8.allSatisfy { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
    }

    /// Whether `text` is an http or https URL with a host, a port from 1 to 65535 if any, and
    /// no spaces or control characters.
    package static func isHTTPURL(_ text: String) -> Bool {
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }),
              let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else { return false }
        return url.port.map { (1...65_535).contains($0) } ?? true
    }

    /// Checks a value read from the file; returns the reason when it is invalid.
    /// Why `text` cannot be an HTTP header value, without quoting it (it is a secret).
    static func headerValueProblem(_ text: String) -> String? {
        let bad = text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }
        return bad ? "a header value cannot hold control characters such as CR or LF (was it read from a file with CRLF line ends?)" : nil
    }

    /// Whether `text` is a query timeout: a duration from 1 ms to 10 minutes.
    static func isQueryTimeout(_ text: String) -> Bool {
        guard let value = try? DurationText.milliseconds(text, bareUnit: .milliseconds) else { return false }
        return (1...Defaults.maximumQueryTimeoutMilliseconds).contains(value)
    }

    /// Whether `name` is an HTTP header name (an RFC 9110 token).
    static func isHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "!#$%&'*+-.^_`|~".unicodeScalars.contains($0)
        }
    }

    /// A duration above zero.
    /// - Throws: `GeolocateError.usage` naming what is wrong.
    static func checkedPositive(_ text: String) throws {
        guard try DurationText.milliseconds(text, bareUnit: .milliseconds) > 0 else {
            throw GeolocateError.usage("invalid duration '\(text)' (use a duration above 0, such as 500ms, 30s or 10d)")
        }
    }

    static func problem(with value: JSONValue, as kind: Kind) -> String? {
        do {
            switch (kind, value) {
            case (.permissions, .array):
                guard let names = value.strings else { return "permissions must be a list of strings" }
                _ = try Permission.parseList(names.joined(separator: ","))
            case (.mode, .string(let text)):
                _ = try checkedMode(text)
            case (.integer(let range), .number(let number)), (.milliseconds(let range), .number(let number)):
                guard ConfigKeys.isWhole(number, in: range) else {
                    return "must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(JSONValue.number(number).prettyPrinted())"
                }
            case (.duration, .string(let text)):
                _ = try DurationText.milliseconds(text, bareUnit: .milliseconds)
            case (.duration, .number(let number)):
                guard ConfigKeys.isWhole(number, in: 0...DurationText.maximumMilliseconds) else {
                    return "must be a duration such as \"1500ms\" or \"2s\", or whole milliseconds up to \(DurationText.maximumMilliseconds)"
                }
            case (.queryTimeout, .string(let text)):
                guard isQueryTimeout(text) else { return "must be a duration from 1ms to 10m" }
            case (.queryTimeout, .number(let number)):
                guard ConfigKeys.isWhole(number, in: 1...Defaults.maximumQueryTimeoutMilliseconds) else { return "must be a duration from 1ms to 10m" }
            case (.queryTimeout, _): return "must be a duration from 1ms to 10m, such as \"1500ms\""
            case (.positiveDuration, .string(let text)):
                try checkedPositive(text)
            case (.positiveDuration, .number(let number)):
                guard ConfigKeys.isWhole(number, in: 1...DurationText.maximumMilliseconds) else {
                    return "must be a duration above 0 such as \"1500ms\" or \"2s\", or whole milliseconds from 1 to \(DurationText.maximumMilliseconds)"
                }
            case (.source, .string(let text)):
                _ = try SourceSpecifier(parsing: text)
            case (.boolean, .bool):
                break
            case (.metres(let range), .number(let number)):
                guard range.contains(number) else { return "must be metres from \(range.lowerBound.shortText) to \(range.upperBound.shortText)" }
            case (.url, .string(let text)):
                guard isHTTPURL(text) else { return "must be an http or https URL" }
            case (.text, .string):
                break
            case (.headerValue, .string(let text)):
                if let problem = headerValueProblem(text) { return problem }
            case (.endpointFormat, .string(let text)):
                guard EndpointFormat(rawValue: text) != nil else { return "must be \(EndpointFormat.validValues)" }
            case (.durationOrOff, .string(let text)):
                if text != "off" { try checkedPositive(text) }
            case (.precision, .string(let text)):
                guard LocationPrecision(rawValue: text) != nil else { return "must be one of \(LocationPrecision.validValues)" }
            case (.countryCode, .string(let text)):
                guard isCountryCode(text) else { return "must be two capital letters, such as \"XB\"" }
            case (.attributeList, .array):
                guard let names = value.strings else { return "must be a list of field names" }
                _ = try LocationAttributes(parsingNames: names)
            case (.precision, _): return "must be one of \(LocationPrecision.validValues)"
            case (.countryCode, _): return "must be two capital letters, such as \"XB\""
            case (.attributeList, _): return "must be a list of field names such as [\"countryCode\", \"city\"]"
            case (.url, _): return "must be an http or https URL"
            case (.text, _), (.headerValue, _): return "must be a string"
            case (.endpointFormat, _): return "must be \(EndpointFormat.validValues)"
            case (.durationOrOff, _): return "must be a duration such as \"6h\", or \"off\""
            case (.boolean, _): return "must be true or false"
            case (.metres(let range), _): return "must be metres from \(range.lowerBound.shortText) to \(range.upperBound.shortText)"
            case (.permissions, _): return "must be a list such as [\"fine\"]"
            case (.mode, _): return "must be a mode string (\(CollectionMode.validValues))"
            case (.integer(let range), _), (.milliseconds(let range), _):
                return "must be a whole number from \(range.lowerBound) to \(range.upperBound)"
            case (.duration, _): return "must be a duration such as \"1500ms\" or \"2s\""
            case (.positiveDuration, _): return "must be a duration above 0 such as \"1500ms\" or \"2s\""
            case (.source, _): return "must be a string such as \"gpsd\""
            }
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// Whether `number` is a whole number within `range` (so converting it cannot trap).
    static func isWhole(_ number: Double, in range: ClosedRange<Int64>) -> Bool {
        number.isFinite && number.rounded() == number
            && number >= Double(range.lowerBound) && number <= Double(range.upperBound)
    }

    private static func checkedMode(_ text: String) throws -> String {
        let mode = try CollectionMode(parsing: text)
        if mode == .default {
            throw GeolocateError.usage("'default' cannot be stored as a mode (valid: disabled, force-current, force-last-known, last-known:N)")
        }
        return text
    }
}

/// Where locations come from: `gpsd`, `gpsd://HOST:PORT` or `nmea:FILE`.
public enum SourceSpecifier: Sendable, Equatable, CustomStringConvertible {
    case gpsd(host: String, port: Int)
    case nmea(path: String)

    public static let defaultGPSD = SourceSpecifier.gpsd(host: "localhost", port: 2947)

    public init(parsing text: String) throws {
        if text == "gpsd" {
            self = .defaultGPSD
        } else if text.hasPrefix("gpsd://") {
            // HOST, HOST:PORT, or an IPv6 address in brackets: [::1] or [::1]:2947.
            let rest = text.dropFirst("gpsd://".count)
            var host = rest[...]
            var portText: Substring?
            if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                host = rest[rest.index(after: rest.startIndex)..<close]
                let after = rest[rest.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":") else { throw SourceSpecifier.invalid(text) }
                    portText = after.dropFirst()
                }
            } else if let colon = rest.firstIndex(of: ":") {
                host = rest[..<colon]
                portText = rest[rest.index(after: colon)...]
            }
            guard !host.isEmpty, !host.contains("/"), portText.map({ !$0.contains(":") }) ?? true,
                  let port = portText.map({ Int($0) }) ?? 2947, (1...65535).contains(port)
            else { throw SourceSpecifier.invalid(text) }
            self = .gpsd(host: String(host), port: port)
        } else if text.hasPrefix("nmea:"), text.count > 5 {
            self = .nmea(path: String(text.dropFirst(5)))
        } else {
            throw SourceSpecifier.invalid(text)
        }
    }

    private static func invalid(_ text: String) -> GeolocateError {
        .usage("invalid source '\(text)' (use gpsd, gpsd://HOST:PORT, gpsd://[IPv6]:PORT or nmea:FILE)")
    }

    public var description: String {
        switch self {
        case .gpsd(let host, let port): return host.contains(":") ? "gpsd://[\(host)]:\(port)" : "gpsd://\(host):\(port)"
        case .nmea(let path): return "nmea:\(path)"
        }
    }
}

private extension Double {
    /// Up to eight significant digits and no trailing `.0`: `0.01`, `20000000`.
    var shortText: String { String(format: "%.8g", self) }
}

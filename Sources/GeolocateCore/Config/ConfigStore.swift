import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The configuration file: loading with validation, dotted-key edits and atomic writes.
///
/// A file that does not parse or does not validate is reported with its line and never
/// written over; `reset` keeps a `.bak` copy of whatever was there.
public struct ConfigStore {
    public let path: String

    public init(path: String) { self.path = path }

    /// The document in the file (`{}` when there is no file), validated.
    /// - Throws: `GeolocateError.configuration` naming the file, line and reason (exit 78).
    public func load() throws -> JSONValue {
        guard FileManager.default.fileExists(atPath: path) else { return .object([:]) }
        // A FIFO or device would block the read or stream forever (Foundation also calls that
        // "permission denied"); a directory is refused below with its own cause.
        var info = stat()
        if stat(path, &info) == 0, (info.st_mode & S_IFMT) != S_IFREG, (info.st_mode & S_IFMT) != S_IFDIR {
            throw GeolocateError.configuration(file: path, line: nil, reason: "cannot read the file: not a regular file")
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw GeolocateError.configuration(file: path, line: nil, reason: "cannot read the file: \(ErrorText.plain(error))")
        }
        return try ConfigStore.document(parsing: data, file: path)
    }

    /// The validated document in `data`, the contents of `file`.
    /// - Throws: `GeolocateError.configuration` naming `file`, the line and the reason.
    package static func document(parsing data: Data, file path: String) throws -> JSONValue {
        let document: JSONValue
        do {
            document = try JSONValue(parsing: data)
        } catch {
            throw GeolocateError.configuration(file: path, line: ConfigStore.syntaxErrorLine(in: data),
                                               reason: "not valid JSON")
        }
        guard case .object = document else {
            throw GeolocateError.configuration(file: path, line: 1, reason: "the top level must be a JSON object")
        }
        for (keyPath, value) in document.leaves() {
            let key = keyPath.joined(separator: ".")
            guard let spec = ConfigKeys.spec(for: keyPath) else {
                throw GeolocateError.configuration(file: path, line: ConfigStore.line(of: keyPath, in: data),
                                                   reason: "unknown key '\(key)' (valid: \(ConfigKeys.validKeys))")
            }
            if let problem = ConfigKeys.problem(with: value, as: spec.kind) ?? ConfigStore.keyProblem(keyPath, spec: spec) {
                throw GeolocateError.configuration(file: path, line: ConfigStore.line(of: keyPath, in: data),
                                                   reason: "\(key): \(problem)")
            }
        }
        return document
    }

    /// The typed settings of the file.
    public func settings() throws -> Settings { Settings(try load()) }

    /// Validates and stores `value` at `key`.
    /// - Throws: `.usage` (64) for an unknown key or refused value, `.configuration` (78) when
    ///   the existing file is corrupt.
    public func set(_ key: String, to value: String) throws {
        let keyPath = try ConfigStore.checkedKey(key)
        guard let spec = ConfigKeys.spec(for: keyPath) else { throw ConfigStore.unknownKey(key) }
        if let problem = ConfigStore.keyProblem(keyPath, spec: spec) { throw GeolocateError.usage("\(key): \(problem)") }
        let parsed: JSONValue
        do {
            parsed = try ConfigKeys.parse(value, as: spec.kind)
        } catch let error as GeolocateError {
            throw GeolocateError.usage("\(key): \(error)")
        }
        var document = try load()
        // Header names are case-insensitive: `authorization` replaces `Authorization`, so the
        // request never carries both.
        if case .headerValue = spec.kind, case .object(let headers)? = document[Array(keyPath.dropLast())] {
            for name in headers.keys where name != keyPath.last && name.lowercased() == keyPath.last?.lowercased() {
                document.set(Array(keyPath.dropLast()) + [name], to: nil)
            }
        }
        document.set(keyPath, to: parsed)
        try save(document)
    }

    /// Headers geolocate sets itself: a fixed `Idempotency-Key` would make a deduplicating
    /// server drop every batch after the first, and the others would corrupt the request.
    static let reservedHeaderNames: Set<String> = ["idempotency-key", "content-type", "content-length", "host",
                                                   "transfer-encoding", "connection"]

    /// What is wrong with the name parts of a key: an endpoint or action name that commands
    /// could not use, or a header name that is no token or is one geolocate sets.
    static func keyProblem(_ keyPath: [String], spec: ConfigKeys.Spec) -> String? {
        for (pattern, name) in zip(spec.pattern.dropLast(), keyPath.dropLast()) where pattern == "*" {
            if keyPath.first == "actions", (try? Trigger.validate(action: name)) == nil {
                return "'\(name)' is not an action name (letters, digits, _ - or ., up to 64 characters)"
            }
            if keyPath.first == "endpoints", !isPlainName(name) {
                return "'\(name)' is not an endpoint name (letters, digits, _ - or ., up to 64 characters)"
            }
        }
        guard case .headerValue = spec.kind, let name = keyPath.last else { return nil }
        if !ConfigKeys.isHeaderName(name) {
            return "'\(name)' is not an HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)"
        }
        if reservedHeaderNames.contains(name.lowercased()) {
            return "\(name) is set by geolocate itself and cannot be configured"
        }
        return nil
    }

    /// Removes `key` (and objects it leaves empty). A key may also name a group of keys,
    /// such as `endpoints.primary` or `privacy`, which is removed whole.
    public func unset(_ key: String) throws {
        let keyPath = try ConfigStore.checkedKey(key)
        guard ConfigKeys.spec(for: keyPath) != nil || ConfigKeys.isGroup(keyPath) else {
            throw ConfigStore.unknownKey(key)
        }
        var document = try load()
        document.set(keyPath, to: nil)
        try save(document)
    }

    /// The value at `key` in the file, or the built-in default; `nil` when neither exists.
    ///
    /// A group such as `privacy` is an object of its keys' built-in defaults with the file's
    /// values over them, so it shows what the commands use.
    public func get(_ key: String, showingSecrets: Bool = false) throws -> JSONValue? {
        let keyPath = try ConfigStore.checkedKey(key)
        let document = try load()
        let stored = (showingSecrets ? document : ConfigStore.redacted(document))[keyPath]
        if ConfigKeys.isGroup(keyPath) {
            var group = JSONValue.object([:])
            for spec in ConfigKeys.all where spec.pattern.count > keyPath.count && Array(spec.pattern.prefix(keyPath.count)) == keyPath {
                if let value = Settings.builtInDefault(for: spec.pattern) { group.set(Array(spec.pattern.dropFirst(keyPath.count)), to: value) }
            }
            for (path, value) in stored?.leaves() ?? [] { group.set(path, to: value) }
            if case .object(let members) = group, members.isEmpty { return stored }
            return group
        }
        if let stored { return stored }
        guard ConfigKeys.spec(for: keyPath) != nil || keyPath.first == "actions" else {
            throw ConfigStore.unknownKey(key)
        }
        return Settings.builtInDefault(for: keyPath)
    }

    /// Moves any existing file to `PATH.bak` and starts from an empty configuration.
    /// - Returns: the backup path when there was a file.
    @discardableResult
    public func reset() throws -> String? {
        var backup: String?
        if FileManager.default.fileExists(atPath: path) {
            let target = path + ".bak"
            guard rename(path, target) == 0 else {
                throw GeolocateError.configuration(file: path, line: nil, reason: "cannot move the file to \(target): \(ErrorText.posix(errno))")
            }
            backup = target
        }
        try save(.object([:]))
        return backup
    }

    /// Query parameter names that carry credentials when a name contains one of them (SPEC §5).
    static let credentialParameterNames = ["key", "token", "secret", "password", "passwd", "pwd", "sig", "auth", "credential",
                                           "session", "jwt", "code", "access", "bearer"]

    /// `text` with a URL's user, password, fragment and credential-like query values
    /// (`api_key`, `token`, `sig`, `jwt`, `code`, …) replaced by `***`; text that is no URL is
    /// `***` when it holds an `@`.
    public static func redactedURL(_ text: String) -> String {
        guard var url = URLComponents(string: text) else { return text.contains("@") ? "***" : text }
        var changed = false
        if url.user != nil || url.password != nil {
            url.user = url.user.map { _ in "***" }
            url.password = url.password.map { _ in "***" }
            changed = true
        }
        // A fragment never reaches the server, but OAuth puts access tokens there.
        if url.fragment != nil {
            url.fragment = "***"
            changed = true
        }
        if let items = url.queryItems {
            url.queryItems = items.map { item in
                let name = item.name.lowercased()
                guard item.value != nil, credentialParameterNames.contains(where: name.contains) else { return item }
                changed = true
                return URLQueryItem(name: item.name, value: "***")
            }
        }
        return changed ? (url.string ?? "***") : text
    }

    /// The document with header values and URL credentials replaced by `***`.
    public static func redacted(_ document: JSONValue) -> JSONValue {
        var copy = document
        for (keyPath, value) in document.leaves() {
            guard case .string(let text) = value else { continue }
            if keyPath.count >= 2 && keyPath[keyPath.count - 2] == "headers" {
                copy.set(keyPath, to: .string("***"))
            } else if redactedURL(text) != text {
                copy.set(keyPath, to: .string(redactedURL(text)))
            }
        }
        return copy
    }

    private func save(_ document: JSONValue) throws {
        do {
            try AtomicFile.write(Data((document.prettyPrinted() + "\n").utf8), to: path, permissions: 0o600)
        } catch {
            throw GeolocateError.configuration(file: path, line: nil, reason: "cannot write: \(ErrorText.plain(error))")
        }
    }

    private static func checkedKey(_ key: String) throws -> [String] {
        let parts = key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !key.isEmpty, parts.allSatisfy({ !$0.isEmpty }) else {
            throw GeolocateError.usage("invalid key '\(key)' (use a dotted key such as actions.checkout.mode)")
        }
        return parts
    }

    private static func unknownKey(_ key: String) -> GeolocateError {
        .usage("unknown key '\(key)' (valid: \(ConfigKeys.validKeys))")
    }

    /// The line of a JSON syntax error. `JSONDecoder` does not say where; `JSONSerialization`
    /// names the character offset ("around character 29"), which is turned into a line.
    private static func syntaxErrorLine(in data: Data) -> Int? {
        do {
            _ = try JSONSerialization.jsonObject(with: data)
            return nil
        } catch {
            let text = "\(error)"
            guard let range = text.range(of: "character ") else { return nil }
            guard let offset = Int(text[range.upperBound...].prefix { $0.isNumber }) else { return nil }
            return data.prefix(offset).reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
        }
    }

    /// The line where a key path's last key appears, found by walking its keys in order.
    private static func line(of keyPath: [String], in data: Data) -> Int? {
        let text = String(decoding: data, as: UTF8.self)
        var searchFrom = text.startIndex
        var found: String.Index?
        for key in keyPath {
            guard let range = text.range(of: "\"\(key)\"", range: searchFrom..<text.endIndex) else { return nil }
            found = range.lowerBound
            searchFrom = range.upperBound
        }
        guard let found else { return nil }
        return text[..<found].reduce(1) { $1 == "\n" ? $0 + 1 : $0 }
    }
}

/// The typed view of a validated configuration document.
public struct Settings: Sendable, Equatable {
    /// Per-action overrides.
    public struct Action: Sendable, Equatable {
        public var mode: CollectionMode?
        public var timeoutMilliseconds: Int64?
        /// `actions.NAME.lastKnownMaxAge`; `nil` when not set.
        public var lastKnownMaxAgeMilliseconds: Int64?

        public init(mode: CollectionMode? = nil, timeoutMilliseconds: Int64? = nil,
                    lastKnownMaxAgeMilliseconds: Int64? = nil) {
            self.mode = mode
            self.timeoutMilliseconds = timeoutMilliseconds
            self.lastKnownMaxAgeMilliseconds = lastKnownMaxAgeMilliseconds
        }
    }

    public var permissions: [Permission]?
    public var defaultInterval: CollectionMode?
    public var queryTimeoutMilliseconds: Int64?
    public var currentMaxAgeMilliseconds: Int64?
    /// `lastKnownMaxAge`: the oldest last-known fallback; `nil` (not set) is unlimited.
    public var lastKnownMaxAgeMilliseconds: Int64?
    public var actions: [String: Action] = [:]
    public var source: SourceSpecifier?
    /// `fields.*`: what records carry.
    public var fields = RecordFields()
    public var spoolMaxRetentionMilliseconds: Int64?
    public var spoolMaxRecords: Int?
    public var visitsEnabled: Bool?
    public var visitRadiusMetres: Double?
    public var visitMinDurationMilliseconds: Int64?
    /// `endpoints.NAME.*`, sorted by name.
    public var endpoints: [Endpoint] = []
    /// `transmissionInterval`: `.some(nil)` is `off`.
    public var transmissionIntervalMilliseconds: Int64??
    /// `privacy.*`, with the built-in defaults for keys not set.
    public var privacy = PrivacyPolicy()
    /// `geocoder.url`: the Nominatim server for streets; `nil` when there is none.
    public var geocoderURL: String?
    public var geocoderMinIntervalMilliseconds: Int64?
    public var geocoderTimeoutMilliseconds: Int64?

    public init() {}

    /// Reads a document that `ConfigStore.load` validated; anything invalid is left unset.
    public init(_ document: JSONValue) {
        if let names = document[["permissions"]]?.strings { permissions = names.compactMap(Permission.init(rawValue:)) }
        defaultInterval = Settings.mode(document[["defaultInterval"]])
        if case .number(let value)? = document[["triggerActionQueryTimeout"]] { queryTimeoutMilliseconds = Int64(value) }
        currentMaxAgeMilliseconds = Settings.duration(document[["currentMaxAge"]])
        lastKnownMaxAgeMilliseconds = Settings.duration(document[["lastKnownMaxAge"]])
        if case .object(let actions)? = document[["actions"]] {
            for (name, value) in actions {
                self.actions[name] = Action(mode: Settings.mode(value[["mode"]]),
                                            timeoutMilliseconds: Settings.duration(value[["timeout"]]),
                                            lastKnownMaxAgeMilliseconds: Settings.duration(value[["lastKnownMaxAge"]]))
            }
        }
        if case .string(let text)? = document[["source"]] { source = try? SourceSpecifier(parsing: text) }
        for field in RecordFields.keys {
            if case .bool(let on)? = document[["fields", field.name]] { fields[keyPath: field.flag] = on }
        }
        spoolMaxRetentionMilliseconds = Settings.duration(document[["spool", "maxRetention"]])
        if case .number(let value)? = document[["spool", "maxRecords"]] { spoolMaxRecords = Int(value) }
        if case .bool(let on)? = document[["visits", "enabled"]] { visitsEnabled = on }
        if case .number(let value)? = document[["visits", "radius"]] { visitRadiusMetres = value }
        visitMinDurationMilliseconds = Settings.duration(document[["visits", "minDuration"]])
        if case .object(let endpoints)? = document[["endpoints"]] {
            self.endpoints = endpoints.keys.sorted().compactMap { name in
                guard let value = endpoints[name], case .string(let url)? = value[["url"]] else { return nil }
                var endpoint = Endpoint(name: name, url: url)
                if case .object(let headers)? = value[["headers"]] {
                    for (header, text) in headers { if case .string(let text) = text { endpoint.headers[header] = text } }
                }
                if case .string(let format)? = value[["format"]], let parsed = EndpointFormat(rawValue: format) {
                    endpoint.format = parsed
                }
                if case .number(let size)? = value[["batchSize"]] { endpoint.batchSize = max(1, Int(size)) }
                if let timeout = Settings.duration(value[["timeout"]]) { endpoint.timeoutMilliseconds = timeout }
                return endpoint
            }
        }
        if case .string("off")? = document[["transmissionInterval"]] {
            transmissionIntervalMilliseconds = .some(nil)
        } else if let interval = Settings.duration(document[["transmissionInterval"]]) {
            transmissionIntervalMilliseconds = interval
        }
        if case .string(let text)? = document[["privacy", "precision"]], let precision = LocationPrecision(rawValue: text) {
            privacy.precision = precision
        }
        if case .number(let metres)? = document[["privacy", "accuracyThreshold"]] { privacy.accuracyThresholdMetres = metres }
        if case .string(let code)? = document[["privacy", "countryCodeReplacement"]] { privacy.countryCodeReplacement = code }
        if let names = document[["privacy", "locationAttributeFilter"]]?.strings {
            privacy.attributeFilter = try? LocationAttributes(parsingNames: names)
        }
        if case .string(let url)? = document[["geocoder", "url"]] { geocoderURL = url }
        geocoderMinIntervalMilliseconds = Settings.duration(document[["geocoder", "minInterval"]])
        geocoderTimeoutMilliseconds = Settings.duration(document[["geocoder", "timeout"]])
    }

    /// The permissions in force: `--permission`, else config `permissions`, else none.
    public func permissionsInForce(flag: Permission??) -> [Permission] {
        if let flag { return flag.map { [$0] } ?? [] }
        return permissions ?? []
    }

    /// The source: `--source`/`--replay`, else `$GEOLOCATE_SOURCE`, else config `source`, else gpsd.
    public func resolvedSource(flag: SourceSpecifier?, environment: [String: String]) throws -> SourceSpecifier {
        if let flag { return flag }
        if let text = environment["GEOLOCATE_SOURCE"], !text.isEmpty {
            return try SourceSpecifier(parsing: text)
        }
        return source ?? .defaultGPSD
    }

    /// `spool.maxRetention` and `spool.maxRecords`, else the built-in 10 days and 1,000,000.
    public var spoolLimits: SpoolLimits {
        SpoolLimits(maxRetentionMilliseconds: spoolMaxRetentionMilliseconds ?? Defaults.spoolMaxRetentionMilliseconds,
                    maxRecords: spoolMaxRecords ?? Defaults.spoolMaxRecords)
    }

    /// `visits.*`: stay detection unless `visits.enabled` is false.
    public var visitSettings: VisitSettings? {
        guard visitsEnabled ?? true else { return nil }
        return VisitSettings(radiusMetres: visitRadiusMetres ?? Defaults.visitRadiusMetres,
                             minDurationMilliseconds: visitMinDurationMilliseconds ?? Defaults.visitMinDurationMilliseconds)
    }

    /// Built-in values shown by `config get` for keys the file does not set.
    static func builtInDefault(for keyPath: [String]) -> JSONValue? {
        switch keyPath {
        case ["permissions"]: return .array([])
        case ["defaultInterval"]: return .string("force-current")
        case ["triggerActionQueryTimeout"]: return .number(Double(Defaults.queryTimeoutMilliseconds))
        case ["currentMaxAge"]: return .string(DurationText.format(Defaults.currentMaxAgeMilliseconds))
        case ["source"]: return .string("gpsd")
        case ["spool", "maxRetention"]: return .string(DurationText.format(Defaults.spoolMaxRetentionMilliseconds))
        case ["spool", "maxRecords"]: return .number(Double(Defaults.spoolMaxRecords))
        case ["visits", "enabled"]: return .bool(true)
        case ["transmissionInterval"]: return .string(DurationText.format(Defaults.transmissionIntervalMilliseconds))
        case ["visits", "radius"]: return .number(Defaults.visitRadiusMetres)
        case ["visits", "minDuration"]: return .string(DurationText.format(Defaults.visitMinDurationMilliseconds))
        case ["privacy", "precision"]: return .string(LocationPrecision.gpsLocation.rawValue)
        case ["privacy", "accuracyThreshold"]: return .number(PrivacyPolicy.defaultAccuracyThresholdMetres)
        case ["privacy", "countryCodeReplacement"]: return .string(PrivacyPolicy.defaultCountryCodeReplacement)
        case ["privacy", "locationAttributeFilter"]: return .array(LocationAttributes.names.filter { $0.name != "coordinates" }.map { .string($0.name) })
        case ["geocoder", "minInterval"]: return .string(DurationText.format(StreetGeocoder.defaultMinIntervalMilliseconds))
        case ["geocoder", "timeout"]: return .string(DurationText.format(StreetGeocoder.defaultTimeoutMilliseconds))
        default:
            if keyPath.count == 2, keyPath[0] == "fields", RecordFields.keys.contains(where: { $0.name == keyPath[1] }) {
                return .bool(true)
            }
            if keyPath.count == 3, keyPath[0] == "actions", keyPath[2] == "mode" {
                return .string((CollectionMode.builtInDefault(for: keyPath[1]) ?? .default).description)
            }
            if keyPath.count == 3, keyPath[0] == "endpoints" {
                switch keyPath[2] {
                case "format": return .string(EndpointFormat.openlocate.rawValue)
                case "batchSize": return .number(Double(Endpoint.defaultBatchSize))
                case "timeout": return .string(DurationText.format(Endpoint.defaultTimeoutMilliseconds))
                default: break
                }
            }
            return nil
        }
    }

    private static func mode(_ value: JSONValue?) -> CollectionMode? {
        guard case .string(let text)? = value else { return nil }
        return try? CollectionMode(parsing: text)
    }

    private static func duration(_ value: JSONValue?) -> Int64? {
        switch value {
        case .string(let text)?: return try? DurationText.milliseconds(text, bareUnit: .milliseconds)
        case .number(let number)?:
            return ConfigKeys.isWhole(number, in: 0...DurationText.maximumMilliseconds) ? Int64(number) : nil
        default: return nil
        }
    }
}

/// Built-in defaults (SPEC §3).
public enum Defaults {
    public static let version = "0.1.0"
    public static let queryTimeoutMilliseconds: Int64 = 1500
    /// The longest query timeout anywhere (flag or config): 10 minutes.
    public static let maximumQueryTimeoutMilliseconds: Int64 = 600_000
    public static let currentMaxAgeMilliseconds: Int64 = 2000
    /// gpsd answers `?POLL;` in about 1 ms; one that takes a second is treated as unavailable.
    public static let gpsdResponseTimeoutMilliseconds: Int64 = 1000
    public static let spoolMaxRetentionMilliseconds: Int64 = 10 * 86_400_000
    public static let spoolMaxRecords = 1_000_000
    /// OpenLocate's visit monitoring: within 200 m for at least 10 minutes.
    public static let visitRadiusMetres = 200.0
    public static let visitMinDurationMilliseconds: Int64 = 600_000
    /// `track --transmit-interval`, config `transmissionInterval`.
    public static let transmissionIntervalMilliseconds: Int64 = 6 * 3_600_000
}

import Foundation
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// The configuration file: loading with validation, dotted-key edits and atomic writes.
///
/// A file that does not parse or does not validate is reported with its line and never
/// written over; `reset` keeps a `.bak` copy of whatever was there.
package struct ConfigStore {
    package let path: String
    /// Where a relative path in the file is taken from: the file's own directory unless
    /// given (system mode's `/etc/geolocate`, where the units read a credential copy).
    package let relativeTo: String?

    package init(path: String, relativeTo: String? = nil) {
        self.path = path
        self.relativeTo = relativeTo
    }

    /// A configuration of every key and a hundred endpoints is a few tens of KiB.
    package static let maximumBytes = 1024 * 1024

    /// The document in the file (`{}` when there is no file), validated.
    /// - Throws: `GeolocateError.configuration` naming the file, line and reason (exit 78).
    package func load() throws -> JSONValue {
        // A FIFO or device in its place would block the read or stream forever.
        let data: Data
        switch BoundedFile.read(path, limit: ConfigStore.maximumBytes) {
        case .success(let contents): data = contents
        case .failure(.missing): return .object([:])
        case .failure(.unreadable(let code)) where code == EACCES || code == EPERM:
            throw GeolocateError.permissionDenied(path: path, writing: false, uid: geteuid())
        case .failure(.unreadable(let code)):
            throw GeolocateError.configuration(file: path, line: nil, reason: "cannot read the file: \(ErrorText.posix(code))")
        case .failure(let failure):
            throw GeolocateError.configuration(file: path, line: nil, reason: "cannot read the file: it \(failure.text(limit: ConfigStore.maximumBytes))")
        }
        return try ConfigStore.document(parsing: data, file: path)
    }

    /// The validated document in `data`, the contents of `file`.
    /// - Throws: `GeolocateError.configuration` naming `file`, the line and the reason.
    package static func document(parsing data: Data, file path: String) throws -> JSONValue {
        let document: JSONValue
        // A key given twice is refused: Foundation keeps one copy while jq and Python keep the
        // other, so a privacy or permission setting would mean one thing to the tool that
        // checked it and another here.
        do {
            document = try JSONValue(parsing: data)
        } catch let malformed as JSONScanner.Malformed {
            throw GeolocateError.configuration(file: path, line: malformed.line(in: data), reason: malformed.reason(in: data))
        } catch let duplicate as JSONScanner.DuplicateKey {
            throw GeolocateError.configuration(file: path, line: duplicate.line(in: data), reason: duplicate.reason)
        }
        guard case .object = document else {
            throw GeolocateError.configuration(file: path, line: 1, reason: "the top level must be a JSON object")
        }
        for (keyPath, value) in document.leaves() {
            let key = keyPath.joined(separator: ".")
            guard let setting = ConfigKey.setting(for: keyPath) else {
                throw GeolocateError.configuration(file: path, line: ConfigStore.line(of: keyPath, in: data),
                                                   reason: "unknown key '\(key)'\(ConfigKey.suggestion(for: keyPath))")
            }
            if let problem = setting.check(value) ?? ConfigStore.keyProblem(keyPath, setting: setting) {
                throw GeolocateError.configuration(file: path, line: ConfigStore.line(of: keyPath, in: data),
                                                   reason: "\(key): \(problem)")
            }
        }
        return document
    }

    /// The typed settings of the file.
    /// `policy.onError` as the file spells it, even when another value in the file is invalid
    /// (a login hook that cannot use the file still follows the administrator's choice);
    /// `nil` when the file cannot be read, does not set it, or has a key twice.
    package func errorPolicy() -> ErrorPolicy? {
        // A key given twice may mean allow to one reader and deny to another: none is taken.
        guard let data = BoundedFile.contents(path, limit: ConfigStore.maximumBytes),
              case .object(let root)? = try? JSONValue(parsing: data), case .object(let policy)? = root["policy"],
              case .string(let text)? = policy["onError"] else { return nil }
        return ErrorPolicy(rawValue: text)
    }

    package func settings() throws -> Settings {
        var settings = Settings(try load())
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        settings.baseDirectory = relativeTo ?? (absolute as NSString).deletingLastPathComponent
        return settings
    }

    /// `config get`: the value at `key` (the file's, else the built-in default) as printed:
    /// a string as it is, lists and objects as JSON, secrets redacted unless `showingSecrets`.
    /// - Throws: `GeolocateError.valueNotSet` (exit 1) when there is no value; `get`'s errors.
    package func printed(_ key: String, showingSecrets: Bool) throws -> String {
        guard let value = try get(key, showingSecrets: showingSecrets) else { throw GeolocateError.valueNotSet(key: key) }
        return value.prettyPrinted()
    }

    /// Validates and stores `value` at `key`.
    /// - Throws: `.usage` (64) for an unknown key, a refused value or an endpoint whose URL and
    ///   format no flush could send (osmand over MQTT), `.configuration` (78) when the existing
    ///   file is corrupt or cannot be written, `.permissionDenied` (78) when this user may not
    ///   read or write it.
    package func set(_ key: String, to value: String) throws {
        let keyPath = try ConfigStore.checkedKey(key)
        guard let setting = ConfigKey.setting(for: keyPath) else { throw ConfigStore.unknownKey(key) }
        if let problem = ConfigStore.keyProblem(keyPath, setting: setting) { throw GeolocateError.usage("\(key): \(problem)") }
        let parsed: JSONValue
        do {
            parsed = try setting.parse(value)
        } catch let error as GeolocateError {
            throw GeolocateError.usage("\(key): \(error)")
        }
        var document = try load()
        // Header names are case-insensitive: `authorization` replaces `Authorization`, so the
        // request never carries both.
        if setting.key == ConfigKey.endpointHeader.key, case .object(let headers)? = document[Array(keyPath.dropLast())] {
            for name in headers.keys where name != keyPath.last && name.lowercased() == keyPath.last?.lowercased() {
                document.set(Array(keyPath.dropLast()) + [name], to: nil)
            }
        }
        document.set(keyPath, to: parsed)
        if keyPath.first == "endpoints", keyPath.count > 2,
           let problem = Settings(document).endpoints.first(where: { $0.name == keyPath[1] })?.formatProblem {
            throw GeolocateError.usage("\(key): endpoint \(keyPath[1]): \(problem)")
        }
        try save(document)
    }

    /// Headers geolocate sets itself: a fixed `Idempotency-Key` would make a deduplicating
    /// server drop every batch after the first, and the others would corrupt the request.
    package static let reservedHeaderNames: Set<String> = ["idempotency-key", "content-type", "content-length", "host",
                                                   "transfer-encoding", "connection"]

    /// What is wrong with the name parts of a key: an endpoint or action name that commands
    /// could not use, or a header name that is no token or is one geolocate sets.
    package static func keyProblem(_ keyPath: [String], setting: AnySetting) -> String? {
        for (pattern, name) in zip(setting.pattern.dropLast(), keyPath.dropLast()) where pattern == "*" {
            if keyPath.first == "actions", !isPlainName(name) {
                return "'\(name)' is not an action name (\(plainNameRule))"
            }
            if keyPath.first == "endpoints", !isPlainName(name) {
                return "'\(name)' is not an endpoint name (\(plainNameRule))"
            }
        }
        guard setting.key == ConfigKey.endpointHeader.key, let name = keyPath.last else { return nil }
        if name.contains(".") {
            return "header name '\(name)' has a dot, which separates the parts of a config key; headers with dots cannot be configured"
        }
        if !isHeaderName(name) {
            return "'\(name)' is not an HTTP header name (letters, digits and !#$%&'*+-^_`|~ only)"
        }
        if reservedHeaderNames.contains(name.lowercased()) {
            return "\(name) is set by geolocate itself and cannot be configured"
        }
        return nil
    }

    /// Whether `name` is an HTTP header name (an RFC 9110 token).
    package static func isHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "!#$%&'*+-.^_`|~".unicodeScalars.contains($0)
        }
    }

    /// Removes `key` (and objects it leaves empty). A key may also name a group of keys,
    /// such as `endpoints.primary` or `privacy`, which is removed whole.
    package func unset(_ key: String) throws {
        let keyPath = try ConfigStore.checkedKey(key)
        guard ConfigKey.setting(for: keyPath) != nil || ConfigKey.isGroup(keyPath) else {
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
    package func get(_ key: String, showingSecrets: Bool = false) throws -> JSONValue? {
        let keyPath = try ConfigStore.checkedKey(key)
        let document = try load()
        let stored = (showingSecrets ? document : ConfigStore.redacted(document))[keyPath]
        if ConfigKey.isGroup(keyPath) {
            var group = JSONValue.object([:])
            for setting in ConfigKey.all {
                let rest = Array(setting.pattern.dropFirst(keyPath.count))
                guard !rest.isEmpty, !rest.contains("*"), setting.startsWith(keyPath) else { continue }
                if let value = setting.builtIn(setting.name(in: keyPath)) { group.set(rest, to: value) }
            }
            for (path, value) in stored?.leaves() ?? [] { group.set(path, to: value) }
            if case .object(let members) = group, members.isEmpty { return stored }
            return group
        }
        if let stored { return stored }
        guard let setting = ConfigKey.setting(for: keyPath) else { throw ConfigStore.unknownKey(key) }
        return setting.builtIn(setting.name(in: keyPath))
    }

    /// The file's document with the built-in value of every key it does not set: the
    /// configuration the commands use. Keys with a `NAME` get theirs for each name in the file.
    package func effective() throws -> JSONValue {
        var document = JSONValue.object([:])
        let stored = try load()
        for setting in ConfigKey.all where !setting.pattern.contains("*") {
            if let value = setting.builtIn("") { document.set(setting.pattern, to: value) }
        }
        for group in ["actions", "endpoints"] {
            guard case .object(let members)? = stored[[group]] else { continue }
            for name in members.keys {
                if let value = try get("\(group).\(name)", showingSecrets: true) { document.set([group, name], to: value) }
            }
        }
        for (path, value) in stored.leaves() { document.set(path, to: value) }
        return document
    }

    /// Keeps any existing file as `FILE.bak` and starts from an empty configuration, written
    /// as `set` writes: through a symlink (the backup is then beside the link's target), with
    /// the old file's mode and owner.
    /// - Returns: the backup path when there was a file.
    @discardableResult
    package func reset() throws -> String? {
        let file: String
        do { file = try AtomicFile.linkTarget(of: path) } catch {
            throw GeolocateError.configuration(file: path, line: nil, reason: "cannot follow the symlink: \(ErrorText.plain(error))")
        }
        var backup: String?
        var info = stat()
        if lstat(file, &info) == 0 {
            let target = file + ".bak"
            // A second name for the old file, which the new one then replaces: the mode stays
            // for the new file to take. A file system without hard links gets a rename.
            unlink(target)
            guard link(file, target) == 0 || rename(file, target) == 0 else {
                throw GeolocateError.configuration(file: path, line: nil, reason: "cannot move the file to \(target): \(ErrorText.posix(errno))")
            }
            backup = target
        }
        try save(.object([:]))
        return backup
    }

    /// Query parameter names that carry credentials when a name contains one of them (SPEC §5).
    package static let credentialParameterNames = ["key", "token", "secret", "password", "passwd", "pwd", "sig", "auth", "credential",
                                           "session", "jwt", "code", "access", "bearer"]

    /// `text` with a URL's user, password, fragment and credential-like query values
    /// (`api_key`, `token`, `sig`, `jwt`, `code`, …) replaced by `***`; text that is no URL is
    /// `***` when it holds an `@`.
    package static func redactedURL(_ text: String) -> String {
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

    /// The keys of `document` holding an inline secret (a header value, a password, URL
    /// credentials), not a `file:` one, in dotted form.
    package static func inlineSecretKeys(_ document: JSONValue) -> [String] {
        document.leaves().compactMap { keyPath, value in
            guard case .string(let text) = value, SecretFile.path(in: text) == nil else { return nil }
            let secret = keyPath.count >= 2 && keyPath[keyPath.count - 2] == "headers" || keyPath.last == "password" || redactedURL(text) != text
            return secret ? keyPath.joined(separator: ".") : nil
        }.sorted()
    }

    /// The document with header values, passwords and URL credentials replaced by `***`.
    ///
    /// A `file:/PATH` value stays as it is: it names where the secret is, which is no secret.
    package static func redacted(_ document: JSONValue) -> JSONValue {
        var copy = document
        for (keyPath, value) in document.leaves() {
            guard case .string(let text) = value, SecretFile.path(in: text) == nil else { continue }
            if keyPath.count >= 2 && keyPath[keyPath.count - 2] == "headers" || keyPath.last == "password" {
                copy.set(keyPath, to: .string("***"))
            } else if redactedURL(text) != text {
                copy.set(keyPath, to: .string(redactedURL(text)))
            }
        }
        return copy
    }

    private func save(_ document: JSONValue) throws {
        do {
            // SPEC §13: a system config root makes is root:geolocate 0640, as the package's is,
            // so the services and a monitoring user in the group can read it.
            let serviceGroup = path == Paths.systemConfigFile && geteuid() == 0 ? getgrnam("geolocate")?.pointee.gr_gid : nil
            try AtomicFile.replace(Data((document.prettyPrinted() + "\n").utf8), at: path,
                                   newFilePermissions: serviceGroup == nil ? 0o600 : 0o640, newFileGroup: serviceGroup)
        } catch let error as POSIXError where error.code == .EACCES || error.code == .EPERM {
            throw GeolocateError.permissionDenied(path: path, writing: true, uid: geteuid())
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
        if let problem = dottedNameProblem(key.split(separator: ".").map(String.init)) { return .usage("\(key): \(problem)") }
        return .usage("unknown key '\(key)'\(ConfigKey.suggestion(for: key.split(separator: ".").map(String.init))) (geolocate config keys lists them)")
    }

    /// Why a key that matches no setting would match one if some of its parts were one name
    /// with dots (`endpoints.eu.west.url`, `endpoints.p.headers.X.Api.Key`): the dot rule,
    /// said instead of "unknown key".
    private static func dottedNameProblem(_ keyPath: [String]) -> String? {
        guard keyPath.count > 2 else { return nil }
        for start in 1..<keyPath.count - 1 {
            for end in start + 2...keyPath.count {
                let joined = Array(keyPath[..<start]) + [keyPath[start..<end].joined(separator: ".")] + Array(keyPath[end...])
                guard let setting = ConfigKey.setting(for: joined) else { continue }
                if let problem = keyProblem(joined, setting: setting) { return problem }
            }
        }
        return nil
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

/// Fixed values that are no setting (the settings' defaults are in `ConfigKey`).
package enum Defaults {
    package static let version = "0.1.0"
    /// The longest query timeout anywhere (flag or config): 10 minutes.
    package static let maximumQueryTimeoutMilliseconds: Int64 = 600_000
    /// The shortest timeout other than 0: anything shorter is a unit mistaken, not a wish.
    package static let minimumTimeoutMilliseconds: Int64 = 10
    /// gpsd answers `?POLL;` in about 1 ms; one that takes a second is treated as unavailable.
    package static let gpsdResponseTimeoutMilliseconds: Int64 = 1000
}

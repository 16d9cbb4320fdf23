import GeolocateModel

/// The typed view of a validated configuration document: each value read through its
/// `ConfigKey` setting, the built-in default where the file sets none.
///
/// `settings[ConfigKey.spoolMaxRecords]`, `settings[ConfigKey.actionMode, name: "login"]`; a
/// value set here is stored in the document as `config set` would store it.
package struct Settings: Sendable, Equatable {
    /// The document the values come from.
    package private(set) var document: JSONValue
    /// The directory of the file the document was read from: a relative path in it (such as
    /// `policy.zones`) is taken from there, never from the working directory, which is `/`
    /// under PAM (SPEC §10.2). `nil` for no file.
    package var baseDirectory: String?

    /// No file: every built-in default.
    package init() { document = .object([:]) }

    /// The settings of a document that `ConfigStore.load` validated.
    package init(_ document: JSONValue) { self.document = document }

    /// `path` as the file means it: relative ones from `baseDirectory`.
    package func resolvedPath(_ path: String) -> String {
        guard !path.hasPrefix("/"), let baseDirectory else { return path }
        return baseDirectory + "/" + path
    }

    package subscript<Value>(_ setting: Setting<Value>) -> Value {
        get { self[setting, name: ""] }
        set { self[setting, name: ""] = newValue }
    }

    /// The value of a key with `NAME` parts, such as `actions.NAME.mode`, for `name`.
    package subscript<Value>(_ setting: Setting<Value>, name name: String) -> Value {
        get {
            guard let stored = document[setting.path(name: name)], let value = try? setting.kind.decode(stored) else {
                return setting.builtInValue(for: name)
            }
            return value
        }
        set {
            let stored = setting.kind.encode(newValue)
            document.set(setting.path(name: name), to: stored == .null ? nil : stored)
        }
    }

    /// The names given to `group` in the file, such as the endpoint names under `endpoints`.
    package func names(under group: String) -> [String] {
        guard case .object(let members)? = document[[group]] else { return [] }
        return members.keys.sorted()
    }

    /// The permissions in force: `--permission` (`[]` for none), else config `permissions`.
    package func permissionsInForce(flag: [Permission]?) -> [Permission] {
        flag ?? self[ConfigKey.permissions]
    }

    /// The source: `--source`/`--replay`, else `$GEOLOCATE_SOURCE`, else config `source`, else gpsd.
    package func resolvedSource(flag: SourceSpecifier?, environment: [String: String]) throws -> SourceSpecifier {
        if let flag { return flag }
        if let text = environment["GEOLOCATE_SOURCE"], !text.isEmpty {
            return try SourceSpecifier(parsing: text)
        }
        return self[ConfigKey.source]
    }

    /// `fields.*`: what records carry.
    package var fields: RecordFields {
        get {
            var fields = RecordFields()
            for (setting, key) in zip(ConfigKey.fields, RecordFields.keys) { fields[keyPath: key.flag] = self[setting] }
            return fields
        }
        set {
            for (setting, key) in zip(ConfigKey.fields, RecordFields.keys) { self[setting] = newValue[keyPath: key.flag] }
        }
    }

    /// `spool.maxRetention` and `spool.maxRecords`.
    package var spoolLimits: SpoolLimits {
        SpoolLimits(maxRetentionMilliseconds: self[ConfigKey.spoolMaxRetention], maxRecords: self[ConfigKey.spoolMaxRecords],
                    keepDeliveredMilliseconds: self[ConfigKey.spoolKeepDelivered])
    }

    /// `visits.*`: stay detection unless `visits.enabled` is false.
    package var visitSettings: VisitSettings? {
        guard self[ConfigKey.visitsEnabled] else { return nil }
        return VisitSettings(radiusMetres: self[ConfigKey.visitsRadius], minDurationMilliseconds: self[ConfigKey.visitsMinDuration])
    }

    /// `privacy.*`.
    package var privacy: PrivacyPolicy {
        PrivacyPolicy(precision: self[ConfigKey.privacyPrecision],
                      accuracyThresholdMetres: self[ConfigKey.privacyAccuracyThreshold],
                      countryCodeReplacement: self[ConfigKey.privacyCountryCodeReplacement],
                      attributeFilter: self[ConfigKey.privacyLocationAttributeFilter])
    }

    /// `endpoints.NAME.*` of every endpoint with a URL, sorted by name.
    package var endpoints: [Endpoint] {
        names(under: "endpoints").compactMap { name in
            guard let url = self[ConfigKey.endpointURL, name: name] else { return nil }
            var headers: [String: String] = [:]
            if case .object(let stored)? = document[["endpoints", name, "headers"]] {
                for (header, value) in stored { if case .string(let text) = value { headers[header] = text } }
            }
            var endpoint = Endpoint(name: name, url: url, headers: headers, format: self[ConfigKey.endpointFormat, name: name],
                                    batchSize: self[ConfigKey.endpointBatchSize, name: name],
                                    timeoutMilliseconds: self[ConfigKey.endpointTimeout, name: name])
            endpoint.actions = self[ConfigKey.endpointActions, name: name]
            endpoint.mqtt.qos = self[ConfigKey.endpointQoS, name: name]
            endpoint.mqtt.version = self[ConfigKey.endpointMQTTVersion, name: name]
            endpoint.mqtt.messageExpiryMilliseconds = self[ConfigKey.endpointMessageExpiry, name: name]
            endpoint.mqtt.sessionExpiryMilliseconds = self[ConfigKey.endpointSessionExpiry, name: name]
            endpoint.mqtt.username = self[ConfigKey.endpointUsername, name: name]
            endpoint.mqtt.password = self[ConfigKey.endpointPassword, name: name]
            endpoint.tls = TLSFiles(caFile: self[ConfigKey.endpointCAFile, name: name].map(resolvedPath),
                                    certFile: self[ConfigKey.endpointCertFile, name: name].map(resolvedPath),
                                    keyFile: self[ConfigKey.endpointKeyFile, name: name].map(resolvedPath))
            return endpoint
        }
    }
}

import Foundation
import GeolocateModel

/// Every configuration key (SPEC §7), each defined once with its kind of value, built-in
/// default and meaning.
///
/// Validation, `config get`/`show --all`/`keys`, `config --help` and the REFERENCE table are
/// made from this table; `Settings` reads typed values through it.
package enum ConfigKey {
    package static let permissions = Setting<[Permission]>("permissions", .permissions, default: [],
                                            help: "the location permissions granted, as a list")
    package static let defaultInterval = Setting<CollectionMode>("defaultInterval", .mode, default: .forceCurrent,
                                                help: "the mode of actions with no mode of their own")
    package static let queryTimeout = Setting<Int64>("triggerActionQueryTimeout", .milliseconds(Defaults.minimumTimeoutMilliseconds...Defaults.maximumQueryTimeoutMilliseconds),
                                             default: 1500, help: "the query timeout in milliseconds")
    package static let lastKnownMaxAge = Setting<Int64?>("lastKnownMaxAge", anyDuration.optional, default: nil,
                                                help: "the oldest last known location reported after a timeout or an unavailable source (none: unlimited)")
    package static let currentMaxAge = Setting<Int64>("currentMaxAge", anyDuration, default: 2000,
                                              help: "how old a fix gpsd holds may be and still count as current")
    package static let actionMode = Setting<CollectionMode>("actions.NAME.mode", .mode,
                                           defaultForName: { CollectionMode.builtInDefault(for: $0) ?? .default },
                                           described: "per action, as above",
                                           help: "the mode of action NAME; default: force-current for login, register, transaction, checkout, password_reset, account_details_change, account_auth_change and credits_change, force-last-known for logout and withdraw, else defaultInterval")
    package static let actionTimeout = Setting<Int64?>("actions.NAME.timeout", queryTimeoutDuration.optional, default: nil,
                                              help: "the query timeout of action NAME")
    package static let actionLastKnownMaxAge = Setting<Int64?>("actions.NAME.lastKnownMaxAge", anyDuration.optional, default: nil,
                                                      help: "lastKnownMaxAge for action NAME")
    package static let actionEndpoint = Setting<String?>("actions.NAME.endpoint", SettingKind<String>.endpointName.optional, default: nil,
                                                 help: "trigger NAME also sends its record to this configured endpoint, as --endpoint does")
    package static let source = Setting<SourceSpecifier>("source", .source, default: .defaultGPSD, help: "where locations come from")
    package static let spoolMaxRetention = Setting<Int64>("spool.maxRetention", retention, default: 10 * 86_400_000,
                                                  help: "records older than this both since they were spooled and by their fix are expired, never sent")
    package static let spoolKeepDelivered = Setting<Int64>("spool.keepDelivered", anyDuration, default: 0,
                                                   help: "delivered records stay this long for geolocate export (0: deleted once every endpoint has them)")
    package static let spoolMaxRecords = Setting<Int>("spool.maxRecords", .integer(1...1_000_000_000), default: 1_000_000,
                                                help: "the spool keeps at most this many records, expiring the oldest")
    package static let visitsEnabled = Setting<Bool>("visits.enabled", .boolean, default: true, help: "detect stays for location_context")
    package static let visitsRadius = Setting<Double>("visits.radius", .metres(1...20_000_000), default: 200,
                                             help: "the metres a stay keeps within")
    package static let visitsMinDuration = Setting<Int64>("visits.minDuration", positiveDuration, default: 600_000,
                                                  help: "how long a stay lasts before it is a visit")
    package static let endpointURL = Setting<String?>("endpoints.NAME.url", SettingKind<String>.endpointURL.optional, default: nil,
                                            help: "where flush sends records for endpoint NAME: an http(s) URL, or mqtt://HOST[:PORT]/TOPIC or mqtts://... ({deviceId} in the topic is replaced)")
    package static let endpointHeader = Setting<String?>("endpoints.NAME.headers.NAME", SettingKind<String>.headerValue.optional, default: nil,
                                               help: "a header sent to endpoint NAME (shown redacted); file:/PATH reads the value from that file when sending")
    package static let endpointFormat = Setting<EndpointFormat>("endpoints.NAME.format", SettingKind<EndpointFormat>.choice(), default: .openlocate,
                                               help: "the body: openlocate ({\"locations\":[...]}), mosaic-ndjson, mosaic (one record per request), owntracks (one OwnTracks location message per record), osmand (Traccar's OsmAnd query, one request per record, HTTP only) or jwt (location tokens, one per line, signed when sent)")
    package static let endpointActions = Setting<[String]?>("endpoints.NAME.actions", SettingKind<[String]>.actionList.optional, default: nil,
                                                  help: "the actions whose records endpoint NAME receives, track for track records (none: all), so a risk server gets logins and a fleet server the track")
    package static let endpointBatchSize = Setting<Int>("endpoints.NAME.batchSize", .integer(1...100_000), default: 500,
                                                  help: "records per request")
    package static let endpointTimeout = Setting<Int64>("endpoints.NAME.timeout", timeout, default: 10_000,
                                                help: "the request timeout, the body included")
    package static let endpointQoS = Setting<Int>("endpoints.NAME.qos", .integer(0...2), default: 1,
                                            help: "MQTT: 0 at most once, 1 at least once, 2 exactly once (per connection)")
    package static let endpointMQTTVersion = Setting<MQTTVersion>("endpoints.NAME.mqttVersion", SettingKind<MQTTVersion>.choice(), default: .v5,
                                                        help: "MQTT: the protocol version, 5 or 3.1.1; a broker that refuses 5 gets 3.1.1 at once, and is remembered")
    package static let endpointMessageExpiry = Setting<Int64?>("endpoints.NAME.messageExpiry",
                                                         SettingKind<Int64>.duration(1_000...MQTTVersion.longestExpiryMilliseconds,
                                                                                     examples: "such as 10m or 1d").optional,
                                                         default: nil,
                                                         help: "MQTT 5: a broker drops a message not yet delivered to a subscriber after this (none: never)")
    package static let endpointSessionExpiry = Setting<Int64?>("endpoints.NAME.sessionExpiry",
                                                         SettingKind<Int64>.duration(0...MQTTVersion.longestExpiryMilliseconds,
                                                                                     examples: "such as 0, 5m or 1h").optional,
                                                         default: nil,
                                                         help: "MQTT 5: how long the broker keeps flush's session after a dropped connection, so messages in flight resume with their packet ids (none: 5m at QoS 2, else 0, a clean session)")
    package static let endpointUsername = Setting<String?>("endpoints.NAME.username", SettingKind<String>.plainText.optional, default: nil,
                                                 help: "MQTT: the user name")
    package static let endpointPassword = Setting<String?>("endpoints.NAME.password", SettingKind<String>.secretText.optional, default: nil,
                                                 help: "MQTT: the password (shown redacted); file:/PATH reads it from that file when sending")
    package static let endpointCAFile = Setting<String?>("endpoints.NAME.caFile", SettingKind<String>.path.optional, default: nil,
                                               help: "https and mqtts: the CA certificates (PEM) the server's certificate is checked against, instead of the system's (none: the system's)")
    package static let endpointCertFile = Setting<String?>("endpoints.NAME.certFile", SettingKind<String>.path.optional, default: nil,
                                                 help: "https and mqtts: this device's certificate (PEM), presented for mutual TLS; needs keyFile")
    package static let endpointKeyFile = Setting<String?>("endpoints.NAME.keyFile", SettingKind<String>.path.optional, default: nil,
                                                help: "https and mqtts: the private key (PEM, unencrypted) of certFile")
    package static let owntracksTrackerID = Setting<String?>("owntracks.tid", SettingKind<String>.trackerID.optional, default: nil,
                                                   help: "the tid of owntracks messages: the initials OwnTracks and Home Assistant show (none: left out)")
    package static let transmissionInterval = Setting<Int64?>("transmissionInterval", .durationOrOff, default: 6 * 3_600_000,
                                                     help: "how often track runs a flush")
    package static let privacyPrecision = Setting<LocationPrecision>("privacy.precision", SettingKind<LocationPrecision>.choice(normalize: { $0.uppercased() }),
                                                 default: .gpsLocation, help: "how much records tell")
    package static let privacyAccuracyThreshold = Setting<Double>("privacy.accuracyThreshold", .metres(0.01...20_000_000), default: 50,
                                                         help: "the metres of accuracy a fix needs for its country code to be reported")
    package static let privacyCountryCodeReplacement = Setting<String>("privacy.countryCodeReplacement", .countryCode, default: "XB",
                                                              help: "reported instead of a country code from a less accurate fix")
    package static let privacyLocationAttributeFilter = Setting<LocationAttributes>("privacy.locationAttributeFilter", .attributeList, default: .all,
                                                               help: "the fields the location object may carry")
    package static let geocoderURL = Setting<String?>("geocoder.url", SettingKind<String>.url.optional, default: nil,
                                            help: "a Nominatim server for street and number (/reverse is appended)")
    package static let geocoderMinInterval = Setting<Int64>("geocoder.minInterval", anyDuration, default: 60_000,
                                                    help: "at most one geocoder request this often")
    package static let geocoderTimeout = Setting<Int64>("geocoder.timeout", timeout, default: 2_000,
                                                help: "the geocoder request timeout")
    package static let geocoderCAFile = Setting<String?>("geocoder.caFile", SettingKind<String>.path.optional, default: nil,
                                               help: "an https geocoder.url: the CA certificates (PEM) its certificate is checked against, instead of the system's (none: the system's)")
    package static let signalsEnabled = Setting<Bool>("signals.enabled", .boolean, default: true,
                                              help: "records with a location carry signals (impossible travel, country change, spoofing, ...)")
    package static let signalsMaxSpeed = Setting<Double>("signals.maxSpeed", .number(1...300_000_000, unit: "metres per second"), default: 300,
                                                help: "travel faster than this between two reports, beyond their accuracies, is a jump (300: an airliner)")
    package static let signalsCountryWindow = Setting<Int64>("signals.countryWindow", positiveDuration, default: 86_400_000,
                                                     help: "a country change counts when the two reports are at most this far apart")
    package static let signalsStaleAfter = Setting<Int64>("signals.staleAfter", positiveDuration, default: 600_000,
                                                  help: "a fix older than this (ageMs) is stale")
    package static let signalsMaxAccuracy = Setting<Double>("signals.maxAccuracy", .metres(0.01...20_000_000), default: 100,
                                                   help: "a fix less accurate than this, or of unknown accuracy, is inaccurate")
    package static let signalsMaxClockSkew = Setting<Int64>("signals.maxClockSkew", positiveDuration, default: 5_000,
                                                    help: "a live fix whose time is further than this from a synchronised system clock when it arrives is clockSkewed")
    package static let signalsMinCn0StdDev = Setting<Double>("signals.minCn0StdDev", .number(0...50, unit: "dB-Hz"), default: 2.0,
                                                    help: "5 or more satellites whose C/N0 spread (standard deviation) is below this look spoofed")
    package static let signalsMaxJamming = Setting<Int>("signals.maxJamming", .integer(0...255), default: 100,
                                                  help: "a jamming indicator gpsd reports (0 none to 255 strong) above this is jammed")
    package static let policyEnabled = Setting<Bool>("policy.enabled", .boolean, default: false,
                                             help: "every trigger record carries a policy decision, as with --policy")
    package static let actionPolicy = Setting<Bool?>("actions.NAME.policy", SettingKind<Bool>.boolean.optional, default: nil,
                                            help: "records of action NAME carry a policy decision (default: policy.enabled)")
    package static let policyZones = Setting<String?>("policy.zones", SettingKind<String>.path.optional, default: nil,
                                             help: "a GeoJSON FeatureCollection of named zones (Polygon, MultiPolygon, Point with radius) that allow or deny")
    package static let policyCountries = Setting<[String]?>("policy.countries", SettingKind<[String]>.countryList.optional, default: nil,
                                                   help: "the ISO 3166-1 alpha-2 countries allowed (none: no country rule)")
    package static let policyUndetermined = Setting<UndeterminedPolicy>("policy.undetermined", SettingKind<UndeterminedPolicy>.choice(), default: .deny,
                                                              help: "what --enforce does when the accuracy circle straddles a boundary or the country is unknown")
    package static let policyMaxAge = Setting<Int64>("policy.maxAge", positiveDuration, default: 300_000,
                                             help: "a decision never rests on an older location: older is undetermined")
    package static let policyDistrust = Setting<[DistrustedSignal]>("policy.distrust", .signalList, default: DistrustedSignal.defaults,
                                                    help: "signals that deny access when they fire, whatever policy.undetermined says (none: the gate is off)")
    package static let policyRequireAuthenticated = Setting<Bool>("policy.requireAuthenticated", .boolean, default: false,
                                                                  help: "a fix the receiver does not say Galileo OSNMA authenticated (UBX NAV-PVT) is undetermined")
    package static let policyOnError = Setting<ErrorPolicy>("policy.onError", SettingKind<ErrorPolicy>.choice(), default: .deny,
                                                 help: "what trigger --pam does when geolocate cannot decide (a broken config or zones file, an unsafe file, no time left): deny fails closed")
    package static let signingKeyFile = Setting<String?>("signing.keyFile", SettingKind<String>.path.optional, default: nil,
                                                          help: "the device key that signs location tokens (none: device-key in the state directory; /etc/geolocate/device-key in system mode)")
    package static let signingAudience = Setting<String?>("signing.audience", SettingKind<String>.plainText.optional, default: nil,
                                                          help: "the aud of location tokens when --audience is not given")
    package static let signingTokenLifetime = Setting<Int64>("signing.tokenLifetime", .duration(tokenLifetimeRange, examples: "such as 30s or 2m"),
                                                             default: 120_000, help: "how long a location token holds after it is signed (exp - iat)")
    package static let signingKeyProvider = Setting<KeyProvider>("signing.keyProvider", SettingKind<KeyProvider>.choice(), default: .file,
                                                                 help: "where key init and key rotate make the device key: file, or tpm (a P-256 key inside the TPM, ES256 tokens)")
    package static let signingTPM = Setting<String>("signing.tpm", .tcti, default: "device:/dev/tpmrm0",
                                                    help: "the TPM 2.0 of a tpm key, as a TCTI: device:/dev/tpmrm0, swtpm:host=127.0.0.1,port=2321, mssim:… or tabrmd:…")
    /// From 10 s, time for a login to reach the server, to 1 h: a token is a proof for one login, not a pass.
    package static let tokenLifetimeRange: ClosedRange<Int64> = 10_000...3_600_000
    /// `fields.NAME`, one per field of `RecordFields`, in the order of `RecordFields.keys`.
    package static let fields: [Setting<Bool>] = RecordFields.keys.map {
        Setting("fields.\($0.name)", .boolean, default: true, help: "records carry \($0.name)")
    }

    /// The table, in the order `--help` lists it.
    package static let all: [AnySetting] = [
        permissions.entry, defaultInterval.entry, queryTimeout.entry, lastKnownMaxAge.entry, currentMaxAge.entry,
        actionMode.entry, actionTimeout.entry, actionLastKnownMaxAge.entry, actionEndpoint.entry, source.entry,
        spoolMaxRetention.entry, spoolKeepDelivered.entry, spoolMaxRecords.entry, visitsEnabled.entry, visitsRadius.entry, visitsMinDuration.entry,
        endpointURL.entry, endpointHeader.entry, endpointFormat.entry, endpointActions.entry, endpointBatchSize.entry, endpointTimeout.entry,
        endpointQoS.entry, endpointMQTTVersion.entry, endpointMessageExpiry.entry, endpointSessionExpiry.entry, endpointUsername.entry, endpointPassword.entry, endpointCAFile.entry, endpointCertFile.entry, endpointKeyFile.entry,
        owntracksTrackerID.entry,
        transmissionInterval.entry, privacyPrecision.entry, privacyAccuracyThreshold.entry,
        privacyCountryCodeReplacement.entry, privacyLocationAttributeFilter.entry,
        geocoderURL.entry, geocoderMinInterval.entry, geocoderTimeout.entry, geocoderCAFile.entry,
        signalsEnabled.entry, signalsMaxSpeed.entry, signalsCountryWindow.entry, signalsStaleAfter.entry,
        signalsMaxAccuracy.entry, signalsMaxClockSkew.entry, signalsMinCn0StdDev.entry, signalsMaxJamming.entry,
        policyEnabled.entry, actionPolicy.entry, policyZones.entry, policyCountries.entry, policyUndetermined.entry,
        policyMaxAge.entry, policyDistrust.entry, policyRequireAuthenticated.entry, policyOnError.entry,
        signingKeyFile.entry, signingAudience.entry, signingTokenLifetime.entry, signingKeyProvider.entry, signingTPM.entry,
    ] + fields.map(\.entry)

    private static var anyDuration: SettingKind<Int64> {
        .duration(0...DurationText.maximumMilliseconds, examples: "such as 90s, 30m or 2h")
    }

    /// A timeout, a retention or an interval of 0 would make every request fail or every record expire.
    private static var positiveDuration: SettingKind<Int64> {
        .duration(1...DurationText.maximumMilliseconds, examples: "such as 500ms, 30s or 10d")
    }

    /// A query timeout, as `triggerActionQueryTimeout` takes: no action can block a login for
    /// days, and one under 10 ms is a unit mistaken (`2` meant as seconds).
    private static var queryTimeoutDuration: SettingKind<Int64> {
        .duration(Defaults.minimumTimeoutMilliseconds...Defaults.maximumQueryTimeoutMilliseconds, examples: "such as 1500ms or 2s")
    }

    /// A network timeout: under 10 ms no request can succeed, so such a value is a unit mistaken.
    private static var timeout: SettingKind<Int64> {
        .duration(Defaults.minimumTimeoutMilliseconds...DurationText.maximumMilliseconds, examples: "such as 500ms, 10s or 1m")
    }

    /// The shortest `spool.maxRetention`: under an hour, the next track would expire what it
    /// just collected before any flush could send it.
    package static let shortestRetentionMilliseconds: Int64 = 3_600_000

    /// How long the spool keeps records: under an hour, the next track would expire what it
    /// just collected before any flush could send it.
    private static var retention: SettingKind<Int64> {
        .duration(ConfigKey.shortestRetentionMilliseconds...DurationText.maximumMilliseconds, examples: "such as 12h or 10d")
    }

    /// The setting `path` names, with names for its `NAME` parts.
    package static func setting(for path: [String]) -> AnySetting? { all.first { $0.matches(path) } }

    /// Whether `path` names a group of keys, such as `endpoints.primary` or `privacy`: the
    /// start of at least one key.
    package static func isGroup(_ path: [String]) -> Bool {
        all.contains { $0.pattern.count > path.count && $0.startsWith(path) }
    }

    /// The keys shell completion offers: every key of the table, each `NAME` filled with the
    /// names `document` (the configuration in force) gives there, and for actions also the
    /// built-in ones (`actions.login.mode`); `NAME` stays where no name is known yet.
    ///
    /// `config get endpoints.` then completes to the endpoints the file has, not to the
    /// literal `endpoints.NAME.url`. A `nil` document (a file that does not load) gives the
    /// table's keys as they are: completion never fails loudly.
    package static func completions(in document: JSONValue?) -> [String] {
        func names(at path: [String]) -> [String] {
            var found: Set<String> = []
            if case .object(let members)? = document?[path] { found.formUnion(members.keys) }
            if document != nil, path == ["actions"] { found.formUnion(CollectionMode.builtInModes.keys) }
            return found.isEmpty ? ["NAME"] : found.sorted()
        }
        return all.flatMap { setting in
            setting.pattern.reduce(into: [[String]]([[]])) { prefixes, part in
                prefixes = prefixes.flatMap { prefix in
                    (part == "*" ? names(at: prefix) : [part]).map { prefix + [$0] }
                }
            }.map { $0.joined(separator: ".") }
        }
    }

    /// The values shell completion offers for `key` (dotted, names filled in).
    package static func choices(forKey key: String) -> [String] {
        setting(for: key.split(separator: ".").map(String.init))?.choices ?? []
    }

    /// "; did you mean 'KEY'?" for the key nearest to `path`, its `NAME` parts filled with the
    /// names `path` gives (`actions.login.mdoe` is near `actions.login.mode`), or "".
    package static func suggestion(for path: [String]) -> String {
        Suggestion.didYouMean(path.joined(separator: "."), among: all.map { setting in
            setting.key.split(separator: ".").enumerated().map { index, part in
                part == "NAME" && index < path.count ? path[index] : String(part)
            }.joined(separator: ".")
        })
    }

    /// Every key with its meaning, valid values and default, two lines each, for `config --help`.
    package static var summary: String {
        all.map { "  \($0.key): \($0.help)\n      \($0.valid); default \($0.defaultText)" }.joined(separator: "\n")
    }

    /// The table as Markdown, for docs/REFERENCE.md.
    package static var markdownTable: String {
        (["| key | value | default | meaning |", "|---|---|---|---|"]
            + all.map { "| `\($0.key)` | \($0.valid.markdownEscaped) | \($0.defaultText.markdownEscaped) | \($0.help.markdownEscaped) |" })
            .joined(separator: "\n")
    }
}

private extension String {
    var markdownEscaped: String { replacingOccurrences(of: "|", with: "\\|") }
}

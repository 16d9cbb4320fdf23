import Foundation

/// The decision of a location policy on one record (SPEC §10.2), as the record carries it.
public struct PolicyResult: Sendable, Equatable {
    public enum Decision: String, Sendable, CaseIterable {
        case allow
        case deny
        case undetermined
    }

    /// Which rule decided, in the order they apply; the reason's words come from it.
    public enum Rule: String, Sendable {
        case distrustedJumped = "distrusted-jumped"
        case distrustedSpoofingSuspected = "distrusted-spoofingSuspected"
        case distrustedClockSkewed = "distrusted-clockSkewed"
        case distrustedEstimatedFix = "distrusted-estimatedFix"
        case distrustedStale = "distrusted-stale"
        case distrustedReplayed = "distrusted-replayed"
        case distrustedInaccurate = "distrusted-inaccurate"
        case distrustedCountryChanged = "distrusted-countryChanged"
        case tooOld
        case noLocation
        case insideDenyZone
        case nearDenyZone
        case countryNotAllowed
        case countryUnknown
        case insideAllowZone
        case outsideAllowZones
        case acrossAllowZone
        case noAllowZone

        /// The rule for a fired signal of `policy.distrust`.
        static func distrusted(_ signal: DistrustedSignal) -> Rule {
            Rule(rawValue: "distrusted-" + signal.rawValue)!
        }

        /// The signal a `distrusted…` rule names.
        var distrustedSignal: DistrustedSignal? {
            rawValue.hasPrefix("distrusted-") ? DistrustedSignal(rawValue: String(rawValue.dropFirst("distrusted-".count))) : nil
        }
    }

    public var decision: Decision
    /// The zone that decided: for `outsideAllowZones`, the nearest allow zone.
    public var zone: String?
    public var rule: Rule
    /// The country a country rule judged; withheld below `COUNTRY` precision.
    public var country: String?
    /// Metres from the location to `zone`'s nearest boundary; withheld below `GPS_LOCATION`.
    public var boundaryDistance: Double?
    /// For `tooOld`: the location's age and `policy.maxAge`, in ms, for the reason's words
    /// (not kept in the spool, where the reason is said without them).
    public var age: Int64?
    public var maxAge: Int64?

    public init(decision: Decision, zone: String? = nil, rule: Rule, country: String? = nil, boundaryDistance: Double? = nil) {
        self.decision = decision
        self.zone = zone
        self.rule = rule
        self.country = country
        self.boundaryDistance = boundaryDistance
    }

    /// One short English line; figures only where `boundaryDistance` is kept.
    public var reason: String {
        let zone = self.zone ?? "?"
        let distance = boundaryDistance.map(SignalText.distance)
        if let signal = rule.distrustedSignal {
            let words = Signals.plainReasons[signal.rawValue] ?? signal.rawValue
            return "\(signal.rawValue): \(words); policy.distrust counts it against access"
        }
        switch rule {
        case .tooOld:
            guard let age, let maxAge else { return "the location is older than policy.maxAge" }
            return "location \(SignalText.duration(age)) old, policy.maxAge is \(DurationText.format(maxAge))"
        case .noLocation: return "no location"
        case .insideDenyZone: return "inside deny zone \(zone)" + (distance.map { " by \($0)" } ?? "")
        case .nearDenyZone: return "the accuracy circle crosses deny zone \(zone)" + (distance.map { " (\($0) from its boundary)" } ?? "")
        case .countryNotAllowed: return country.map { "country \($0) is not in policy.countries" } ?? "the country is not in policy.countries"
        case .countryUnknown: return country.map { "the country is withheld (\($0): the fix is not accurate enough)" } ?? "the country is unknown or withheld"
        case .insideAllowZone: return "inside \(zone)" + (distance.map { " by \($0)" } ?? "")
        case .outsideAllowZones: return "outside every allow zone; the nearest is \(zone)" + (distance.map { ", \($0) away" } ?? "")
        case .acrossAllowZone: return "the accuracy circle crosses the boundary of \(zone)" + (distance.map { " (\($0) from it)" } ?? "")
        case .noAllowZone: return "no allow zone and no rule denies"
        default: return rule.rawValue
        }
    }
}

/// `policy.*`: zones that allow or deny, countries allowed, and what an undetermined
/// decision counts as (SPEC §10.2).
public struct LocationPolicy: Sendable {
    var zones: [Zone]
    /// `policy.countries`; `nil` is no country rule.
    public var countries: Set<String>?
    /// `privacy.countryCodeReplacement`: a code that is not a country.
    var countryCodeReplacement: String
    /// `policy.maxAge`: the oldest location a decision may rest on.
    public var maxAgeMilliseconds: Int64
    /// `policy.distrust`: signals that make a location evidence against access.
    public var distrust: [DistrustedSignal]

    /// The policy of `settings`, its zones read from `policy.zones`.
    /// - Throws: `GeolocateError.configuration` (78) for a zones file that is missing,
    ///   unreadable or invalid, naming the file and the feature.
    public init(settings: Settings) throws {
        zones = try settings[ConfigKey.policyZones].map { try ZoneFile.load(path: settings.resolvedPath($0)) } ?? []
        countries = settings[ConfigKey.policyCountries].map(Set.init)
        countryCodeReplacement = settings[ConfigKey.privacyCountryCodeReplacement]
        maxAgeMilliseconds = settings[ConfigKey.policyMaxAge]
        distrust = settings[ConfigKey.policyDistrust]
    }

    /// The policy of the zones in `data` alone, read as from `path`: the fuzz target's entry.
    package init(zonesData data: Data, path: String) throws {
        zones = try ZoneFile.parse(data, path: path)
        countries = nil
        countryCodeReplacement = "XB"
        maxAgeMilliseconds = ConfigKey.policyMaxAge.builtInValue
        distrust = DistrustedSignal.defaults
    }

    /// Whether records of `action` carry a policy decision: `--policy`/`--enforce`, else
    /// `actions.NAME.policy`, else `policy.enabled`.
    public static func applies(to action: String, flag: Bool, settings: Settings) -> Bool {
        flag || (settings[ConfigKey.actionPolicy, name: action] ?? settings[ConfigKey.policyEnabled])
    }

    /// Checks the zones file of `settings`, for `config validate`.
    public static func validate(_ settings: Settings) throws {
        _ = try LocationPolicy(settings: settings)
    }

    /// Whether `--enforce` lets `result` pass under `settings`' `policy.undetermined`.
    public static func passes(_ result: PolicyResult, settings: Settings) -> Bool {
        result.decision == .allow || (result.decision == .undetermined && settings[ConfigKey.policyUndetermined] == .allow)
    }

    /// The decision for `record` (its fix, age and signals) in `country`: a distrusted signal
    /// denies; no location, or one older than `policy.maxAge`, is undetermined; then the
    /// zones and countries decide (`decide(fix:country:)`).
    public func decide(record: Record, country: String?) -> PolicyResult {
        if let signals = record.signals, let signal = distrust.first(where: signals.fired) {
            return PolicyResult(decision: .deny, rule: .distrusted(signal))
        }
        guard let fix = record.fix else { return PolicyResult(decision: .undetermined, rule: .noLocation) }
        if let age = record.ageMilliseconds, age > maxAgeMilliseconds {
            var result = PolicyResult(decision: .undetermined, rule: .tooOld)
            (result.age, result.maxAge) = (age, maxAgeMilliseconds)
            return result
        }
        return decide(fix: fix, country: country)
    }

    /// The decision for `fix` in `country` by zones and countries alone, using the circle of
    /// the fix's accuracy (an unknown accuracy is a circle without bound): the first rule
    /// that applies wins.
    public func decide(fix: Fix?, country: String?) -> PolicyResult {
        guard let fix else { return PolicyResult(decision: .undetermined, rule: .noLocation) }
        let radius = fix.horizontalAccuracy ?? .infinity
        let measures = zones.map { ($0, $0.measure(latitude: fix.latitude, longitude: fix.longitude)) }
        let deny = measures.filter { $0.0.effect == .deny }
        if let (zone, measure) = deny.first(where: { $0.1.inside }) {
            return PolicyResult(decision: .deny, zone: zone.name, rule: .insideDenyZone, boundaryDistance: measure.boundaryDistance)
        }
        if let (zone, measure) = deny.filter({ $0.1.boundaryDistance < radius }).min(by: { $0.1.boundaryDistance < $1.1.boundaryDistance }) {
            return PolicyResult(decision: .undetermined, zone: zone.name, rule: .nearDenyZone, boundaryDistance: measure.boundaryDistance)
        }
        if let countries {
            guard let country, country != countryCodeReplacement, country.utf8.count == 2 else {
                return PolicyResult(decision: .undetermined, rule: .countryUnknown, country: country)
            }
            if !countries.contains(country) { return PolicyResult(decision: .deny, rule: .countryNotAllowed, country: country) }
        }
        let allow = measures.filter { $0.0.effect == .allow }
        guard !allow.isEmpty else { return PolicyResult(decision: .allow, rule: .noAllowZone) }
        if let (zone, measure) = allow.filter({ $0.1.inside && $0.1.boundaryDistance >= radius })
            .max(by: { $0.1.boundaryDistance < $1.1.boundaryDistance }) {
            return PolicyResult(decision: .allow, zone: zone.name, rule: .insideAllowZone, boundaryDistance: measure.boundaryDistance)
        }
        let nearest = allow.min { $0.1.boundaryDistance < $1.1.boundaryDistance }!
        if allow.allSatisfy({ !$0.1.inside && $0.1.boundaryDistance >= radius }) {
            return PolicyResult(decision: .deny, zone: nearest.0.name, rule: .outsideAllowZones, boundaryDistance: nearest.1.boundaryDistance)
        }
        return PolicyResult(decision: .undetermined, zone: nearest.0.name, rule: .acrossAllowZone, boundaryDistance: nearest.1.boundaryDistance)
    }
}

/// `policy.undetermined`: what an undetermined decision counts as under `--enforce`.
public enum UndeterminedPolicy: String, Sendable, CaseIterable {
    case deny
    case allow
}

/// What a login hook does when geolocate cannot decide at all (`policy.onError`, SPEC §14):
/// a broken configuration or zones file, a file others could have changed, no time left.
public enum ErrorPolicy: String, Sendable, CaseIterable {
    /// Fail closed: the login is refused (exit 1).
    case deny
    /// Fail open: the login goes on (exit 0), with a syslog warning.
    case allow
}

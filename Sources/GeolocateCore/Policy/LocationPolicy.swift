import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

/// `policy.*`: zones that allow or deny, countries allowed, and what an undetermined
/// decision counts as (SPEC §10.2).
package struct LocationPolicy: Sendable {
    var zones: [Zone]
    /// `policy.countries`; `nil` is no country rule.
    package var countries: Set<String>?
    /// `privacy.countryCodeReplacement`: a code that is not a country.
    var countryCodeReplacement: String
    /// `policy.maxAge`: the oldest location a decision may rest on.
    package var maxAgeMilliseconds: Int64
    /// `policy.distrust`: signals that make a location evidence against access.
    package var distrust: [DistrustedSignal]
    /// `policy.requireAuthenticated`: only a fix OSNMA authenticated may decide.
    package var requireAuthenticated: Bool

    /// The policy of `settings`, its zones read from `policy.zones`.
    /// - Throws: `GeolocateError.configuration` (78) for a zones file that is missing,
    ///   unreadable or invalid, naming the file and the feature; `.permissionDenied` (78) for
    ///   one this user may not read.
    package init(settings: Settings) throws {
        zones = try settings[ConfigKey.policyZones].map { try ZoneFile.load(path: settings.resolvedPath($0)) } ?? []
        countries = settings[ConfigKey.policyCountries].map(Set.init)
        countryCodeReplacement = settings[ConfigKey.privacyCountryCodeReplacement]
        maxAgeMilliseconds = settings[ConfigKey.policyMaxAge]
        distrust = settings[ConfigKey.policyDistrust]
        requireAuthenticated = settings[ConfigKey.policyRequireAuthenticated]
    }

    /// The policy of the zones in `data` alone, read as from `path`: the fuzz target's entry.
    package init(zonesData data: Data, path: String) throws {
        zones = try ZoneFile.parse(data, path: path)
        countries = nil
        countryCodeReplacement = "XB"
        maxAgeMilliseconds = ConfigKey.policyMaxAge.builtInValue
        distrust = DistrustedSignal.defaults
        requireAuthenticated = false
    }

    /// Whether records of `action` carry a policy decision: `--policy`/`--enforce`, else
    /// `actions.NAME.policy`, else `policy.enabled`.
    package static func applies(to action: String, flag: Bool, settings: Settings) -> Bool {
        flag || (settings[ConfigKey.actionPolicy, name: action] ?? settings[ConfigKey.policyEnabled])
    }

    /// Checks the zones file of `settings`, for `config validate`.
    package static func validate(_ settings: Settings) throws {
        _ = try LocationPolicy(settings: settings)
    }

    /// Whether `--enforce` lets `result` pass under `settings`' `policy.undetermined`.
    package static func passes(_ result: PolicyResult, settings: Settings) -> Bool {
        result.decision == .allow || (result.decision == .undetermined && settings[ConfigKey.policyUndetermined] == .allow)
    }

    /// The decision for `record` (its fix, age and signals) in `country`: a distrusted signal
    /// denies; no location, one not OSNMA-authenticated under `policy.requireAuthenticated`, or
    /// one older than `policy.maxAge`, is undetermined; then the zones and countries decide
    /// (`decide(fix:country:)`).
    package func decide(record: Record, country: String?) -> PolicyResult {
        if let signals = record.signals, let signal = distrust.first(where: signals.fired) {
            return PolicyResult(decision: .deny, rule: .distrusted(signal))
        }
        guard let fix = record.fix else {
            return PolicyResult(decision: .undetermined, rule: record.errorCode == .permissionDenied ? .noPermission : .noLocation)
        }
        if requireAuthenticated, record.signals?.gnssAuthenticated != true {
            return PolicyResult(decision: .undetermined, rule: .notAuthenticated)
        }
        guard let age = record.ageMilliseconds else { return PolicyResult(decision: .undetermined, rule: .ageUnknown) }
        if age > maxAgeMilliseconds {
            var result = PolicyResult(decision: .undetermined, rule: .tooOld)
            (result.age, result.maxAge) = (age, maxAgeMilliseconds)
            return result
        }
        return decide(fix: fix, country: country)
    }

    /// The decision for `fix` in `country` by zones and countries alone, using the circle of
    /// the fix's accuracy (an unknown accuracy is a circle without bound): the first rule
    /// that applies wins.
    package func decide(fix: Fix?, country: String?) -> PolicyResult {
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


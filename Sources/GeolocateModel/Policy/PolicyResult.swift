import Foundation

/// The decision of a location policy on one record (SPEC §10.2), as the record carries it.
package struct PolicyResult: Sendable, Equatable {
    package enum Decision: String, Sendable, CaseIterable {
        case allow
        case deny
        case undetermined
    }

    /// Which rule decided, in the order they apply; the reason's words come from it.
    ///
    /// The raw values are the one vocabulary of the syslog `reason`, the record's
    /// `policy.reason` code and `status`: camelCase names (SPEC §16).
    package enum Rule: String, Sendable {
        case distrustedJumped
        case distrustedSpoofingSuspected
        case distrustedClockSkewed
        case distrustedEstimatedFix
        case distrustedStale
        case distrustedReplayed
        case distrustedInaccurate
        case distrustedCountryChanged
        case distrustedJammed
        case distrustedAntennaFault
        case distrustedReceiverSpoofing
        case distrustedReceiverJamming
        case distrustedOsnmaReplay
        /// `policy.requireAuthenticated`, and the receiver did not say OSNMA authenticated the fix.
        case notAuthenticated
        case tooOld
        /// The fix's age is unknown: a fix the source held, dated far from the system clock,
        /// whose arrival geolocate did not see (SPEC §3).
        case ageUnknown
        /// The previous report exists and cannot be read, so impossible travel cannot be
        /// judged (SPEC §10.1).
        case previousUnreadable
        /// No location permission is granted, so no location was collected.
        case noPermission
        case noLocation
        case insideDenyZone
        case nearDenyZone
        case countryNotAllowed
        case countryUnknown
        case insideAllowZone
        case outsideAllowZones
        case acrossAllowZone
        case noAllowZone

        /// The rule for a fired signal of `policy.distrust`: a switch, so that a new signal
        /// cannot go without its rule.
        package static func distrusted(_ signal: DistrustedSignal) -> Rule {
            switch signal {
            case .jumped: .distrustedJumped
            case .spoofingSuspected: .distrustedSpoofingSuspected
            case .clockSkewed: .distrustedClockSkewed
            case .estimatedFix: .distrustedEstimatedFix
            case .stale: .distrustedStale
            case .replayed: .distrustedReplayed
            case .inaccurate: .distrustedInaccurate
            case .countryChanged: .distrustedCountryChanged
            case .jammed: .distrustedJammed
            case .antennaFault: .distrustedAntennaFault
            case .receiverSpoofing: .distrustedReceiverSpoofing
            case .receiverJamming: .distrustedReceiverJamming
            case .osnmaReplay: .distrustedOsnmaReplay
            }
        }

        /// The signal a `distrusted…` rule names.
        package var distrustedSignal: DistrustedSignal? {
            DistrustedSignal.allCases.first { Rule.distrusted($0) == self }
        }

        /// The rule a spool stored: its name, or an earlier version's `distrusted-SIGNAL`.
        package init?(stored text: String) {
            if text.hasPrefix("distrusted-"), let signal = DistrustedSignal(rawValue: String(text.dropFirst("distrusted-".count))) {
                self = .distrusted(signal)
            } else {
                self.init(rawValue: text)
            }
        }
    }

    package var decision: Decision
    /// The zone that decided: for `outsideAllowZones`, the nearest allow zone.
    package var zone: String?
    package var rule: Rule
    /// The country a country rule judged; withheld below `COUNTRY` precision.
    package var country: String?
    /// Metres from the location to `zone`'s nearest boundary; withheld below `GPS_LOCATION`.
    package var boundaryDistance: Double?
    /// For `tooOld`: the location's age and `policy.maxAge`, in ms, for the reason's words
    /// (not kept in the spool, where the reason is said without them).
    package var age: Int64?
    package var maxAge: Int64?

    package init(decision: Decision, zone: String? = nil, rule: Rule, country: String? = nil, boundaryDistance: Double? = nil) {
        self.decision = decision
        self.zone = zone
        self.rule = rule
        self.country = country
        self.boundaryDistance = boundaryDistance
    }

    /// One short English line; figures only where `boundaryDistance` is kept.
    package var reason: String {
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
        case .notAuthenticated: return "the receiver did not say Galileo OSNMA authenticated the fix, and policy.requireAuthenticated asks for it"
        case .ageUnknown: return "the location's age is unknown (a fix the source held, dated far from the system clock)"
        case .previousUnreadable: return "the previous report cannot be read, so impossible travel cannot be judged"
        case .noPermission: return "no location permission is granted (geolocate config set permissions fine)"
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

/// `policy.undetermined`: what an undetermined decision counts as under `--enforce`.
package enum UndeterminedPolicy: String, Sendable, CaseIterable {
    case deny
    case allow
}

/// What a login hook does when geolocate cannot decide at all (`policy.onError`, SPEC §14):
/// a broken configuration or zones file, a file others could have changed, no time left.
package enum ErrorPolicy: String, Sendable, CaseIterable {
    /// Fail closed: the login is refused (exit 1).
    case deny
    /// Fail open: the login goes on (exit 0), with a syslog warning.
    case allow
}

import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Logging
import Synchronization

/// Applies `privacy.*` to records as they are made, before anything is printed, spooled or
/// sent: finds the address parts the precision asks for and limits the location object to
/// the fields the precision and `privacy.locationAttributeFilter` allow.
package struct RecordPrivacy: Sendable {
    package var policy: PrivacyPolicy
    /// For `$GEOLOCATE_GAZETTEER`; the gazetteer is opened by the first record that needs a
    /// country, district or city.
    package var environment: [String: String]
    /// The street geocoder, when `geocoder.url` is set.
    package var streetGeocoder: StreetGeocoder?
    package var logger: Logger
    private let logged = FirstOccurrences()

    package init(policy: PrivacyPolicy, environment: [String: String], streetGeocoder: StreetGeocoder?, logger: Logger) {
        self.policy = policy
        self.environment = environment
        self.streetGeocoder = streetGeocoder
        self.logger = logger
    }

    /// The privacy settings of `settings`, with the geocoder's cache in `stateDirectory`.
    package init(settings: Settings, environment: [String: String], stateDirectory: String,
                 clock: WallClock, elapsed: MonotonicClock, logger: Logger) {
        self.init(policy: settings.privacy, environment: environment,
                  streetGeocoder: StreetGeocoder(settings: settings, stateDirectory: stateDirectory, clock: clock, elapsed: elapsed),
                  logger: logger)
    }

    /// Whether records need the HTTP geocoder (a street part is allowed and one is configured).
    package var asksStreetGeocoder: Bool {
        streetGeocoder != nil && !policy.attributes.isDisjoint(with: [.street, .streetNumber])
    }

    /// `record` with its address and allowed fields; errorCode 1053 (with a warning) when an
    /// address part it should carry could not be found. The location itself stays.
    package func apply(to record: Record) async -> Record {
        var record = record
        var failure: GeocodingError?
        let allowed = attributes(for: record)
        if let fix = record.fix {
            var address = placeAddress(for: fix, allowed: allowed, failure: &failure)
            if let streetGeocoder, !allowed.isDisjoint(with: [.street, .streetNumber]) {
                do {
                    let street = try await streetGeocoder.street(latitude: fix.latitude, longitude: fix.longitude)
                    address.street = street.street
                    address.streetNumber = street.streetNumber
                } catch {
                    failure = failure ?? error
                }
            }
            record.address = address.limited(to: allowed)
        }
        finish(&record, allowed: allowed, failure: failure)
        return record
    }

    /// `apply(to:)` for synchronous callers (track's loop, outside Swift concurrency): it
    /// waits for the street geocoder only when records ask for one.
    package func applyWaiting(to record: inout Record) throws {
        guard asksStreetGeocoder else { return applyOffline(to: &record) }
        let privacy = self, collected = record
        record = try BlockingTask.run { await privacy.apply(to: collected) }
    }

    /// `apply(to:)` without the HTTP geocoder.
    func applyOffline(to record: Record) -> Record {
        var record = record
        applyOffline(to: &record)
        return record
    }

    /// `applyOffline(to:)` in place.
    func applyOffline(to record: inout Record) {
        var failure: GeocodingError?
        let allowed = attributes(for: record)
        if let fix = record.fix { record.address = placeAddress(for: fix, allowed: allowed, failure: &failure).limited(to: allowed) }
        finish(&record, allowed: allowed, failure: failure)
    }

    /// The fields `record` may carry: the policy's, without street and number under a coarse
    /// permission, whose 2 km cell centre has no meaningful street.
    private func attributes(for record: Record) -> LocationAttributes {
        Permission.effective(record.permissions) == .coarse
            ? policy.attributes.subtracting([.street, .streetNumber]) : policy.attributes
    }

    private func finish(_ record: inout Record, allowed: LocationAttributes, failure: GeocodingError?) {
        record.attributes = allowed
        if let failure, record.fix != nil {
            // Once per kind of failure and process: a track would otherwise warn on every record.
            if logged.first(.failed(failure)) {
                logger.warning("\(failure); the record goes out without it (errorCode 1053)")
            }
            if record.errorCode == .none { record.errorCode = .geocodingFailed }
        }
    }

    /// The country of `record`'s location as signals compare it, whatever the precision lets
    /// records show: its address's code, else the gazetteer's (the replacement when the fix
    /// is not accurate enough); `nil` when unknown.
    package func signalCountry(for record: Record) -> String? {
        if let code = record.address?.countryCode { return code }
        guard let fix = record.fix, let gazetteer = try? Gazetteer.shared(environment: environment),
              let place = gazetteer.nearest(latitude: fix.latitude, longitude: fix.longitude) else { return nil }
        return policy.countryCode(place.countryCode, for: fix)
    }

    /// Country, district and city from the gazetteer, when the precision lets any through.
    private func placeAddress(for fix: Fix, allowed: LocationAttributes, failure: inout GeocodingError?) -> Address {
        guard !allowed.isDisjoint(with: [.countryCode, .district, .city]) else { return Address() }
        do {
            let gazetteer = try Gazetteer.shared(environment: environment)
            if logged.first(.opened) { logger.debug("gazetteer: \(gazetteer.path)") }
            guard let place = gazetteer.nearest(latitude: fix.latitude, longitude: fix.longitude) else {
                return Address()
            }
            return Address(countryCode: policy.countryCode(place.countryCode, for: fix), district: place.district, city: place.city)
        } catch let error as GeocodingError {
            failure = error
        } catch {
            failure = .serviceFailed(ErrorText.plain(error))
        }
        return Address()
    }
}

/// Remembers what was already logged, so a track logs each kind of event once.
private final class FirstOccurrences: Sendable {
    enum Event {
        case opened
        case failed(GeocodingError)
    }

    private let seen = Mutex<Set<String>>([])

    /// Whether this is the first event of its kind (a failure's case, not its details).
    func first(_ event: Event) -> Bool {
        let kind: String
        switch event {
        case .opened: kind = "opened"
        case .failed(.gazetteerUnavailable): kind = "gazetteer"
        case .failed(.throttled): kind = "throttled"
        case .failed(.serviceFailed): kind = "service"
        case .failed(.cacheNotWritable): kind = "cache"
        }
        return seen.withLock { $0.insert(kind).inserted }
    }
}

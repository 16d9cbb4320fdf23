import Foundation
import Logging

/// Applies `privacy.*` to records as they are made, before anything is printed, spooled or
/// sent: finds the address parts the precision asks for and limits the location object to
/// the fields the precision and `privacy.locationAttributeFilter` allow.
public struct RecordPrivacy: Sendable {
    public var policy: PrivacyPolicy
    /// The gazetteer's location; opened on the first record that needs a country, district or city.
    public var environment: [String: String]
    /// The street geocoder, when `geocoder.url` is set.
    public var streetGeocoder: StreetGeocoder?
    public var logger: Logger

    public init(policy: PrivacyPolicy, environment: [String: String], streetGeocoder: StreetGeocoder?, logger: Logger) {
        self.policy = policy
        self.environment = environment
        self.streetGeocoder = streetGeocoder
        self.logger = logger
    }

    /// The privacy settings of `settings`, with the geocoder's cache in `stateDirectory`.
    public init(settings: Settings, environment: [String: String], stateDirectory: String, logger: Logger) {
        self.init(policy: settings.privacy, environment: environment,
                  streetGeocoder: settings.geocoderURL.map {
                      StreetGeocoder(baseURL: $0,
                                     minIntervalMilliseconds: settings.geocoderMinIntervalMilliseconds ?? StreetGeocoder.defaultMinIntervalMilliseconds,
                                     timeoutMilliseconds: settings.geocoderTimeoutMilliseconds ?? StreetGeocoder.defaultTimeoutMilliseconds,
                                     cache: GeocoderCache(stateDirectory: stateDirectory))
                  },
                  logger: logger)
    }

    /// Whether records need the HTTP geocoder (a street part is allowed and one is configured).
    public var asksStreetGeocoder: Bool {
        streetGeocoder != nil && !policy.attributes.isDisjoint(with: [.street, .streetNumber])
    }

    /// `record` with its address and allowed fields; errorCode 1053 (with a warning) when an
    /// address part it should carry could not be found. The location itself stays.
    /// - Throws: `GeolocateError.stateNotWritable` when the geocoder's cache cannot be kept.
    public func apply(to record: Record) async throws -> Record {
        var record = record
        var failure: GeocodingError?
        if let fix = record.fix {
            var address = placeAddress(for: fix, failure: &failure)
            if asksStreetGeocoder, let streetGeocoder {
                do {
                    let street = try await streetGeocoder.street(latitude: fix.latitude, longitude: fix.longitude)
                    address.street = street.street
                    address.streetNumber = street.streetNumber
                } catch let error as GeocodingError {
                    failure = failure ?? error
                }
            }
            record.address = address.limited(to: policy.attributes)
        }
        return finished(record, failure: failure)
    }

    /// `apply(to:)` without the HTTP geocoder, which track calls when it needs none, since
    /// it runs outside Swift concurrency.
    public func applyOffline(to record: Record) -> Record {
        var record = record
        var failure: GeocodingError?
        if let fix = record.fix { record.address = placeAddress(for: fix, failure: &failure).limited(to: policy.attributes) }
        return finished(record, failure: failure)
    }

    private func finished(_ record: Record, failure: GeocodingError?) -> Record {
        var record = record
        record.attributes = policy.attributes
        if let failure, record.fix != nil {
            logger.warning("\(failure); the record goes out without it (errorCode 1053)")
            if record.errorCode == .none { record.errorCode = .geocodingFailed }
        }
        return record
    }

    /// Country, district and city from the gazetteer, when the precision lets any through.
    private func placeAddress(for fix: Fix, failure: inout GeocodingError?) -> Address {
        guard !policy.attributes.isDisjoint(with: [.countryCode, .district, .city]) else { return Address() }
        do {
            guard let place = try Gazetteer.shared(environment: environment).nearest(latitude: fix.latitude, longitude: fix.longitude) else {
                return Address()
            }
            return Address(countryCode: policy.countryCode(place.countryCode, for: fix), district: place.district, city: place.city)
        } catch let error as GeocodingError {
            failure = error
        } catch {
            failure = .serviceFailed("\(error)")
        }
        return Address()
    }
}

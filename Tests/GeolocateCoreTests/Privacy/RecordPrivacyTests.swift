import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Logging
import Testing

/// `privacy.*` on records: each precision level in each output format, the accuracy threshold
/// for country codes, the attribute filter, and a gazetteer that cannot be read.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct RecordPrivacyTests {
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    /// A fix on O'Connell Street, Dublin, 12 m accurate.
    static func dublinRecord(accuracy: Double? = 12) -> Record {
        let fix = Fix(timestamp: 1_763_783_056_000, latitude: 53.3498, longitude: -6.2603, mode: .threeD,
                      altitudeHAE: 60.2, speed: 1.5, course: 90, horizontalAccuracy: accuracy, verticalAccuracy: 4,
                      provider: .gpsd)
        return Record(action: "login", triggeredAt: 1_763_783_057_000, requestedMode: "default",
                      collectionMode: "force-current", fix: fix, permissions: [.fine], origin: .current,
                      fallbackReason: nil, errorCode: .none)
    }

    func privacy(_ policy: PrivacyPolicy, environment: [String: String] = [:]) -> RecordPrivacy {
        RecordPrivacy(policy: policy, environment: environment, streetGeocoder: nil, logger: logger)
    }

    static func object(_ json: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    /// The keys each format's location shows at each level (no street geocoder configured,
    /// so street and number are unknown: absent in Mosaic and OpenLocate, null in Veridium).
    @Test(arguments: LocationPrecision.allCases)
    func eachLevelInEachFormat(_ precision: LocationPrecision) throws {
        let record = privacy(PrivacyPolicy(precision: precision)).applyOffline(to: Self.dublinRecord())
        #expect(record.errorCode == .none)
        let precise = precision == .gpsLocation
        let expectedAddress: [(LocationPrecision, String, String)] = [
            (.country, "countryCode", "IE"), (.district, "district", "Leinster"), (.city, "city", "Dublin"),
        ]

        let mosaic = try #require(try Self.object(RecordFormat.mosaic.line(record, policy: .unrestricted))["location"] as? [String: Any])
        #expect((mosaic["latitude"] as? String == "53.3498000") == precise)
        #expect((mosaic["longitude"] != nil) == precise)
        #expect((mosaic["altitude"] != nil) == precise)
        #expect((mosaic["speed"] != nil) == precise)
        #expect(mosaic["accuracy"] as? String == "12.0")
        #expect(mosaic["provider"] as? String == "GPSD")
        for (level, key, value) in expectedAddress {
            #expect(mosaic[key] as? String == (precision >= level ? value : nil), "\(key) at \(precision)")
        }
        #expect(mosaic["street"] == nil && mosaic["streetNumber"] == nil)

        let veridium = try Self.object(RecordFormat.veridium.line(record, policy: .unrestricted))
        let coordinates = veridium["coordinates"] as? [String: Any]
        #expect((coordinates?["latitude"] as? Double == 53.3498) == precise)
        #expect((coordinates?["longitude"] as? Double == -6.2603) == precise)
        #expect(veridium["accuracy"] as? Double == 12)
        #expect(veridium["errorCode"] as? Int == 0)
        for (level, key, value) in expectedAddress {
            #expect(veridium[key] as? String == (precision >= level ? value : nil), "\(key) at \(precision)")
            #expect((veridium[key] != nil) == (precision >= level), "\(key) key at \(precision)")
        }
        #expect((veridium["street"] is NSNull) == (precision >= .street))
        #expect((veridium["streetNumber"] is NSNull) == (precision >= .streetNumber))

        let openLocate = try Self.object(RecordFormat.openlocate.line(record, policy: .unrestricted))
        #expect((openLocate["latitude"] as? Double == 53.3498) == precise)
        #expect((openLocate["longitude"] != nil) == precise)
        #expect((openLocate["altitude"] != nil) == precise)
        #expect(openLocate["horizontal_accuracy"] as? Double == 12)
        #expect(openLocate["country_code"] as? String == (precision >= .country ? "IE" : nil))
        #expect(openLocate["city"] as? String == (precision >= .city ? "Dublin" : nil))
    }

    @Test func countryCodeOnlyFromAnAccurateFix() throws {
        let policy = PrivacyPolicy()
        #expect(privacy(policy).applyOffline(to: Self.dublinRecord(accuracy: 50)).address?.countryCode == "IE")
        #expect(privacy(policy).applyOffline(to: Self.dublinRecord(accuracy: 50.1)).address?.countryCode == "XB")
        #expect(privacy(policy).applyOffline(to: Self.dublinRecord(accuracy: nil)).address?.countryCode == "XB")
        let lenient = PrivacyPolicy(accuracyThresholdMetres: 500, countryCodeReplacement: "ZZ")
        #expect(privacy(lenient).applyOffline(to: Self.dublinRecord(accuracy: 400)).address?.countryCode == "IE")
        let replaced = privacy(lenient).applyOffline(to: Self.dublinRecord(accuracy: 900))
        #expect(replaced.address?.countryCode == "ZZ")
        // Only the country code is withheld: the city is still the nearest place.
        #expect(replaced.address?.city == "Dublin")
        #expect(try Self.object(RecordFormat.veridium.line(replaced, policy: .unrestricted))["countryCode"] as? String == "ZZ")
    }

    @Test func attributeFilterKeepsOnlyTheNamedFields() throws {
        let filter = try LocationAttributes(parsingNames: ["coordinates", "countryCode"])
        let record = privacy(PrivacyPolicy(attributeFilter: filter)).applyOffline(to: Self.dublinRecord())
        let mosaic = try #require(try Self.object(RecordFormat.mosaic.line(record, policy: .unrestricted))["location"] as? [String: Any])
        #expect(Set(mosaic.keys) == ["latitude", "longitude", "countryCode"])
        let veridium = try Self.object(RecordFormat.veridium.line(record, policy: .unrestricted))
        #expect(Set(veridium.keys) == ["coordinates", "countryCode", "errorCode"])
        // The filter narrows the precision, never widens it.
        let narrowed = privacy(PrivacyPolicy(precision: .city, attributeFilter: filter)).applyOffline(to: Self.dublinRecord())
        let narrowedMosaic = try #require(try Self.object(RecordFormat.mosaic.line(narrowed, policy: .unrestricted))["location"] as? [String: Any])
        #expect(Set(narrowedMosaic.keys) == ["countryCode"])
        #expect(throws: GeolocateError.self) { try LocationAttributes(parsingNames: ["latitude", "colour"]) }
    }

    @Test func anUnreadableGazetteerGives1053AndKeepsTheLocation() throws {
        let record = privacy(PrivacyPolicy(), environment: ["GEOLOCATE_GAZETTEER": "/nonexistent/gazetteer.bin"])
            .applyOffline(to: Self.dublinRecord())
        #expect(record.errorCode == .geocodingFailed)
        #expect(record.address == nil)
        let mosaic = try Self.object(RecordFormat.mosaic.line(record, policy: .unrestricted))
        #expect((mosaic["location"] as? [String: Any])?["latitude"] as? String == "53.3498000")
        #expect(mosaic["errorCode"] as? Int == 1053)
        // At NONE no address is needed, so nothing fails.
        let none = privacy(PrivacyPolicy(precision: .none), environment: ["GEOLOCATE_GAZETTEER": "/nonexistent"])
            .applyOffline(to: Self.dublinRecord())
        #expect(none.errorCode == .none)
    }

    @Test func aRecordWithoutLocationKeepsItsErrorCode() throws {
        var denied = Self.dublinRecord()
        denied.fix = nil
        denied.errorCode = .permissionDenied
        let record = privacy(PrivacyPolicy(precision: .city)).applyOffline(to: denied)
        let veridium = try Self.object(RecordFormat.veridium.line(record, policy: .unrestricted))
        #expect(veridium["errorCode"] as? Int == 1055)
        #expect(veridium["city"] is NSNull)
        #expect(veridium["coordinates"] == nil)
        #expect(veridium["accuracy"] is NSNull)
    }

    /// What flush does to a record spooled under a wider level: in every format, the same
    /// bytes as the record made under the narrower one.
    @Test(arguments: LocationPrecision.allCases)
    func renderingUnderANarrowerPolicyEqualsMakingItNarrow(_ precision: LocationPrecision) throws {
        var record = privacy(PrivacyPolicy()).applyOffline(to: Self.dublinRecord())
        record.address?.street = "O'Connell Street"
        record.address?.streetNumber = "1"
        for filter in [LocationAttributes.all, try LocationAttributes(parsingNames: ["coordinates", "city", "provider"])] {
            let policy = PrivacyPolicy(precision: precision, attributeFilter: filter)
            var narrow = record
            narrow.attributes = policy.attributes
            for format in RecordFormat.allCases {
                #expect(format.line(record, policy: OutputPolicy(attributes: policy.attributes))
                    == format.line(narrow, policy: .unrestricted))
            }
        }
    }
}

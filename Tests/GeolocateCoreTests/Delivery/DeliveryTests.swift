import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Testing

/// The small rules of delivery: idempotency keys, Retry-After, backoff and body formats.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct DeliveryTests {
    @Test func idempotencyKeysNameTheRecordsAndTheEndpoint() throws {
        let key = IdempotencyKey.make(endpoint: "a", ids: ["x", "y"])
        #expect(key == IdempotencyKey.make(endpoint: "a", ids: ["x", "y"]))
        #expect(key != IdempotencyKey.make(endpoint: "b", ids: ["x", "y"]))
        #expect(key != IdempotencyKey.make(endpoint: "a", ids: ["x"]))
        #expect(key != IdempotencyKey.make(endpoint: "a", ids: ["y", "x"]))
        #expect(UUID(uuidString: key) != nil)
        // SHA-256 of "a\nx\ny" by coreutils, its first 128 bits with version 8 and the variant set.
        let digest = try Oracle.run(["sha256sum"], input: Data("a\nx\ny".utf8))
        var hex = Array(String(decoding: digest, as: UTF8.self).prefix(32))
        hex[12] = "8"
        hex[16] = Array("89ab")[Int(String(hex[16]), radix: 16)! & 0x3]
        let expected = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { String(hex[$0]) }.joined(separator: "-")
        #expect(key == expected)
    }

    @Test func retryAfterInSecondsOrAsAnHTTPDate() {
        let now: Int64 = 1_795_348_800_000  // Sun, 22 Nov 2026 12:00:00 GMT
        #expect(RetryAfter.milliseconds("120", nowMilliseconds: now) == 120_000)
        #expect(RetryAfter.milliseconds("Sun, 22 Nov 2026 12:00:30 GMT", nowMilliseconds: now) == 30_000)
        #expect(RetryAfter.milliseconds("Sun, 22 Nov 2026 11:59:00 GMT", nowMilliseconds: now) == 0)
        #expect(RetryAfter.milliseconds("soon", nowMilliseconds: now) == nil)
        #expect(RetryAfter.milliseconds("-5", nowMilliseconds: now) == nil)
    }

    @Test func backoffDoublesWithJitterUpToItsCap() {
        let policy = RetryPolicy()
        for attempt in 1...10 {
            let expected = min(30_000.0, 500 * pow(2, Double(attempt - 1)))
            let delay = Double(policy.delay(afterAttempt: attempt))
            #expect(delay >= expected * 0.5 - 1 && delay <= expected * 1.5 + 1)
        }
    }

    @Test func bodiesInBothFormats() throws {
        let fix = Fix(timestamp: 1_795_348_800_000, latitude: 53.3613367, longitude: -6.50562, mode: .threeD,
                      altitudeHAE: 79, speed: 1.5, horizontalAccuracy: 2.3, provider: .gpsd)
        let record = Record(action: "track", triggeredAt: 1_795_348_801_000, requestedMode: "force-current",
                            collectionMode: "force-current", fix: fix, permissions: [.fine], origin: .current,
                            fallbackReason: nil, errorCode: .none, context: .visitEntry,
                            device: DeviceInfo(id: "5c1caaf7-f436-48e5-bbc7-16021bba58ab", model: #"Kiosk "3","latitude":9 \ x"#,
                                               osVersion: "Debian 12"))
        let line = RecordFormat.mosaic.line(record, policy: .unrestricted)
        let ndjson = try EndpointFormat.mosaicNDJSON.body(for: [record, record], policy: .unrestricted)
        #expect(String(decoding: ndjson, as: UTF8.self) == line + "\n" + line + "\n")
        let body = try EndpointFormat.openlocate.body(for: [record], policy: .unrestricted)
        let document = try #require(JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
        let location = try #require((document["locations"] as? [[String: Any]])?.first)
        #expect(location["id"] as? String == record.id)
        #expect(location["latitude"] as? Double == 53.3613367 && location["longitude"] as? Double == -6.50562)
        #expect(location["utc_timestamp"] as? Int == 1_795_348_800 && location["utc_timestamp_received"] as? Int == 1_795_348_801)
        #expect(location["horizontal_accuracy"] as? Double == 2.3 && location["altitude"] as? Double == 79)
        #expect(location["location_context"] as? String == "visit_entry")
        #expect(location["device_model"] as? String == #"Kiosk "3","latitude":9 \ x"# && location["os_version"] as? String == "Debian 12")
        #expect(location["device_id"] as? String == "5c1caaf7-f436-48e5-bbc7-16021bba58ab")
        #expect(location["course"] == nil && location["vertical_accuracy"] == nil)
    }
}

import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Testing
import TestSupport

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct MosaicEncoderTests {
    @Test func matchesSpecExampleShape() throws {
        let fix = Fix(timestamp: 1_763_783_056_000, latitude: 53.3613367, longitude: -6.50562, mode: .threeD,
                      altitudeHAE: 116.94, speed: 1.234, course: 87.25, horizontalAccuracy: 12.06, verticalAccuracy: 20,
                      provider: .gpsd)
        let record = Record(id: "8a3c8f0e-6a0f-4b7c-9f5e-1d2c3b4a5f60", action: "login", triggeredAt: 1_763_783_057_123,
                            requestedMode: "default", collectionMode: "force-current", fix: fix, permissions: [.fine],
                            origin: .current, fallbackReason: nil, errorCode: .none)
        #expect(RecordFormat.mosaic.line(record, policy: .unrestricted) == """
            {"id":"8a3c8f0e-6a0f-4b7c-9f5e-1d2c3b4a5f60","action":"login","triggeredAt":1763783057123,\
            "requestedMode":"default","collectionMode":"force-current","location":{"latitude":"53.3613367",\
            "longitude":"-6.5056200","accuracy":"12.1","altitude":"116.9","provider":"GPSD","permissions":["fine"],\
            "recordTimestamp":1763783056000,"fixMode":"3D","speed":"1.23","course":"87.2","verticalAccuracy":"20.0"},\
            "locationSource":"current","ageMs":1123,"fallbackReason":null,"errorCode":0}
            """)
    }

    @Test func noLocationHasExplicitNulls() throws {
        let record = Record(action: "a\"b", triggeredAt: 5, requestedMode: "default", collectionMode: "force-current",
                            fix: nil, permissions: [], origin: nil, fallbackReason: .timeout, errorCode: .timeout)
        let json = RecordFormat.mosaic.line(record, policy: .unrestricted)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["location"] is NSNull)
        #expect(object["ageMs"] is NSNull)
        #expect(object["locationSource"] is NSNull)
        #expect(object["fallbackReason"] as? String == "timeout")
        #expect(object["errorCode"] as? Int == 1056)
        #expect(object["action"] as? String == "a\"b")
        #expect((object["id"] as? String)?.count == 36)
    }
}

/// The hand-written fixed-point formatting agrees with `%.Nf` (what `String(format:)` prints).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct DecimalTextTests {
    @Test func agreesWithPrintfOnManyValues() {
        var generator = SplitMix64(state: 2026)
        var mismatches: [String] = []
        let ranges: [ClosedRange<Double>] = [-180...180, -1...1, 0...100, 0...10_000, -0.0001...0.0001]
        for range in ranges {
            for digits in [0, 1, 2, 7] {
                for _ in 0..<40_000 {
                    let value = Double.random(in: range, using: &generator)
                    let expected = String(format: "%.\(digits)f", value)
                    let normalised = expected.hasPrefix("-") && Double(expected) == 0 ? String(expected.dropFirst()) : expected
                    if JSONWriter.decimal(value, digits: digits) != normalised { mismatches.append("\(value) \(digits)") }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
    }

    /// Values at and next to a half of the last digit, where the rounded product is exactly a
    /// half and only the exact product can say which way printf rounds.
    @Test func agreesWithPrintfAtHalves() {
        var generator = SplitMix64(state: 30)
        var mismatches: [String] = []
        for digits in [0, 1, 2, 3, 7] {
            let scale = (0..<digits).reduce(1.0) { value, _ in value * 10 }
            for _ in 0..<20_000 {
                let half = (Double(Int.random(in: -2_000_000...2_000_000, using: &generator)) + 0.5) / scale
                for value in [half, half.nextUp, half.nextDown] {
                    let expected = String(format: "%.\(digits)f", value)
                    let normalised = expected.hasPrefix("-") && Double(expected) == 0 ? String(expected.dropFirst()) : expected
                    if JSONWriter.decimal(value, digits: digits) != normalised { mismatches.append("\(value) \(digits)") }
                }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
    }

    @Test func tiesGoToEvenAsPrintfDoes() {
        #expect(JSONWriter.decimal(3165.05273505, digits: 7) == String(format: "%.7f", 3165.05273505))
        #expect(JSONWriter.decimal(61.25, digits: 1) == "61.2")
        #expect(JSONWriter.decimal(0.125, digits: 2) == "0.12")
        #expect(JSONWriter.decimal(-0.04, digits: 1) == "0.0")
        #expect(JSONWriter.decimal(-6.50562, digits: 7) == "-6.5056200")
        #expect(JSONWriter.decimal(53.0, digits: 0) == "53")
    }
}

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct RecordIDTests {
    @Test func idsAreLowerCaseVersion4UUIDsAndDistinct() {
        let ids = (0..<1000).map { _ in Record.newID() }
        #expect(Set(ids).count == 1000)
        for id in ids {
            #expect(UUID(uuidString: id)?.uuidString.lowercased() == id)
            let characters = Array(id)
            #expect(characters[14] == "4" && "89ab".contains(characters[19]))
        }
    }

    /// The hand-written text against `String(format:)` of the same bytes, version and variant set.
    @Test func uuidTextIsEachByteInHex() {
        for _ in 0..<200 {
            var bytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
            let text = Record.uuidText(bytes, version: 8)
            bytes[6] = bytes[6] & 0x0F | 0x80
            bytes[8] = bytes[8] & 0x3F | 0x80
            let hex = bytes.map { String(format: "%02x", $0) }
            let expected = [hex[0..<4], hex[4..<6], hex[6..<8], hex[8..<10], hex[10..<16]].map { $0.joined() }.joined(separator: "-")
            #expect(text == expected)
        }
    }
}

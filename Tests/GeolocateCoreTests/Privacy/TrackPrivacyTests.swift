import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

/// Privacy on what `track` prints and spools, in this process through `Tracker.command`
/// (moved from GeocoderEndToEndTests, which keeps what needs a geocoding server).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TrackPrivacyTests {
    let geolocate = InProcessTrigger()
    let drive = InProcessTrigger.example("maynooth-drive.nmea")

    func configure(_ settings: [(String, String)]) async throws {
        for (key, value) in [("permissions", "fine")] + settings {
            let result = await geolocate.run(["config", "set", key, value])
            try #require(result.status == 0, "\(result.stderr)")
        }
    }

    /// Track applies the same privacy to what it prints and what it spools, so flush sends no
    /// more; the country code still follows the fix's accuracy when `fields.*` leaves it out.
    @Test func trackSpoolsOnlyWhatThePrecisionAllows() async throws {
        try await configure([("privacy.precision", "DISTRICT"), ("fields.horizontalAccuracy", "false")])
        let result = await geolocate.run(["track", "--replay", drive, "--every-fix", "--stdout"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.count == 120)
        for line in lines {
            let location = try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["location"] as? [String: Any])
            #expect(location["latitude"] == nil && location["city"] == nil)
            #expect(location["district"] as? String == "Leinster")
            #expect(location["countryCode"] as? String == "IE" && location["accuracy"] == nil)
        }
        let spool = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock())
        let spooled = try spool.records(for: "any", after: 0, through: Int64.max, limit: 1000)
        #expect(spooled.count == 120)
        let spooledLines = spooled.map { RecordFormat.mosaic.line($0.record, policy: .unrestricted) }
        #expect(spooledLines.allSatisfy { !$0.contains("latitude") && $0.contains("\"district\":\"Leinster\"") })
    }
}

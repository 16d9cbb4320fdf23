import Foundation
import Testing

/// SPEC §10.1 through the binary: processes reporting at once keep a whole previous report.
/// Signals in trigger and track records on replays run in process (SignalsReplayTests).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct SignalsEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")
    let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")

    @Test func simultaneousReportsKeepAWholePreviousReport() throws {
        let runs = try (0..<6).map { index in
            try geolocate.start(["trigger", "login", "--replay", index % 2 == 0 ? drive : kiosk, "--permission", "fine", "--timeout", "10s"])
        }
        for run in runs {
            let result = try #require(run.finish(within: .seconds(30)))
            #expect(result.status == 0 && result.stderr.isEmpty, "\(result.stderr)")
        }
        let stored = try Data(contentsOf: URL(fileURLWithPath: geolocate.stateDirectory + "/previous-report-replay.json"))
        let report = try #require(try JSONSerialization.jsonObject(with: stored) as? [String: Any])
        #expect(["IE", "FR"].contains(report["countryCode"] as? String))
    }
}

import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Testing

/// `spoofingSuspected` and `jumped` on the real receivers of the gpsd corpus (never spoofed),
/// through `Tracker.command` in this process (moved from SpoofingEndToEndTests, which keeps the
/// generated drives).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct SpoofingReplayTests {
    let geolocate = InProcessTrigger()
    static let corpus = TestPaths.corpus

    func track(_ log: String) async throws -> [[String: Any]] {
        let result = await geolocate.run(["track", "--replay", log, "--permission", "fine", "--every-fix", "--stdout", "--no-spool"])
        #expect(result.status == 0, "\(log): \(result.stderr)")
        return result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    static func signals(_ record: [String: Any]) -> [String: Any] { record["signals"] as? [String: Any] ?? [:] }

    static let logs: [String] = ((try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? [])
        .filter { $0.hasSuffix(".log") }.sorted()

    @Test func realReceiversNeverLookSpoofed() async throws {
        try #require(Self.logs.count == 38, "the gpsd corpus is missing beside the project")
        var fixes = 0, withSatellites = 0, jumps = 0
        for log in Self.logs {
            for record in try await track(Self.corpus.appendingPathComponent(log).path) {
                fixes += 1
                let signals = Self.signals(record)
                #expect(signals["spoofingSuspected"] as? Bool == false, "\(log): \(signals)")
                if signals["satellites"] is [String: Any] { withSatellites += 1 }
                if signals["jumped"] as? Bool == true { jumps += 1 }
            }
        }
        // Most fixes of the corpus come with satellites in view, and the logs, played one after
        // another in one state directory, jump from one receiver's place to the next: the
        // satellite rules are put to the test.
        #expect(fixes > 700 && withSatellites > fixes / 2, "\(fixes) fixes, \(withSatellites) with satellites")
        #expect(jumps >= 10, "\(jumps) jumps")
    }
}

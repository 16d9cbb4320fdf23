import Foundation
import Testing

/// flush from cron (SPEC §14, issue 27 item 10): cron mails whatever a job prints, so a run
/// that delivered everything prints nothing; `--verbose` asks for the summary, and a problem
/// is still said.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct FlushQuietEndToEndTests {
    let geolocate = GeolocateProcess()

    func spool(_ count: Int) throws {
        let result = try geolocate.run(["track", "--replay", GeolocateProcess.example("maynooth-drive.nmea"), "--every-fix",
                                        "--permission", "fine", "--count", String(count)])
        try #require(result.status == 0, "\(result.stderr)")
    }

    @Test func aFlushThatDeliveredEverythingPrintsNothing() throws {
        let collector = try Collector()
        defer { collector.stop() }
        #expect(try geolocate.run(["config", "set", "endpoints.main.url", collector.url("/in")]).status == 0)
        try spool(4)
        let quiet = try geolocate.run(["flush"])
        #expect(quiet.status == 0 && quiet.stdout.isEmpty && quiet.stderr.isEmpty, "\(quiet.stderr)")
        #expect(collector.acceptedIDs("/in").count == 4)

        // Nothing to send is success too.
        let nothing = try geolocate.run(["flush"])
        #expect(nothing.status == 0 && nothing.stderr.isEmpty, "\(nothing.stderr)")

        try spool(2)
        let verbose = try geolocate.run(["flush", "--verbose"])
        #expect(verbose.status == 0 && verbose.stderr.contains("main: 2 sent, 0 pending, 0 dead-lettered"), "\(verbose.stderr)")
    }

    @Test func aFlushThatLeftRecordsPendingSaysSo() throws {
        let collector = try Collector()
        defer { collector.stop() }
        // A Retry-After longer than a flush waits: the records stay pending.
        try collector.script(["/in": ["script": [["status": 503, "retryAfter": "3600"]]]])
        #expect(try geolocate.run(["config", "set", "endpoints.main.url", collector.url("/in")]).status == 0)
        try spool(2)
        let failed = try geolocate.run(["flush"])
        #expect(failed.status == 75, "\(failed.stderr)")
        #expect(failed.stderr.contains("main: 0 sent, 2 pending"), "\(failed.stderr)")
    }
}

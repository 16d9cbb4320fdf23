import Foundation
import TestSupport
import Testing

/// Every output format pinned byte for byte in `Golden/` (reviewed files, not re-derived):
/// `trigger --format` on stdout, `track` lines, and the request bodies flush sends in each
/// endpoint format. What differs between runs is masked (record ids, the device id), and
/// what differs between machines is turned off (`fields.osVersion`, `fields.deviceModel`:
/// a VM has no DMI model). `GEOLOCATE_UPDATE_GOLDEN=1` rewrites the files; review the diff
/// before committing it. `trigger --format` and `track` lines are compared in process
/// (GoldenOutputReplayTests), against the same files.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct GoldenOutputTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    func expectGolden(_ name: String, _ output: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let (actual, golden) = try Golden.compared(name, output) else { return }
        #expect(actual == golden, "\(name) differs from its golden file", sourceLocation: sourceLocation)
    }

    /// Turns off the fields that depend on the machine.
    func withoutMachineFields() throws {
        for field in ["osVersion", "deviceModel"] {
            #expect(try geolocate.run(["config", "set", "fields.\(field)", "false"]).status == 0)
        }
    }

    @Test(arguments: ["openlocate", "mosaic-ndjson", "mosaic"])
    func flushBodies(_ format: String) throws {
        try withoutMachineFields()
        let collector = try Collector()
        defer { collector.stop() }
        for (key, value) in [("url", collector.url("/in")), ("format", format), ("batchSize", "3")] {
            #expect(try geolocate.run(["config", "set", "endpoints.golden.\(key)", value]).status == 0)
        }
        let track = try geolocate.run(["track", "--replay", drive, "--permission", "fine", "--count", "5", "--every-fix"])
        #expect(track.status == 0, "\(track.stderr)")
        let flush = try geolocate.run(["flush"])
        #expect(flush.status == 0, "\(flush.stderr)")
        let bodies = collector.requests("/in").map(\.body).joined(separator: "\n--- next request ---\n")
        try expectGolden("flush-\(format).txt", bodies + "\n")
    }

    /// The fleet formats as flush sends them: each request's method, target and body.
    ///
    /// Reviewed by hand, field by field, against the formats' own documents, not against
    /// geolocate's encoder: OwnTracks' JSON format (owntracks.org/booklet/tech/json, `_type`
    /// location: `lat`, `lon`, `tst` in epoch seconds, `acc` and `vac` in metres, `alt` above
    /// mean sea level, `vel` in km/h, `cog` in degrees, `tid` two characters, `created_at`)
    /// and Traccar's OsmAnd protocol (traccar.org/osmand: one request per position with `id`,
    /// `lat`, `lon`, `timestamp` in epoch seconds, `speed` in knots, `bearing`, `altitude`,
    /// `accuracy`); the values against the drive's log (`Examples/nmea/maynooth-drive.nmea`,
    /// its first three fixes' RMC, GGA and GST lines). FleetFormatsEndToEndTests checks the same fields
    /// against nmea-gen.py's truth on another drive.
    @Test(arguments: ["owntracks", "osmand"])
    func fleetRequests(_ format: String) throws {
        try withoutMachineFields()
        let collector = try Collector()
        defer { collector.stop() }
        for (key, value) in [("url", collector.url("/in")), ("format", format)] {
            #expect(try geolocate.run(["config", "set", "endpoints.golden.\(key)", value]).status == 0)
        }
        let track = try geolocate.run(["track", "--replay", drive, "--permission", "fine", "--count", "3", "--every-fix"])
        #expect(track.status == 0, "\(track.stderr)")
        let flush = try geolocate.run(["flush"])
        #expect(flush.status == 0, "\(flush.stderr)")
        let requests = collector.requests("/in").map { "\($0.method) \($0.target)\n\($0.body)" }
        try expectGolden("flush-\(format).txt", requests.joined(separator: "\n--- next request ---\n") + "\n")
    }
}

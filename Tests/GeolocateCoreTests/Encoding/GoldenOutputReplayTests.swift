import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import TestSupport
import Testing

/// `trigger --format` on stdout and `track` lines, pinned byte for byte by the integration
/// tests' `Golden/` files (reviewed files, not re-derived), made in this process through
/// `Trigger.respond` and `Tracker.command` (moved from GoldenOutputTests, which keeps the
/// request bodies flush sends). What differs between runs is masked, what differs between
/// machines is turned off. `GEOLOCATE_UPDATE_GOLDEN=1` rewrites the files; review the diff
/// before committing it.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct GoldenOutputReplayTests {
    let geolocate = InProcessTrigger()
    let drive = InProcessTrigger.example("maynooth-drive.nmea")

    func expectGolden(_ name: String, _ output: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let (actual, golden) = try Golden.compared(name, output) else { return }
        #expect(actual == golden, "\(name) differs from its golden file", sourceLocation: sourceLocation)
    }

    /// Turns off the fields that depend on the machine.
    func withoutMachineFields() async throws {
        for field in ["osVersion", "deviceModel"] {
            #expect(await geolocate.run(["config", "set", "fields.\(field)", "false"]).status == 0)
        }
    }

    @Test(arguments: ["mosaic", "veridium", "openlocate"])
    func triggerFormats(_ format: String) async throws {
        try await withoutMachineFields()
        let result = await geolocate.run(["trigger", "login", "--replay", drive, "--timeout", "10s",
                                        "--permission", "fine", "--format", format])
        #expect(result.status == 0, "\(result.stderr)")
        try expectGolden("trigger-\(format).json", result.stdout)
    }

    @Test func trackLines() async throws {
        try await withoutMachineFields()
        let result = await geolocate.run(["track", "--replay", drive, "--stdout", "--no-spool", "--permission", "fine",
                                        "--count", "5", "--every-fix"])
        #expect(result.status == 0, "\(result.stderr)")
        try expectGolden("track-mosaic.ndjson", result.stdout)
    }
}

import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Testing

/// `trigger --format` on stdout and `track` lines, pinned byte for byte by the integration
/// tests' `Golden/` files (reviewed files, not re-derived), made in this process through
/// `Trigger.respond` and `Tracker.command` (moved from GoldenOutputTests, which keeps the
/// request bodies flush sends). What differs between runs is masked, what differs between
/// machines is turned off. `GEOLOCATE_UPDATE_GOLDEN=1` rewrites the files; review the diff
/// before committing it.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct GoldenOutputReplayTests {
    let geolocate = InProcessTrigger()
    static let directory = TestPaths.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Golden")
    let drive = InProcessTrigger.example("maynooth-drive.nmea")

    /// `text` with the values that differ per run or machine replaced by their names: in JSON,
    /// and in an OsmAnd query (`id=` is the device id).
    static func masked(_ text: String) -> String {
        var result = text
        for key in ["id", "deviceId", "device_id"] {
            let pattern = "\"\(key)\":\"[^\"]*\""
            result = result.replacingOccurrences(of: pattern, with: "\"\(key)\":\"<\(key)>\"", options: .regularExpression)
        }
        return result.replacingOccurrences(of: "([?&])id=[^& \n]*", with: "$1id=<deviceId>", options: .regularExpression)
    }

    func expectGolden(_ name: String, _ output: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let file = Self.directory.appendingPathComponent(name)
        let actual = Self.masked(output)
        if ProcessInfo.processInfo.environment["GEOLOCATE_UPDATE_GOLDEN"] == "1" {
            try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            try actual.write(to: file, atomically: true, encoding: .utf8)
            return
        }
        let golden = try String(contentsOf: file, encoding: .utf8)
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

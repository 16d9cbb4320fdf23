import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `make install`'s layout: a binary found through PATH, run from anywhere, maps the gazetteer
/// from `PREFIX/share/geolocate/`, not from the source tree it was built in.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct InstalledGazetteerTests {
    @Test func theBinaryFindsTheGazetteerBesideItsPrefix() throws {
        let geolocate = GeolocateProcess()
        let prefix = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-prefix-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: prefix) }
        let share = prefix.appendingPathComponent("share/geolocate")
        try FileManager.default.createDirectory(at: prefix.appendingPathComponent("bin"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: share, withIntermediateDirectories: true)
        try Self.copyExecutable(GeolocateProcess.binary, to: prefix.appendingPathComponent("bin/geolocate").path)
        try FileManager.default.createSymbolicLink(
            at: share.appendingPathComponent("gazetteer.bin"),
            withDestinationURL: GeolocateProcess.projectRoot.appendingPathComponent("share/geolocate/gazetteer.bin"))

        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = prefix.appendingPathComponent("bin").path + ":" + (environment["PATH"] ?? "/usr/bin")
        environment["GEOLOCATE_CONFIG"] = geolocate.configPath
        environment["GEOLOCATE_STATE_DIR"] = geolocate.stateDirectory
        environment["GEOLOCATE_GAZETTEER"] = nil
        // env: `geolocate` is looked up on the PATH given here, as a shell would.
        let outcome = try Spawn.run(["/usr/bin/env", "geolocate", "trigger", "login", "--permission", "fine", "--verbose", "--format", "veridium",
                                     "--replay", GeolocateProcess.projectRoot.appendingPathComponent(GeolocateProcess.example("kiosk-gnss.nmea")).path],
                                    environment: environment, directory: FileManager.default.temporaryDirectory.path)
        let stdout = outcome.stdout
        let stderr = String(decoding: outcome.stderr, as: UTF8.self)

        #expect(outcome.status == 0, "\(stderr)")
        #expect(stderr.contains("gazetteer: \(share.path)/gazetteer.bin"), "\(stderr)")
        let veridium = try #require(try JSONSerialization.jsonObject(with: stdout) as? [String: Any])
        #expect(veridium["city"] as? String == "Lyon" && veridium["errorCode"] as? Int == 0)
    }

    /// Copies a binary with its descriptor closed on exec: a process other tests spawn
    /// meanwhile must not inherit it open for writing, or running the copy fails (ETXTBSY).
    static func copyExecutable(_ source: URL, to path: String) throws {
        let data = try Data(contentsOf: source)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o755)
        guard fd >= 0 else { throw CocoaError(.fileWriteUnknown) }
        defer { close(fd) }
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == data.count else { throw CocoaError(.fileWriteUnknown) }
    }
}

import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// File modes and owners of the configuration (SPEC §7, issue 27 item 4): an administrator
/// who opened the file to 0644 for a PAM stack running as the user, or gave it to another
/// user, keeps that after `config set`; and a file the user running geolocate may not read
/// says whom to make it readable for, not to move it away.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct ConfigPermissionsEndToEndTests {
    let geolocate = GeolocateProcess()
    /// The user the unprivileged runs use: `nobody`, which owns nothing here.
    static let nobody: uid_t = 65534

    func write(_ name: String, _ text: String, mode: mode_t) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let path = geolocate.home.appendingPathComponent(name).path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, mode) == 0)
        return path
    }

    func owner(_ path: String) -> (uid: uid_t, gid: gid_t, mode: mode_t) {
        var info = stat()
        _ = stat(path, &info)
        return (info.st_uid, info.st_gid, info.st_mode & 0o7777)
    }

    /// Runs the binary as `nobody` (setpriv), with the test's config and state paths.
    func runAsNobody(_ arguments: [String]) throws -> GeolocateProcess.Result {
        var process = geolocate
        process.executable = URL(fileURLWithPath: "/usr/bin/setpriv")
        return try process.run(["--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups", "--",
                                GeolocateProcess.binary.path] + arguments)
    }

    @Test func setKeepsTheModeAndTheOwnerOfAnotherUsersFile() throws {
        try #require(geteuid() == 0, "changing a file's owner needs root")
        let path = try write("config.json", "{}\n", mode: 0o644)
        #expect(chown(path, 1000, 1000) == 0)

        let set = try geolocate.run(["config", "set", "privacy.precision", "CITY", "--config", path])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try String(contentsOfFile: path, encoding: .utf8).contains("CITY"))
        let after = owner(path)
        #expect(after.uid == 1000 && after.gid == 1000, "owner \(after.uid):\(after.gid)")
        #expect(after.mode == 0o644, "mode \(String(after.mode, radix: 8))")

        // A file root makes from nothing is private.
        let fresh = geolocate.home.appendingPathComponent("fresh.json").path
        #expect(try geolocate.run(["config", "set", "permissions", "fine", "--config", fresh]).status == 0)
        #expect(owner(fresh).mode == 0o600 && owner(fresh).uid == 0)
    }

    @Test func aPermissionErrorSaysWhomToMakeTheFileReadableFor() throws {
        try #require(geteuid() == 0, "running as another user needs root")
        let config = try write("config.json", "{\"permissions\": [\"fine\"]}\n", mode: 0o600)
        for arguments in [["config", "show"], ["config", "validate"], ["trigger", "login", "--replay", GeolocateProcess.example("kiosk-gnss.nmea")]] {
            let result = try runAsNobody(arguments + ["--config", config])
            #expect(result.status == 78 && result.stdout.isEmpty, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr == "geolocate: cannot read \(config): permission denied (make it readable by UID \(Self.nobody), the user running geolocate)\n",
                    "\(arguments): \(result.stderr)")
        }

        // The zones file the readable configuration names, likewise.
        let zones = try write("zones.geojson", "{\"type\": \"FeatureCollection\", \"features\": []}\n", mode: 0o600)
        #expect(chmod(config, 0o644) == 0)
        try Data("{\"permissions\": [\"fine\"], \"policy\": {\"zones\": \"\(zones)\"}}\n".utf8).write(to: URL(fileURLWithPath: config))
        let validate = try runAsNobody(["config", "validate", "--config", config])
        #expect(validate.status == 78, "\(validate.stderr)")
        #expect(validate.stderr.contains("cannot read \(zones): permission denied (make it readable by UID \(Self.nobody)"), "\(validate.stderr)")
        #expect(!validate.stderr.contains("move it away"), "\(validate.stderr)")

        // A corrupt file keeps the advice that fits it.
        let corrupt = try write("corrupt.json", "{\"permissions\": \n", mode: 0o644)
        let show = try runAsNobody(["config", "show", "--config", corrupt])
        #expect(show.status == 78 && show.stderr.contains("move it away"), "\(show.stderr)")
    }
}

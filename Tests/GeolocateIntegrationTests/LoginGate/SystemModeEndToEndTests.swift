import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §7: root with neither `GEOLOCATE_CONFIG` nor `XDG_CONFIG_HOME` uses the packaged
/// units' files, so PAM, cron, an admin's shell and the services see one spool; `--state-dir`
/// chooses the state directory on every command.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct SystemModeEndToEndTests {
    let geolocate = GeolocateProcess()

    @Test(.enabled(if: geteuid() == 0, "system mode is root's")) func rootWithoutAConfigVariableUsesTheSystemFiles() throws {
        let system = try geolocate.run(["config", "path"], environment: ["GEOLOCATE_CONFIG": "", "XDG_CONFIG_HOME": ""])
        #expect(system.stdout == "/etc/geolocate/config.json\n", "\(system)")
        let xdg = try geolocate.run(["config", "path"], environment: ["GEOLOCATE_CONFIG": "", "XDG_CONFIG_HOME": "/srv/xdg"])
        #expect(xdg.stdout == "/srv/xdg/geolocate/config.json\n", "\(xdg)")
        // status shows the services' spool, and (read-only) makes no directory for it.
        let existed = FileManager.default.fileExists(atPath: "/var/lib/geolocate")
        let status = try geolocate.run(["status", "--json"], environment: ["GEOLOCATE_CONFIG": "", "XDG_CONFIG_HOME": "", "GEOLOCATE_STATE_DIR": ""])
        let object = try status.json()
        #expect(object["stateDirectory"] as? String == "/var/lib/geolocate" && object["configPath"] as? String == "/etc/geolocate/config.json",
                "\(status.stdout)")
        #expect(FileManager.default.fileExists(atPath: "/var/lib/geolocate") == existed)
    }

    /// Another user is never in system mode: its files are its own, under its home.
    @Test(.enabled(if: geteuid() == 0, "needs root to run as another user")) func anotherUserKeepsItsOwnFiles() throws {
        // A copy of the binary any user may run: the checkout may be private to root.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-bin-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        chmod(directory.path, 0o755)
        let binary = directory.appendingPathComponent("geolocate").path
        try Tool.run(["cp", GeolocateProcess.binary.path, binary])
        var process = GeolocateProcess()
        process.executable = URL(fileURLWithPath: "/usr/bin/setpriv")
        // A process another test forks while the copy is being written holds it open for
        // writing until it execs (ETXTBSY): run again until that has passed.
        var result = GeolocateProcess.Result(status: -1, stdout: "", stderr: "")
        _ = try waitUntil(.seconds(10)) {
            result = try process.run(["--reuid=nobody", "--regid=nogroup", "--clear-groups", binary, "config", "path"],
                                     environment: ["GEOLOCATE_CONFIG": "", "XDG_CONFIG_HOME": "", "HOME": "/home/nobody-test"])
            return !result.stderr.contains("Text file busy")
        }
        #expect(result.stdout == "/home/nobody-test/.config/geolocate/config.json\n", "\(result)")
    }

    @Test func stateDirChoosesTheStateDirectoryOverTheEnvironment() throws {
        let chosen = geolocate.home.appendingPathComponent("chosen").path
        _ = try geolocate.run(["config", "set", "permissions", "fine"])
        let track = try geolocate.run(["track", "--replay", GeolocateProcess.example("kiosk-gnss.nmea"), "--state-dir", chosen])
        #expect(track.status == 0, "\(track.stderr)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: chosen)
        #expect(!kept.isEmpty, "the spool is in --state-dir")
        let triggerChosen = geolocate.home.appendingPathComponent("trigger-chosen").path
        let trigger = try geolocate.run(["trigger", "login", "--replay", GeolocateProcess.example("kiosk-gnss.nmea"), "--state-dir", triggerChosen])
        #expect(trigger.status == 0, "\(trigger.stderr)")
        #expect(FileManager.default.fileExists(atPath: triggerChosen + "/last-known-replay.json"), "trigger keeps its state in --state-dir")
        #expect(!FileManager.default.fileExists(atPath: geolocate.stateDirectory), "the environment's directory is untouched")
        let status = try geolocate.run(["status", "--json", "--state-dir", chosen])
        let object = try status.json()
        #expect(object["stateDirectory"] as? String == chosen, "\(status.stdout)")
        let empty = try geolocate.run(["status", "--state-dir", ""])
        #expect(empty.status == 64 && empty.stderr.contains("--state-dir"), "\(empty)")
    }
}

/// Root working in a state directory that belongs to the service user (an admin's `geolocate
/// flush` in system mode) leaves files the service can still open.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct ServiceStateDirectoryEndToEndTests {
    @Test(.enabled(if: geteuid() == 0, "needs root")) func filesRootMakesThereBelongToTheDirectorysOwner() throws {
        let geolocate = GeolocateProcess()
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let nobody = getpwnam("nobody").pointee
        chown(geolocate.stateDirectory, nobody.pw_uid, nobody.pw_gid)
        chmod(geolocate.stateDirectory, 0o750)
        _ = try geolocate.run(["config", "set", "permissions", "fine"])
        let track = try geolocate.run(["track", "--replay", GeolocateProcess.example("kiosk-gnss.nmea")])
        #expect(track.status == 0, "\(track.stderr)")
        #expect(!track.stderr.contains("open to other users"), "0750 is the package's choice: \(track.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: geolocate.stateDirectory)[.posixPermissions] as? Int == 0o750)
        let names = try FileManager.default.contentsOfDirectory(atPath: geolocate.stateDirectory)
        #expect(names.contains("spool.sqlite") && names.contains("spool.lock"), "\(names)")
        for name in names {
            var info = stat()
            #expect(stat(geolocate.stateDirectory + "/" + name, &info) == 0)
            if name == "gate" {
                // Root's own decision state (its previous report), which the service user must not reach (SPEC §14).
                #expect(info.st_uid == 0 && info.st_mode & 0o7777 == 0o700, "gate/ is root's, 0700: \(info.st_uid), \(String(info.st_mode & 0o7777, radix: 8))")
                continue
            }
            #expect(info.st_uid == nobody.pw_uid && info.st_gid == nobody.pw_gid, "\(name) belongs to \(info.st_uid):\(info.st_gid)")
        }
    }
}

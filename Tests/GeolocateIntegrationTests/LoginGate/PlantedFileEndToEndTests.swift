import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §14, "The user does not control the hook": root runs geolocate in a state directory
/// that belongs to the service user (`nobody` here, the `geolocate` user of a device), who may
/// plant anything there. A symbolic link, a hard link or a FIFO where geolocate expects one of
/// its files is refused (73, or `policy.onError` for the gate) and never followed: the file it
/// names keeps its owner, mode and contents, whatever command root runs.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .enabled(if: geteuid() == 0, "needs root to be root"))
struct PlantedFileEndToEndTests {
    /// Every name geolocate keeps in a state directory, written here independently of
    /// `StateFile` (SQLite's companions and the key's lock included).
    static let stateNames = [
        "spool.sqlite", "spool.sqlite-wal", "spool.sqlite-shm", "spool.sqlite-journal", "spool.lock", "flush.lock",
        "last-known.json", "last-known-replay.json", "previous-report.json", "previous-report-replay.json",
        "previous-report.lock", "device-id", "geocoder-cache.sqlite", "geocoder-cache.sqlite-wal",
        "geocoder-cache.sqlite-shm", "geocoder-cache.sqlite-journal", "device-key", "device-key.lock", "gate",
    ]
    /// Names geolocate only ever replaces (a new file renamed over whatever is there) and never
    /// opens for writing: what is planted there is replaced, never followed.
    static let replacedNames = ["status.json"]
    static let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")
    /// The service user's uid and gid.
    static let nobody: (pw_uid: uid_t, pw_gid: gid_t) = { let entry = getpwnam("nobody").pointee; return (entry.pw_uid, entry.pw_gid) }()

    /// A root-owned 0600 file outside the state directory: what a planted link points at.
    struct Victim {
        let path: String
        static let contents = Data("root's secret\n".utf8)

        init(in home: URL) throws {
            path = home.appendingPathComponent("victim").path
            try Victim.contents.write(to: URL(fileURLWithPath: path))
            chown(path, 0, 0)
            chmod(path, 0o600)
        }

        /// Fails the test unless the file is as it was made: root's, 0600, the same bytes.
        func expectUntouched(_ context: String) {
            var info = stat()
            #expect(lstat(path, &info) == 0, "\(context): the victim is gone")
            #expect(info.st_uid == 0 && info.st_gid == 0, "\(context): the victim now belongs to \(info.st_uid):\(info.st_gid)")
            #expect(info.st_mode & 0o7777 == 0o600, "\(context): the victim's mode is now \(String(info.st_mode & 0o7777, radix: 8))")
            #expect(FileManager.default.contents(atPath: path) == Victim.contents, "\(context): the victim's contents changed")
        }
    }

    /// A device as deployed: a home root owns (0755), the state directory of the service user
    /// (0750), a config root wrote, and a full run of every command there as root, so the
    /// directory holds what it holds in service.
    static func deployed() throws -> (GeolocateProcess, refusing: Int32) {
        let geolocate = GeolocateProcess()
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        chmod(geolocate.home.path, 0o755)
        chown(geolocate.stateDirectory, nobody.pw_uid, nobody.pw_gid)
        chmod(geolocate.stateDirectory, 0o750)
        let (port, held) = try Loopback.refusingPort()
        for (key, value) in [("permissions", "fine"), ("endpoints.fleet.url", "http://127.0.0.1:\(port)/records"),
                             ("endpoints.fleet.timeout", "1s")] {
            let set = try geolocate.run(["config", "set", key, value])
            #expect(set.status == 0, "\(set)")
        }
        for arguments in [["track", "--replay", kiosk], ["trigger", "login", "--replay", kiosk], ["flush"], ["key", "init"]] {
            let run = try geolocate.run(arguments)
            #expect(run.status == 0 || (arguments == ["flush"] && run.status == 75), "\(arguments): \(run)")
        }
        return (geolocate, held)
    }

    /// Copies the deployed state directory, as it is, for one case.
    static func copy(of deployed: GeolocateProcess) throws -> GeolocateProcess {
        let geolocate = GeolocateProcess()
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        chmod(geolocate.home.path, 0o755)
        try Tool.run(["cp", "-a", deployed.stateDirectory, geolocate.stateDirectory])
        try Tool.run(["cp", "-a", deployed.configPath, geolocate.configPath])
        return geolocate
    }

    /// Runs `body` as `nobody`, the owner of the state directory: what it may do there, it plants.
    static func asServiceUser(_ arguments: [String]) throws {
        try Tool.run(["setpriv", "--reuid=\(nobody.pw_uid)", "--regid=\(nobody.pw_gid)", "--clear-groups"] + arguments)
    }

    /// The commands root runs, and for each the names it must open (so must refuse) in a
    /// state directory of another user's; it may refuse others (exit 73), never follow one.
    static let commands: [(arguments: [String], opens: Set<String>, otherwise: Set<Int32>)] = [
        (["trigger", "login", "--replay", kiosk], ["last-known-replay.json", "gate"], [0]),
        (["track", "--replay", kiosk], ["spool.sqlite", "spool.sqlite-wal", "spool.sqlite-shm", "spool.sqlite-journal",
                                        "spool.lock", "last-known-replay.json", "device-id", "gate"], [0]),
        (["flush"], ["flush.lock", "spool.sqlite", "spool.sqlite-wal", "spool.sqlite-shm", "spool.sqlite-journal", "spool.lock"], [75]),
        (["status"], ["spool.sqlite", "spool.sqlite-wal", "spool.sqlite-shm", "spool.sqlite-journal", "last-known.json"], [0, 65, 69]),
        (["export", "--format", "csv"], ["spool.sqlite", "spool.sqlite-wal", "spool.sqlite-shm", "spool.sqlite-journal"], [0]),
        (["key", "show"], ["device-key"], [0]),
    ]

    /// Runs every command as root against `geolocate`'s state directory where `name` was
    /// replaced by a planted `kind`, then the gate through a real PAM stack.
    static func expectRefused(_ name: String, planted kind: String, in geolocate: GeolocateProcess, victim: Victim) throws {
        for command in commands {
            let run = try geolocate.run(command.arguments, timeLimit: .seconds(60))
            let context = "\(kind) at \(name), geolocate \(command.arguments.joined(separator: " "))"
            victim.expectUntouched(context)
            if command.opens.contains(name) || run.status == 73 {
                #expect(run.status == 73 && run.stderr.contains("refusing \(geolocate.stateDirectory)/\(name):"), "\(context): \(run)")
                #expect(run.stdout.isEmpty, "\(context): nothing printed for a refused run: \(run.stdout)")
            } else {
                #expect(command.otherwise.contains(run.status), "\(context): \(run)")
            }
        }
        let gate = try login(in: geolocate)
        victim.expectUntouched("\(kind) at \(name), the gate")
        #expect(gate.status == 1, "the gate follows policy.onError (deny): \(gate.log)")
        #expect(gate.decisionLines.count == 1 && gate.decisionLines[0].contains("refusing \(geolocate.stateDirectory)/\(name)"),
                "\(kind) at \(name): \(gate.log)")
    }

    /// In a copy of `deployed`, replaces `name` by what `make` plants (given the victim's
    /// path and the name's), then expects every command and the gate to refuse it.
    /// - Returns: the planted path.
    @discardableResult
    static func plant(_ name: String, kind: String, in deployed: GeolocateProcess,
                      _ make: (_ victim: String, _ path: String) throws -> Void) throws -> String {
        let geolocate = try copy(of: deployed)
        let victim = try Victim(in: geolocate.home)
        let path = geolocate.stateDirectory + "/" + name
        try? FileManager.default.removeItem(atPath: path)
        try make(victim.path, path)
        try expectRefused(name, planted: kind, in: geolocate, victim: victim)
        return path
    }

    /// `trigger login --pam` as pam_exec runs it, with the state directory the service user's.
    static func login(in geolocate: GeolocateProcess) throws -> PAMStack.Outcome {
        let arguments = ["trigger", "login", "--pam", "--config", geolocate.configPath, "--state-dir", geolocate.stateDirectory,
                         "--replay", GeolocateProcess.projectRoot.appendingPathComponent(kiosk).path]
        return try PAMStack.run(service: PAMStack.service(binary: GeolocateProcess.binary.path, arguments: arguments),
                                user: "alice", operation: "acct_mgmt", serviceUID: nobody.pw_uid, in: geolocate.home)
    }

    /// The issue's own steps: before the fix, root handed the victim to `nobody`.
    @Test func aLinkedLockIsNotHandedToTheServiceUser() throws {
        let (deployed, held) = try Self.deployed()
        defer { close(held) }
        let geolocate = try Self.copy(of: deployed)
        let victim = try Victim(in: geolocate.home)
        try Self.asServiceUser(["ln", "-s", victim.path, geolocate.stateDirectory + "/previous-report.lock"])
        let trigger = try geolocate.run(["trigger", "login", "--replay", Self.kiosk])
        #expect(trigger.status == 0, "root's previous report is in gate/, so the planted lock is not its: \(trigger)")
        victim.expectUntouched("the issue's steps")
        var info = stat()
        #expect(lstat(geolocate.stateDirectory + "/gate", &info) == 0 && info.st_mode & S_IFMT == S_IFDIR)
        #expect(info.st_uid == 0 && info.st_mode & 0o777 == 0o700, "gate/ is root's, 0700")
        #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/gate/previous-report-replay.json"))
    }

    /// A symbolic link at every state file name, and at every name a full run left in the
    /// directory (a fuzz over what is really there, whatever this list forgets).
    @Test func aLinkAtAnyNameIsRefusedByEveryCommand() throws {
        let (deployed, held) = try Self.deployed()
        defer { close(held) }
        let left = try FileManager.default.contentsOfDirectory(atPath: deployed.stateDirectory)
        #expect(Set(left).isSubset(of: Self.stateNames + Self.replacedNames), "a name this test does not know: \(left)")
        for name in Self.replacedNames {
            let geolocate = try Self.copy(of: deployed)
            let victim = try Victim(in: geolocate.home)
            let path = geolocate.stateDirectory + "/" + name
            try? FileManager.default.removeItem(atPath: path)
            try Self.asServiceUser(["ln", "-s", victim.path, path])
            let status = try geolocate.run(["status", "--json"])
            #expect(status.status == 0, "\(status)")
            let track = try geolocate.run(["track", "--replay", Self.kiosk])
            #expect(track.status == 0, "\(track)")
            victim.expectUntouched("a symbolic link at \(name), track")
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "the link at \(name) was replaced by a file")
        }
        for name in Set(Self.stateNames).union(left).subtracting(Self.replacedNames).sorted() {
            try Self.plant(name, kind: "a symbolic link", in: deployed) { victim, path in
                try Self.asServiceUser(["ln", "-s", victim, path])
            }
        }
    }

    /// Where protected_hardlinks is off, the service user can link root's files; root makes
    /// the links here. The owner is root's own, so only the link count tells.
    @Test(arguments: ["spool.sqlite", "spool.sqlite-wal", "spool.lock", "flush.lock", "last-known.json", "last-known-replay.json",
                      "device-id", "device-key"])
    func aHardLinkToRootsFileIsRefused(_ name: String) throws {
        let (deployed, held) = try Self.deployed()
        defer { close(held) }
        try Self.plant(name, kind: "a hard link", in: deployed) { victim, path in #expect(link(victim, path) == 0) }
    }

    /// A FIFO where a lock or a state file is: refused at once, never waited on, by the gate
    /// (its decision names the FIFO, not its timeout) and by every command.
    @Test(arguments: ["spool.lock", "flush.lock", "previous-report.lock", "last-known.json", "spool.sqlite-shm"])
    func aFIFOIsRefusedWithoutWaiting(_ name: String) throws {
        let (deployed, held) = try Self.deployed()
        defer { close(held) }
        let path = try Self.plant(name, kind: "a FIFO", in: deployed) { _, path in try Self.asServiceUser(["mkfifo", path]) }
        var info = stat()
        #expect(lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO, "the FIFO is still there, unopened")
    }

    /// The service user may hold `spool.lock` for ever: root's track then keeps its records
    /// in memory, and a stop still ends it (73, saying how many were not committed) instead
    /// of it waiting on the lock past every signal (each try waits at most 5 s).
    @Test func aLockTheServiceUserHoldsStallsNoCommandPastAStop() throws {
        let (deployed, held) = try Self.deployed()
        defer { close(held) }
        let geolocate = try Self.copy(of: deployed)
        let lock = geolocate.stateDirectory + "/spool.lock"
        let holder = try GeolocateProcess.Running(
            ["setpriv", "--reuid=\(Self.nobody.pw_uid)", "--regid=\(Self.nobody.pw_gid)", "--clear-groups", "flock", lock, "-c", "echo held; exec sleep 120"],
            stdin: false, environment: ProcessInfo.processInfo.environment, directory: geolocate.home.path)
        #expect(waitUntil(.seconds(20)) { holder.stdoutLines.contains { $0.text == "held" } }, "the service user holds the lock")
        let track = try geolocate.start(["track", "--replay", Self.kiosk, "--stdout"])
        // Records made (printed) and kept in memory: the state the stop must end.
        #expect(waitUntil(.seconds(30)) { track.stderr.contains("spool.lock is locked by another process") && !track.stdoutLines.isEmpty },
                "\(track.stderr)")
        #expect(kill(track.pid, 0) == 0, "track is alive, waiting on the lock, when the stop lands")
        kill(track.pid, SIGTERM)
        let stopped = try #require(track.finish(within: .seconds(20)), "track waited on the lock past SIGTERM")
        #expect(stopped.status == 73 && stopped.stderr.contains("could not be committed"), "\(stopped)")
        #expect(kill(holder.pid, 0) == 0, "the lock was still held throughout")
        _ = holder.finish(within: .milliseconds(1))
    }

    /// The service user may replace root's `gate/` (it owns the directory around it), but
    /// root then refuses what is there instead of keeping its decisions in it.
    @Test func aGateDirectoryOfTheServiceUsersIsRefused() throws {
        let (deployed, held) = try Self.deployed()
        defer { close(held) }
        let geolocate = try Self.copy(of: deployed)
        let gate = geolocate.stateDirectory + "/gate"
        try Tool.run(["mv", gate, geolocate.stateDirectory + "/gate.old"])
        try Self.asServiceUser(["mkdir", "-m", "0700", gate])
        let trigger = try geolocate.run(["trigger", "login", "--replay", Self.kiosk])
        #expect(trigger.status == 73 && trigger.stderr.contains("refusing \(gate):") && trigger.stdout.isEmpty, "\(trigger)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: gate).isEmpty, "root wrote nothing in the service user's gate/")
    }
}

import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// status and export are read-only (SPEC §12): run as a user who may only read the state
/// directory, or as root on the service user's, they print the truth and leave the directory
/// exactly as it was: names, sizes, modes, owners and mtimes.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct StatusReadOnlyEndToEndTests {
    let geolocate = GeolocateProcess()
    /// The reader: `nobody`, with a group that is not root's.
    static let readerUID = 65534
    static let readerGID = 4242

    func set(_ key: String, _ value: String) throws {
        let result = try geolocate.run(["config", "set", key, value])
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// A replayed source (status reads no device) and one endpoint; the config readable by all.
    func configure() throws {
        try set("source", "nmea:" + GeolocateProcess.projectRoot.appendingPathComponent(GeolocateProcess.example("kiosk-gnss.nmea")).path)
        try set("endpoints.main.url", "http://127.0.0.1:9/in")
        chmod(geolocate.home.path, 0o755)
        chmod(geolocate.configPath, 0o644)
    }

    /// Spools `epochs` fixes of a drive that began 10 minutes ago, as root.
    func spoolDrive(epochs: Int) throws {
        let log = geolocate.home.appendingPathComponent("drive.nmea").path
        try Tool.generateNMEA(["--epochs", String(epochs), "--seed", "8", "--out", log,
                                 "--start", ISO8601DateFormatter().string(from: Date().addingTimeInterval(-600))])
        let result = try geolocate.run(["track", "--replay", log, "--every-fix", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// Every entry of `directory` and the directory itself: name, size, mode, owner, mtime.
    func listing(_ directory: String) -> String {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        return (["."] + names).map { name in
            var info = stat()
            guard lstat(directory + "/" + name, &info) == 0 else { return "\(name): \(String(cString: strerror(errno)))" }
            return "\(name) \(info.st_size) \(String(info.st_mode, radix: 8)) \(info.st_uid):\(info.st_gid) \(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
        }.joined(separator: "\n")
    }

    /// Runs the binary as `uid`:`gid` with no supplementary groups, from a copy the user can
    /// reach (the build directory may not be).
    func run(as uid: Int, _ gid: Int, _ arguments: [String]) throws -> GeolocateProcess.Result {
        let bin = geolocate.home.appendingPathComponent("bin")
        let copy = bin.appendingPathComponent("geolocate").path
        if !FileManager.default.fileExists(atPath: copy) {
            try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
            // By cp, not in this process: a parallel test forking while the copy is open for writing would hold it and make its exec fail with ETXTBSY.
            try Tool.run(["cp", GeolocateProcess.binary.path, copy])
            chmod(bin.path, 0o755)
            chmod(copy, 0o755)
        }
        var reader = geolocate
        reader.executable = URL(fileURLWithPath: "/usr/bin/setpriv")
        return try reader.run(["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", copy] + arguments,
                              environment: ["HOME": geolocate.home.path])
    }

    func removeBinaryCopy() {
        try? FileManager.default.removeItem(at: geolocate.home.appendingPathComponent("bin"))
    }

    func owner(_ path: String, uid: Int, gid: Int, mode: mode_t) {
        chown(path, uid_t(uid), gid_t(gid))
        chmod(path, mode)
    }

    @Test func aGroupReaderSeesEverythingAndChangesNothing() throws {
        defer { removeBinaryCopy() }
        try configure()
        try spoolDrive(epochs: 5)
        let state = geolocate.stateDirectory
        // The service's layout for a monitoring user in its group: 0750 directory, 0640 files.
        owner(state, uid: 0, gid: Self.readerGID, mode: 0o750)
        for name in try FileManager.default.contentsOfDirectory(atPath: state) {
            owner(state + "/" + name, uid: 0, gid: Self.readerGID, mode: 0o640)
        }
        let before = listing(state)
        let text = try run(as: Self.readerUID, Self.readerGID, ["status"])
        #expect(text.status == 0 && text.stderr.isEmpty, "\(text.status) \(text.stderr)")
        #expect(text.stdout.contains("pending:") && text.stdout.contains("5 (oldest"), "\(text.stdout)")
        let json = try run(as: Self.readerUID, Self.readerGID, ["status", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let spool = try json.json()["spool"] as? [String: Any]
        #expect(spool?["pending"] as? Int == 5 && spool?["state"] as? String == "ok", "\(json.stdout)")
        let check = try run(as: Self.readerUID, Self.readerGID, ["status", "--check"])
        #expect(check.status == 0 && check.stdout.hasPrefix("GEOLOCATE OK - 5 pending"), "\(check.status) \(check.stdout)")
        let csv = try run(as: Self.readerUID, Self.readerGID, ["export", "--format", "csv"])
        #expect(csv.status == 0, "\(csv.stderr)")
        #expect(csv.stdout.split(separator: "\r\n").count == 6, "a header and 5 rows: \(csv.stdout)")
        #expect(listing(state) == before)
    }

    @Test func rootLeavesTheServiceUsersStateAsItWas() throws {
        try configure()
        try spoolDrive(epochs: 3)
        let state = geolocate.stateDirectory
        owner(state, uid: Self.readerUID, gid: Self.readerUID, mode: 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: state) {
            owner(state + "/" + name, uid: Self.readerUID, gid: Self.readerUID, mode: 0o600)
        }
        let before = listing(state)
        for arguments in [["status"], ["status", "--json"], ["status", "--check"], ["export", "--format", "gpx"]] {
            let result = try geolocate.run(arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
        }
        // No root-owned spool.lock, -wal or -shm for the service to trip on.
        #expect(listing(state) == before)
    }

    @Test func aReadOnlyDirectoryWithAWriterLogIsReadThroughTheLog() throws {
        defer { removeBinaryCopy() }
        try configure()
        try spoolDrive(epochs: 4)
        let state = geolocate.stateDirectory, spool = state + "/spool.sqlite"
        // A writer killed after a commit that is only in the log: one record more there.
        _ = try Tool.run(["python3", "-c", """
            import os, sqlite3, sys
            db = sqlite3.connect(sys.argv[1], isolation_level=None)
            db.execute("PRAGMA wal_autocheckpoint = 0")
            columns = ", ".join(row[1] for row in db.execute("PRAGMA table_info(records)") if row[1] != "seq")
            db.execute(f"INSERT INTO records ({columns}) SELECT {columns} FROM records WHERE seq = (SELECT MIN(seq) FROM records)")
            os._exit(0)
            """, spool])
        try #require(FileManager.default.fileExists(atPath: spool + "-wal") && FileManager.default.fileExists(atPath: spool + "-shm"))
        for name in try FileManager.default.contentsOfDirectory(atPath: state) { chmod(state + "/" + name, 0o444) }
        chmod(state, 0o555)
        defer { chmod(state, 0o755) }
        let before = listing(state)
        let json = try run(as: Self.readerUID, Self.readerUID, ["status", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        #expect((try json.json()["spool"] as? [String: Any])?["pending"] as? Int == 5, "\(json.stdout)")
        let check = try run(as: Self.readerUID, Self.readerUID, ["status", "--check"])
        #expect(check.status == 0 && check.stdout.hasPrefix("GEOLOCATE OK - 5 pending"), "\(check.status) \(check.stdout)")
        let csv = try run(as: Self.readerUID, Self.readerUID, ["export", "--format", "csv"])
        #expect(csv.status == 0 && csv.stdout.split(separator: "\r\n").count == 6, "\(csv.status) \(csv.stderr)")
        #expect(listing(state) == before)
    }

    @Test func aReadOnlyDirectoryWithAClosedSpoolIsRead() throws {
        defer { removeBinaryCopy() }
        try configure()
        try spoolDrive(epochs: 2)
        let state = geolocate.stateDirectory
        try #require(!FileManager.default.fileExists(atPath: state + "/spool.sqlite-wal"))
        for name in try FileManager.default.contentsOfDirectory(atPath: state) { chmod(state + "/" + name, 0o444) }
        chmod(state, 0o555)
        defer { chmod(state, 0o755) }
        let before = listing(state)
        let check = try run(as: Self.readerUID, Self.readerUID, ["status", "--check"])
        #expect(check.status == 0 && check.stdout.hasPrefix("GEOLOCATE OK - 2 pending"), "\(check.status) \(check.stdout)")
        let gpx = try run(as: Self.readerUID, Self.readerUID, ["export", "--format", "gpx"])
        #expect(gpx.status == 0 && gpx.stdout.components(separatedBy: "<trkpt ").count == 3, "\(gpx.status) \(gpx.stderr)")
        #expect(listing(state) == before)
    }

    @Test func aDamagedSpoolIsReportedAsJSONAndCritical() throws {
        try configure()
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let spool = geolocate.stateDirectory + "/spool.sqlite"
        try Data(repeating: 0xA5, count: 3000).write(to: URL(fileURLWithPath: spool))
        let before = listing(geolocate.stateDirectory)
        let json = try geolocate.run(["status", "--json"])
        #expect(json.status == 65, "\(json.status) \(json.stderr)")
        let report = try json.json()
        let state = try #require(report["spool"] as? [String: Any])
        #expect(state["state"] as? String == "damaged" && (state["problem"] as? String)?.contains("not a SQLite database") == true, "\(state)")
        #expect(json.stderr.hasPrefix("geolocate: the spool \(spool) is damaged") && json.stderr.split(separator: "\n").count == 1, "\(json.stderr)")
        let check = try geolocate.run(["status", "--check"])
        #expect(check.status == 2 && check.stdout.hasPrefix("GEOLOCATE CRITICAL - spool damaged: "), "\(check.status) \(check.stdout)")
        let text = try geolocate.run(["status"])
        #expect(text.status == 65 && text.stdout.contains("damaged: it is not a SQLite database"), "\(text.status) \(text.stdout)")
        let export = try geolocate.run(["export", "--format", "csv"])
        #expect(export.status == 65 && export.stdout.isEmpty && export.stderr.hasPrefix("geolocate: the spool"), "\(export.status) \(export.stderr)")
        #expect(listing(geolocate.stateDirectory) == before)
    }

    @Test func aSpoolTheUserMayNotReadIsUnknown() throws {
        defer { removeBinaryCopy() }
        try configure()
        try spoolDrive(epochs: 2)
        chmod(geolocate.stateDirectory, 0o755)
        let before = listing(geolocate.stateDirectory)
        let check = try run(as: Self.readerUID, Self.readerUID, ["status", "--check"])
        #expect(check.status == 3 && check.stdout.hasPrefix("GEOLOCATE UNKNOWN - cannot read state file "), "\(check.status) \(check.stdout)")
        let json = try run(as: Self.readerUID, Self.readerUID, ["status", "--json"])
        let spool = try json.json()["spool"] as? [String: Any]
        #expect(json.status == 65 && spool?["state"] as? String == "unreadable", "\(json.stdout)")
        #expect(listing(geolocate.stateDirectory) == before)
    }

    @Test func aMissingStateDirectoryIsReportedNotMade() throws {
        try configure()
        let state = geolocate.stateDirectory
        try #require(!FileManager.default.fileExists(atPath: state))
        let text = try geolocate.run(["status"])
        #expect(text.status == 0 && text.stdout.contains("(does not exist yet)") && text.stdout.contains("spool:"), "\(text.stdout)")
        let json = try geolocate.run(["status", "--json"])
        let report = try json.json()
        #expect(report["stateDirectoryExists"] as? Bool == false)
        #expect((report["spool"] as? [String: Any])?["state"] as? String == "none" && (report["spool"] as? [String: Any])?["pending"] as? Int == 0)
        let check = try geolocate.run(["status", "--check"])
        #expect(check.status == 0 && check.stdout.hasPrefix("GEOLOCATE OK - no spool yet, 0 pending"), "\(check.stdout)")
        let gpx = try geolocate.run(["export", "--format", "gpx"])
        #expect(gpx.status == 0 && gpx.stdout.hasSuffix("</gpx>\n") && !gpx.stdout.contains("<trkpt"), "\(gpx.status) \(gpx.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state))
    }
}

import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 39 through the built binary, outside PAM: a fix gpsd held with a date far from the
/// clock has an unknown age; an old remembered fix never becomes the anchor; a lock held by
/// another process leaves the decision undetermined; a full file system keeps what fits; and a failed send is the endpoint's last error. The
/// cases on replays, the configuration and `state forget previous` run in process
/// (JumpStandsReplayTests, and TrackReplayTests for 200 MiB without a newline).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct JumpStandsEndToEndTests {
    let geolocate = GeolocateProcess()

    func write(_ text: String, name: String) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let path = geolocate.home.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func dublin(_ date: String, _ time: String) throws -> String {
        try write(NMEAText.fixes(latitude: SafeDecisionEndToEndTests.dublinDesk.latitude,
                                 longitude: SafeDecisionEndToEndTests.dublinDesk.longitude, date: date, time: time),
                  name: "dublin-\(date)-\(time).nmea")
    }

    /// `trigger login --enforce` with the policy example's config, replaying `log`.
    func enforce(_ log: String, _ extra: [String] = []) throws -> GeolocateProcess.Result {
        try geolocate.run(["trigger", "login", "--enforce", "--config", "Examples/policy/config.json", "--replay", log] + extra)
    }

    static func record(_ result: GeolocateProcess.Result) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
    }

    static func policy(_ result: GeolocateProcess.Result) -> [String: Any] { record(result)["policy"] as? [String: Any] ?? [:] }

    /// Second hostile pass: with gpsd down, an hour-old remembered fix in Lyon (the service
    /// user can write last-known.json) was reported, denied as too old, and yet replaced the
    /// Dublin anchor of a minute before, so the next live fix in Lyon was allowed. A report
    /// older than the anchor, or stale, never becomes it.
    @Test func anOldRememberedFixNeverBecomesTheAnchor() throws {
        _ = try write(#"{"permissions":["fine"],"policy":{"countries":["IE","FR"]}}"#, name: "config.json")
        func live(_ latitude: Double, _ longitude: Double) throws -> GeolocateProcess.Result {
            let now = ISO8601DateFormatter().string(from: Date())
            let gpsd = try ScriptedGPSD(["poll": [], "stream": [ScriptedGPSD.tpv(time: now, ["lat": latitude, "lon": longitude, "eph": 5.0, "epx": 3.0, "epy": 3.0])]])
            defer { gpsd.stop() }
            return try geolocate.run(["trigger", "login", "--enforce", "--config", geolocate.configPath, "--source", gpsd.source, "--timeout", "3s"])
        }
        let dublin = try live(53.3498, -6.2603)
        #expect(dublin.status == 0, "\(dublin.stdout) \(dublin.stderr)")
        let stored = URL(fileURLWithPath: geolocate.stateDirectory + "/last-known.json")
        var fix = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: stored)) as? [String: Any])
        (fix["latitude"], fix["longitude"]) = (45.7640, 4.8357)
        for key in ["receivedAt", "timestamp", "receivedUptime"] { fix[key] = Int64(try #require(fix[key] as? Int)) - 3_600_000 }
        try JSONSerialization.data(withJSONObject: fix).write(to: stored)
        let (port, held) = try Loopback.refusingPort()
        defer { close(held) }
        let fallback = try geolocate.run(["trigger", "login", "--enforce", "--config", geolocate.configPath, "--source", "gpsd://127.0.0.1:\(port)"])
        #expect(fallback.status == 4 && Self.record(fallback)["locationSource"] as? String == "last_known", "\(fallback.stdout)")
        let lyon = try live(45.7640, 4.8357)
        #expect(lyon.status == 4, "\(lyon.stdout) \(lyon.stderr)")
        #expect((Self.policy(lyon)["reason"] as? String)?.hasPrefix("jumped: ") == true, "\(lyon.stdout)")
    }

    /// SPEC §10.1: another process holding `previous-report.lock` past the wait leaves the
    /// report unread, so `--enforce` is undetermined (exit 4), never an allow on no anchor.
    @Test func aPreviousReportLockedByAnotherProcessLeavesTheDecisionUndetermined() throws {
        #expect(try enforce(GeolocateProcess.example("kiosk-gnss.nmea")).status == 0)
        let lock = geolocate.stateDirectory + "/previous-report.lock"
        let marker = geolocate.home.appendingPathComponent("locked").path
        let holder = try ProcessGroup.spawn(["flock", lock, "sh", "-c", "touch \"$0\" && exec sleep 60", marker],
                                            outputPath: geolocate.home.appendingPathComponent("flock.out").path)
        defer { ProcessGroup.stop(holder) }
        #expect(waitUntil(.seconds(10)) { FileManager.default.fileExists(atPath: marker) }, "flock never took the lock")
        let result = try enforce(try dublin("211126", "143400"))
        #expect(kill(holder, 0) == 0, "the lock was still held when the decision was made")
        #expect(result.status == 4, "\(result.stderr)")
        #expect((Self.policy(result)["reason"] as? String)?.hasPrefix("the previous report cannot be read") == true, "\(result.stdout)")
        #expect(result.stderr.contains("previous-report.lock is held by another process"), "\(result.stderr)")
    }

    /// SPEC §10.1: a lock held for less than the action's own deadline is waited for, so two
    /// logins at one moment both read the report: the jump is found, not "cannot be read"
    /// (before, the report was given up after 200 ms and the login refused as undetermined).
    @Test func aPreviousReportLockedBrieflyIsWaitedFor() throws {
        #expect(try enforce(GeolocateProcess.example("kiosk-gnss.nmea")).status == 0)
        let lock = geolocate.stateDirectory + "/previous-report.lock"
        let marker = geolocate.home.appendingPathComponent("locked").path
        let released = geolocate.home.appendingPathComponent("released").path
        // Holds the lock for a second, then writes when it lets go (ns since the epoch).
        let holder = try ProcessGroup.spawn(["flock", lock, "sh", "-c", "touch \"$0\" && sleep 1 && date +%s%N > \"$1\"", marker, released],
                                            outputPath: geolocate.home.appendingPathComponent("flock.out").path)
        defer { ProcessGroup.stop(holder) }
        #expect(waitUntil(.seconds(10)) { FileManager.default.fileExists(atPath: marker) }, "flock never took the lock")
        let started = Date().timeIntervalSince1970
        let result = try enforce(try dublin("211126", "143400"), ["--timeout", "10s"])
        let releasedAt = Double(try String(contentsOfFile: released, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))! / 1e9
        #expect(releasedAt > started, "the lock was let go before the login began: nothing was waited for")
        #expect(result.status == 4, "\(result.stderr)")
        #expect((Self.record(result)["signals"] as? [String: Any])?["jumped"] as? Bool == true, "\(result.stdout)")
        #expect((Self.policy(result)["reason"] as? String)?.hasPrefix("the previous report cannot be read") == false, "\(result.stdout)")
    }

    /// SPEC §3: a gpsd that answers ?POLL; with a fix 25 hours old (or dated by a week
    /// rollover) and streams nothing: the fix is the last known location of unknown age
    /// (ageMs null), never current, and the policy is undetermined. Before, it was current,
    /// `ageMs` 8, and allowed.
    @Test(arguments: [25 * 3600.0, 1024 * 7 * 86400.0]) func aHeldFixDatedFarFromTheClockHasAnUnknownAge(_ secondsOld: Double) throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let time = formatter.string(from: Date(timeIntervalSinceNow: -secondsOld))
        let gpsd = try ScriptedGPSD(["poll": [ScriptedGPSD.tpv(time: time)], "stream": []])
        defer { gpsd.stop() }
        _ = try write(#"{"permissions":["fine"],"policy":{"countries":["IE"]}}"#, name: "config.json")
        let result = try geolocate.run(["trigger", "login", "--enforce", "--config", geolocate.configPath, "--source", gpsd.source, "--timeout", "1s"])
        #expect(result.status == 4, "\(result.stdout) \(result.stderr)")
        let record = Self.record(result)
        #expect(record["locationSource"] as? String == "last_known", "\(result.stdout)")
        #expect(record["ageMs"] is NSNull, "\(result.stdout)")
        #expect(Self.policy(result)["decision"] as? String == "undetermined"
                && (Self.policy(result)["reason"] as? String)?.hasPrefix("the location's age is unknown") == true, "\(result.stdout)")
        #expect(result.stderr.contains("its age is unknown"), "\(result.stderr)")
        // And it is not remembered as the last known location with a made-up arrival.
        #expect(!FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/last-known.json"))
    }

    /// `track` into a 400 KiB file system: the records that fit are committed, in order, and
    /// stderr says how many (exit 73). Before, one record of thousands was kept.
    @Test(.enabled(if: getuid() == 0, "needs root (a tmpfs in its own mount namespace)"))
    func trackOnAFullFileSystemKeepsWhatFitsInOrder() throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("drive.nmea").path
        let truth = geolocate.home.appendingPathComponent("drive.truth").path
        try Tool.run(["python3", GeolocateProcess.projectRoot.deletingLastPathComponent().appendingPathComponent("shared/tools/nmea-gen.py").path,
                      "--quiet", "--epochs", "5000", "--seed", "3", "--out", log, "--truth", truth])
        let state = geolocate.home.appendingPathComponent("small").path
        let csv = geolocate.home.appendingPathComponent("kept.csv").path
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let binary = GeolocateProcess.binary.path
        let script = """
            mount -t tmpfs -o size=400k,mode=700 tmpfs "$1" || exit 2
            "$2" track --replay "$3" --permission fine --every-fix --state-dir "$1" 2>"$1/../track.err"
            echo "rc=$?"
            "$2" export --format csv --state-dir "$1" > "$4"
            """
        let outcome = try Spawn.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", state, binary, log, csv])
        let output = String(decoding: outcome.stdout, as: UTF8.self)
        let stderr = try String(contentsOfFile: geolocate.home.appendingPathComponent("track.err").path, encoding: .utf8)
        #expect(output.contains("rc=73"), "\(output) \(stderr)")
        let rows = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\r\n").dropFirst()
        let times = rows.map { String($0.split(separator: ",")[1]) }
        let truthTimes = try String(contentsOfFile: truth, encoding: .utf8).split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["time"] as? String
        }
        // Most of the 400 KiB goes to SQLite's schema, WAL and pages, not to records: some tens fit.
        #expect(times.count > 20 && times.count < truthTimes.count, "\(times.count) kept: \(stderr)")
        #expect(stderr.contains("\(times.count) records of this run were committed, in order"), "\(stderr)")
        // In order, from the first epoch: a prefix of the log's epochs, by the generator's truth.
        func seconds(_ text: String) -> Date? {
            ISO8601DateFormatter().date(from: text.replacingOccurrences(of: #"\.\d+"#, with: "", options: .regularExpression))
        }
        let normalized = times.map(seconds)
        let truthPrefix = truthTimes.prefix(times.count).map(seconds)
        #expect(!normalized.contains(nil) && normalized == Array(truthPrefix), "first kept \(times.first ?? "-"), truth \(truthTimes.first ?? "-")")
    }

    /// A send from trigger that fails (HTTP 503) leaves the record in the spool and the
    /// endpoint's last error in `status`; before, `lastError` was null.
    @Test func aFailedSendFromTriggerIsTheEndpointsLastError() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/down": ["default": ["status": 503]]])
        _ = try write(#"{"permissions":["fine"],"endpoints":{"audit":{"url":"\#(collector.url("/down"))"}}}"#, name: "config.json")
        let result = try geolocate.run(["trigger", "login", "--config", geolocate.configPath, "--endpoint", "audit",
                                        "--replay", GeolocateProcess.example("kiosk-gnss.nmea")])
        #expect(result.status == 0 && result.stderr.contains("in the spool"), "\(result.stderr)")
        #expect(collector.requests("/down").count == 1)
        let status = try geolocate.run(["status", "--json", "--config", geolocate.configPath])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status)")
        let endpoint = try #require((document["endpoints"] as? [[String: Any]])?.first { $0["name"] as? String == "audit" }, "\(status.stdout)")
        #expect((endpoint["lastError"] as? String)?.contains("503") == true, "\(endpoint)")
        #expect(endpoint["pending"] as? Int == 1, "\(endpoint)")
    }
}

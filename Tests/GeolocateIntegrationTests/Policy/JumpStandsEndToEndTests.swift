import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Issue 39 through the built binary, outside PAM: a jump stands until the travel is possible
/// and `state forget previous` ends it; an unreadable previous report leaves the decision
/// undetermined; a fix gpsd held with a date far from the clock has an unknown age; `--now`
/// never dates a live login; 200 MiB without a newline is read past; a full file system keeps
/// what fits; and a failed send is the endpoint's last error.
@Suite(.tags(.integration), .timeLimit(.minutes(20))) struct JumpStandsEndToEndTests {
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

    /// Lyon, then Dublin 4 minutes later, then again: both denied as jumps (before, the retry
    /// compared with the denied report and was allowed); `state forget previous` drops the
    /// anchor and says what it removed, and the next login is judged without it.
    @Test func aJumpStandsUntilForgotten() throws {
        #expect(try enforce(GeolocateProcess.example("kiosk-gnss.nmea")).status == 0)
        for time in ["143400", "143401"] {
            let retry = try enforce(try dublin("211126", time))
            #expect(retry.status == 4, "\(time): \(retry.stderr)")
            #expect((Self.policy(retry)["reason"] as? String)?.hasPrefix("jumped: ") == true, "\(time): \(retry.stdout)")
            let previous = (Self.record(retry)["signals"] as? [String: Any])?["previous"] as? [String: Any]
            #expect(previous?["countryCode"] as? String == "FR", "the anchor stays Lyon: \(retry.stdout)")
        }
        let forget = try geolocate.run(["state", "forget", "previous"])
        #expect(forget.status == 0 && forget.stdout.contains("removed \(geolocate.stateDirectory)/previous-report-replay.json"), "\(forget)")
        let again = try geolocate.run(["state", "forget", "previous"])
        #expect(again.status == 0 && again.stdout.hasPrefix("no previous report"), "\(again)")
        let after = try enforce(try dublin("211126", "143402"))
        #expect(after.status == 0, "\(after.stdout) \(after.stderr)")
    }

    /// Found by the hostile pass: after a denied jump, one fix good only to 1,300 km (not a
    /// jump: its circle covers Lyon) became the anchor, and the next precise fix in Dublin
    /// was allowed. An inaccurate report is never the anchor: the jump stands.
    @Test func anInaccurateFixDoesNotClearAJump() throws {
        #expect(try enforce(GeolocateProcess.example("kiosk-gnss.nmea")).status == 0)
        #expect(try enforce(try dublin("211126", "143400")).status == 4)
        let lat = NMEAText.angle(SafeDecisionEndToEndTests.dublinDesk.latitude, degreesWidth: 2, positive: "N", negative: "S")
        let lon = NMEAText.angle(SafeDecisionEndToEndTests.dublinDesk.longitude, degreesWidth: 3, positive: "E", negative: "W")
        let vague = NMEAText.epochs(from: "143410", seconds: 3).map { time in
            NMEAText.sentence("GPGGA,\(time),\(lat),\(lon),1,10,0.9,50.0,M,55.0,M,,")
                + NMEAText.sentence("GPGST,\(time),1.0,1300000.0,1300000.0,0.0,1300000.0,1300000.0,3.0")
                + NMEAText.sentence("GPRMC,\(time),A,\(lat),\(lon),0.0,0.0,211126,,,A")
        }.joined()
        let inaccurate = try enforce(try write(vague, name: "vague.nmea"))
        #expect(inaccurate.status == 4, "\(inaccurate.stdout)")
        #expect((Self.record(inaccurate)["signals"] as? [String: Any])?["inaccurate"] as? Bool == true, "\(inaccurate.stdout)")
        let precise = try enforce(try dublin("211126", "143420"))
        #expect(precise.status == 4, "\(precise.stdout)")
        #expect((Self.policy(precise)["reason"] as? String)?.hasPrefix("jumped: ") == true, "\(precise.stdout)")
    }

    /// Second hostile pass: an anchor claiming a circle of 20,000 km took the whole distance
    /// off and no later fix jumped. An anchor is never inaccurate, so its circle counts for
    /// at most signals.maxAccuracy.
    @Test func anAnchorsCircleCountsForAtMostTheAccuracyLimit() throws {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let dublinAt1425 = #"{"accuracy":20000000,"latitude":53.3498,"longitude":-6.2603,"madeAt":1795271100000,"recordTimestamp":1795271100000}"#
        try Data(dublinAt1425.utf8).write(to: URL(fileURLWithPath: geolocate.stateDirectory + "/previous-report-replay.json"))
        let lyon = try enforce(GeolocateProcess.example("kiosk-gnss.nmea"))
        #expect(lyon.status == 4, "\(lyon.stdout)")
        #expect((Self.policy(lyon)["reason"] as? String)?.hasPrefix("jumped: ") == true, "\(lyon.stdout)")
    }

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

    /// A damaged previous report (not JSON, or values out of range): the policy cannot judge
    /// travel, so `--enforce` is undetermined (exit 4), said on stderr; without a policy the
    /// record is still made. Before, a latitude of 953 was dropped as "made after this
    /// record's time" and Lyon was allowed.
    @Test(arguments: ["not json", #"{"latitude":953.3,"longitude":-6.26,"madeAt":1795271400000,"recordTimestamp":1795271400000}"#,
                      #"{"latitude":53.35,"longitude":-6.26,"madeAt":1795271400000,"recordTimestamp":1795271400000,"arrivedUptime":-5}"#])
    func aDamagedPreviousReportLeavesTheDecisionUndetermined(_ damaged: String) throws {
        #expect(try enforce(GeolocateProcess.example("kiosk-gnss.nmea")).status == 0)
        try Data(damaged.utf8).write(to: URL(fileURLWithPath: geolocate.stateDirectory + "/previous-report-replay.json"))
        let result = try enforce(try dublin("211126", "143400"))
        #expect(result.status == 4, "\(result.stderr)")
        #expect(Self.policy(result)["decision"] as? String == "undetermined"
                && (Self.policy(result)["reason"] as? String)?.hasPrefix("the previous report cannot be read") == true, "\(result.stdout)")
        #expect(result.stderr.contains("previous-report-replay.json is damaged"), "\(result.stderr)")
        let plain = try geolocate.run(["trigger", "login", "--permission", "fine", "--replay", try dublin("211126", "143500")])
        #expect(plain.status == 0 && Self.record(plain)["location"] != nil, "\(plain.stderr)")
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

    /// SPEC §3: `--now` is for tests of replays: under a policy on a live source it is a usage
    /// error (64), before the source is asked; on a replay it still dates the query.
    @Test(arguments: ["--enforce", "--policy"]) func nowIsRefusedForALivePolicyDecision(_ flag: String) throws {
        let live = try geolocate.run(["trigger", "login", flag, "--config", "Examples/policy/config.json", "--source", "gpsd://127.0.0.1:1",
                                      "--now", "2026-11-21T14:30:00Z"])
        #expect(live.status == 64 && live.stdout.isEmpty, "\(live)")
        #expect(live.stderr.contains("--now is for tests of replays"), "\(live.stderr)")
        let replay = try geolocate.run(["trigger", "login", flag, "--config", "Examples/policy/config.json",
                                        "--replay", GeolocateProcess.example("kiosk-gnss.nmea"), "--now", "2026-11-21T14:30:05Z"])
        #expect(replay.status == 0, "\(replay.stderr)")
    }

    /// SPEC §3: a record bound for a `jwt` endpoint is never dated by `--now`, replay or not.
    @Test func nowIsRefusedForATokenEndpoint() throws {
        _ = try write(#"{"permissions":["fine"],"endpoints":{"risk":{"url":"https://127.0.0.1:1/t","format":"jwt"}}}"#, name: "config.json")
        let result = try geolocate.run(["trigger", "login", "--config", geolocate.configPath, "--endpoint", "risk",
                                        "--replay", GeolocateProcess.example("kiosk-gnss.nmea"), "--now", "2026-11-21T14:30:05Z"])
        #expect(result.status == 64 && result.stdout.isEmpty, "\(result)")
        #expect(result.stderr.contains("--now cannot be used with a jwt endpoint (risk)"), "\(result.stderr)")
    }

    /// SPEC §2: 200 MiB without a newline between two runs of fixes is skipped in constant
    /// memory, and the fixes after it (the first glued to the garbage's end) are read. Before,
    /// the replay stopped with exit 65 and lost them.
    @Test func twoHundredMiBWithoutANewlineIsReadPast() throws {
        let path = geolocate.home.appendingPathComponent("garbage.nmea").path
        let before = NMEAText.fixes(latitude: 45.7640, longitude: 4.8357, date: "211126", time: "143000")
        let after = NMEAText.fixes(latitude: 53.3498, longitude: -6.2603, date: "211126", time: "150000")
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(before.utf8)))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        let block = Data(repeating: UInt8(ascii: "x"), count: 1 << 20)
        for _ in 0..<200 { try handle.write(contentsOf: block) }
        try handle.write(contentsOf: Data(after.utf8))
        try handle.close()
        let result = try geolocate.run(["track", "--replay", path, "--permission", "fine", "--every-fix", "--stdout", "--no-spool"])
        #expect(result.status == 0, "\(result.stderr)")
        let times = result.stdout.split(separator: "\n").compactMap { line -> Int? in
            let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return (record?["location"] as? [String: Any])?["recordTimestamp"] as? Int
        }
        let day = 1_795_219_200_000  // 2026-11-21T00:00:00Z
        let expected = [52_200, 52_201, 52_202, 54_000, 54_001, 54_002].map { day + $0 * 1000 }
        #expect(times == expected, "\(result.stderr)")
        try? FileManager.default.removeItem(atPath: path)
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
        #expect(times.count > 50 && times.count < truthTimes.count, "\(times.count) kept: \(stderr)")
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

import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import TestSupport
import Testing

/// Issue 39 in this process (moved from JumpStandsEndToEndTests, which keeps gpsd, a lock
/// held by another process, 200 MiB of input, a full file system and a failed send): a jump
/// stands until the travel is possible and `state forget previous` ends it; an inaccurate
/// fix or an anchor's wide circle never clears it; an unreadable previous report leaves the
/// decision undetermined; `--now` never dates a live login nor a token.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct JumpStandsReplayTests {
    static let dublinDesk = (latitude: 53.3498, longitude: -6.2603)
    let geolocate = InProcessTrigger()

    func write(_ text: String, name: String) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let path = geolocate.home.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func dublin(_ date: String, _ time: String) throws -> String {
        try write(NMEAText.fixes(latitude: Self.dublinDesk.latitude,
                                 longitude: Self.dublinDesk.longitude, date: date, time: time),
                  name: "dublin-\(date)-\(time).nmea")
    }

    /// `trigger login --enforce` with the policy example's config, replaying `log`.
    func enforce(_ log: String, _ extra: [String] = []) async -> InProcessTrigger.Result {
        await geolocate.run(["trigger", "login", "--enforce", "--config", "Examples/policy/config.json", "--replay", log] + extra)
    }

    static func record(_ result: InProcessTrigger.Result) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]) ?? [:]
    }

    static func policy(_ result: InProcessTrigger.Result) -> [String: Any] { record(result)["policy"] as? [String: Any] ?? [:] }

    /// Lyon, then Dublin 4 minutes later, then again: both denied as jumps (before, the retry
    /// compared with the denied report and was allowed); `state forget previous` drops the
    /// anchor and says what it removed, and the next login is judged without it.
    @Test func aJumpStandsUntilForgotten() async throws {
        #expect(await enforce(InProcessTrigger.example("kiosk-gnss.nmea")).status == 0)
        for time in ["143400", "143401"] {
            let retry = await enforce(try dublin("211126", time))
            #expect(retry.status == 4, "\(time): \(retry.stderr)")
            #expect((Self.policy(retry)["reason"] as? String)?.hasPrefix("jumped: ") == true, "\(time): \(retry.stdout)")
            let previous = (Self.record(retry)["signals"] as? [String: Any])?["previous"] as? [String: Any]
            #expect(previous?["countryCode"] as? String == "FR", "the anchor stays Lyon: \(retry.stdout)")
        }
        let forget = await geolocate.run(["state", "forget", "previous"])
        #expect(forget.status == 0 && forget.stdout.contains("removed \(geolocate.stateDirectory)/previous-report-replay.json"), "\(forget)")
        let again = await geolocate.run(["state", "forget", "previous"])
        #expect(again.status == 0 && again.stdout.hasPrefix("no previous report"), "\(again)")
        let after = await enforce(try dublin("211126", "143402"))
        #expect(after.status == 0, "\(after.stdout) \(after.stderr)")
    }

    /// Found by the hostile pass: after a denied jump, one fix good only to 1,300 km (not a
    /// jump: its circle covers Lyon) became the anchor, and the next precise fix in Dublin
    /// was allowed. An inaccurate report is never the anchor: the jump stands.
    @Test func anInaccurateFixDoesNotClearAJump() async throws {
        #expect(await enforce(InProcessTrigger.example("kiosk-gnss.nmea")).status == 0)
        #expect(await enforce(try dublin("211126", "143400")).status == 4)
        let lat = NMEAText.angle(Self.dublinDesk.latitude, degreesWidth: 2, positive: "N", negative: "S")
        let lon = NMEAText.angle(Self.dublinDesk.longitude, degreesWidth: 3, positive: "E", negative: "W")
        let vague = NMEAText.epochs(from: "143410", seconds: 3).map { time in
            NMEAText.sentence("GPGGA,\(time),\(lat),\(lon),1,10,0.9,50.0,M,55.0,M,,")
                + NMEAText.sentence("GPGST,\(time),1.0,1300000.0,1300000.0,0.0,1300000.0,1300000.0,3.0")
                + NMEAText.sentence("GPRMC,\(time),A,\(lat),\(lon),0.0,0.0,211126,,,A")
        }.joined()
        let inaccurate = await enforce(try write(vague, name: "vague.nmea"))
        #expect(inaccurate.status == 4, "\(inaccurate.stdout)")
        #expect((Self.record(inaccurate)["signals"] as? [String: Any])?["inaccurate"] as? Bool == true, "\(inaccurate.stdout)")
        let precise = await enforce(try dublin("211126", "143420"))
        #expect(precise.status == 4, "\(precise.stdout)")
        #expect((Self.policy(precise)["reason"] as? String)?.hasPrefix("jumped: ") == true, "\(precise.stdout)")
    }

    /// Second hostile pass: an anchor claiming a circle of 20,000 km took the whole distance
    /// off and no later fix jumped. An anchor is never inaccurate, so its circle counts for
    /// at most signals.maxAccuracy.
    @Test func anAnchorsCircleCountsForAtMostTheAccuracyLimit() async throws {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let dublinAt1425 = #"{"accuracy":20000000,"latitude":53.3498,"longitude":-6.2603,"madeAt":1795271100000,"recordTimestamp":1795271100000}"#
        try Data(dublinAt1425.utf8).write(to: URL(fileURLWithPath: geolocate.stateDirectory + "/previous-report-replay.json"))
        let lyon = await enforce(InProcessTrigger.example("kiosk-gnss.nmea"))
        #expect(lyon.status == 4, "\(lyon.stdout)")
        #expect((Self.policy(lyon)["reason"] as? String)?.hasPrefix("jumped: ") == true, "\(lyon.stdout)")
    }

    /// A damaged previous report (not JSON, or values out of range): the policy cannot judge
    /// travel, so `--enforce` is undetermined (exit 4), said on stderr; without a policy the
    /// record is still made. Before, a latitude of 953 was dropped as "made after this
    /// record's time" and Lyon was allowed.
    @Test(arguments: ["not json", #"{"latitude":953.3,"longitude":-6.26,"madeAt":1795271400000,"recordTimestamp":1795271400000}"#,
                      #"{"latitude":53.35,"longitude":-6.26,"madeAt":1795271400000,"recordTimestamp":1795271400000,"arrivedUptime":-5}"#])
    func aDamagedPreviousReportLeavesTheDecisionUndetermined(_ damaged: String) async throws {
        #expect(await enforce(InProcessTrigger.example("kiosk-gnss.nmea")).status == 0)
        try Data(damaged.utf8).write(to: URL(fileURLWithPath: geolocate.stateDirectory + "/previous-report-replay.json"))
        let result = await enforce(try dublin("211126", "143400"))
        #expect(result.status == 4, "\(result.stderr)")
        #expect(Self.policy(result)["decision"] as? String == "undetermined"
                && (Self.policy(result)["reason"] as? String)?.hasPrefix("the previous report cannot be read") == true, "\(result.stdout)")
        #expect(result.stderr.contains("previous-report-replay.json is damaged"), "\(result.stderr)")
        let plain = await geolocate.run(["trigger", "login", "--permission", "fine", "--replay", try dublin("211126", "143500")])
        #expect(plain.status == 0 && Self.record(plain)["location"] != nil, "\(plain.stderr)")
    }

    /// SPEC §3: `--now` is for tests of replays: under a policy on a live source it is a usage
    /// error (64), before the source is asked; on a replay it still dates the query.
    @Test(arguments: ["--enforce", "--policy"]) func nowIsRefusedForALivePolicyDecision(_ flag: String) async throws {
        let live = await geolocate.run(["trigger", "login", flag, "--config", "Examples/policy/config.json", "--source", "gpsd://127.0.0.1:1",
                                      "--now", "2026-11-21T14:30:00Z"])
        #expect(live.status == 64 && live.stdout.isEmpty, "\(live)")
        #expect(live.stderr.contains("--now is for tests of replays"), "\(live.stderr)")
        let replay = await geolocate.run(["trigger", "login", flag, "--config", "Examples/policy/config.json",
                                        "--replay", InProcessTrigger.example("kiosk-gnss.nmea"), "--now", "2026-11-21T14:30:05Z"])
        #expect(replay.status == 0, "\(replay.stderr)")
    }

    /// SPEC §3: a record bound for a `jwt` endpoint is never dated by `--now`, replay or not.
    @Test func nowIsRefusedForATokenEndpoint() async throws {
        _ = try write(#"{"permissions":["fine"],"endpoints":{"risk":{"url":"https://127.0.0.1:1/t","format":"jwt"}}}"#, name: "config.json")
        let result = await geolocate.run(["trigger", "login", "--config", geolocate.configPath, "--endpoint", "risk",
                                        "--replay", InProcessTrigger.example("kiosk-gnss.nmea"), "--now", "2026-11-21T14:30:05Z"])
        #expect(result.status == 64 && result.stdout.isEmpty, "\(result)")
        #expect(result.stderr.contains("--now cannot be used with a jwt endpoint (risk)"), "\(result.stderr)")
    }

    /// Holds the previous report's lock as another process would: flock locks belong to the
    /// open file, so this process's own open is another holder.
    func holdingTheReportsLock() throws -> FileLock {
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        return try #require(try FileLock.ifFree(path: geolocate.stateDirectory + "/" + StateFile.previousReportLock.rawValue))
    }

    /// SPEC §10.2: a lock held past the deadline leaves the decision undetermined; the warning
    /// beside it names the lock and says what signals do (a hostile pass found it said they
    /// "compare with the previous report of this process only", which a trigger has none of).
    @Test func aLockHeldPastTheDeadlineIsUndetermined() async throws {
        let lock = try holdingTheReportsLock()
        let result = await enforce(InProcessTrigger.example("kiosk-gnss.nmea"), ["--timeout", "300ms"])
        withExtendedLifetime(lock) {}
        #expect(result.status == 4, "\(result.stderr)")
        #expect((Self.policy(result)["reason"] as? String)?.hasPrefix("the previous report cannot be read") == true, "\(result.stdout)")
        #expect(result.stderr.contains("previous-report.lock is held by another process; signals go without the stored previous report"),
                "\(result.stderr)")
    }

    /// SPEC §10.1 "signals never fail or delay a record": without a policy a locked report is
    /// waited for 200 ms, not the query timeout (10 s here), and the record is made without it,
    /// said in a warning; under a policy the lock is waited for the whole timeout. Measured on
    /// a clock the test moves: a wall-clock bound would measure the shared test pool.
    @Test func withoutAPolicyALockedReportStillMakesTheRecord() async throws {
        let lock = try holdingTheReportsLock()
        let clock = ManualMonotonicClock()
        var trigger = geolocate
        trigger.elapsed = clock
        var before = clock.nowSeconds
        let result = await trigger.run(["trigger", "login", "--replay", InProcessTrigger.example("kiosk-gnss.nmea"),
                                        "--permission", "fine", "--timeout", "10s"])
        let waitedPlain = clock.nowSeconds - before
        before = clock.nowSeconds
        let enforced = await trigger.run(["trigger", "login", "--replay", InProcessTrigger.example("kiosk-gnss.nmea"),
                                          "--permission", "fine", "--timeout", "10s", "--enforce"])
        let waitedEnforced = clock.nowSeconds - before
        withExtendedLifetime(lock) {}
        #expect(waitedPlain > 0.199 && waitedPlain < 0.3, "waited \(waitedPlain) s without a policy")
        #expect(waitedEnforced > 9.9 && waitedEnforced < 10.1, "waited \(waitedEnforced) s under a policy")
        #expect(enforced.status == 4, "\(enforced.stderr)")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.record(result)["location"] != nil)
        #expect(result.stderr.contains("is held by another process; signals go without the stored previous report"), "\(result.stderr)")
    }
}

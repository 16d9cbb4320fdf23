import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Synchronization
import Testing

/// The login gate's decisions in one process, with the shipped example's config, zones and
/// kiosk log: what `trigger --pam` exits with and logs, without pam_exec, a binary or syslog.
/// PAMEndToEndTests keeps what only the process shows (pam_exec, the real syslog, the exit).
@Suite(.tags(.unit), .timeLimit(.minutes(5)), .enabled(if: geteuid() == 0, "the gate trusts only root's files"))
struct LoginGateTests {
    /// What the gate wrote to its system log.
    final class LogLines: Sendable {
        private let lines = Mutex<[(SystemLog.Priority, String)]>([])
        var all: [(SystemLog.Priority, String)] { lines.withLock { $0 } }
        func write(_ priority: SystemLog.Priority, _ line: String) { lines.withLock { $0.append((priority, line)) } }
    }

    let home = FileManager.default.temporaryDirectory.appendingPathComponent("gate-\(UUID().uuidString)")
    var configPath: String { home.appendingPathComponent("config.json").path }
    var stateDirectory: String { home.appendingPathComponent("state").path }
    /// `Examples/nmea/kiosk-gnss.nmea`: from 2026-11-21 14:30:00 UTC, inside the example's lyon-office zone.
    static let kiosk = TestPaths.projectRoot.appendingPathComponent("Examples/nmea/kiosk-gnss.nmea").path
    static let callers = ["PAM_TYPE": "account", "PAM_USER": "alice", "PAM_SERVICE": "sshd", "PAM_RHOST": "10.1.2.3", "PAM_TTY": "ssh"]
    let log = LogLines()

    init() throws {
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
    }

    /// Writes Examples/pam/config.json with its zones file copied beside it, changed by `edit`.
    func writeConfig(_ edit: (inout [String: Any]) -> Void = { _ in }) throws {
        let examples = TestPaths.projectRoot.appendingPathComponent("Examples/pam")
        let zones = home.appendingPathComponent("zones.geojson").path
        if !FileManager.default.fileExists(atPath: zones) {
            try FileManager.default.copyItem(atPath: examples.appendingPathComponent("zones.geojson").path, toPath: zones)
        }
        var config = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: examples.appendingPathComponent("config.json"))) as? [String: Any])
        var policy = try #require(config["policy"] as? [String: Any])
        policy["zones"] = zones
        config["policy"] = policy
        edit(&config)
        try JSONSerialization.data(withJSONObject: config).write(to: URL(fileURLWithPath: configPath))
    }

    func gate(callers: [String: String] = LoginGateTests.callers, sources: SourceOpener = .replaysOnly,
              endProcess: @escaping @Sendable (Int32) -> Void = { code in Issue.record("the deadline ended the gate with \(code)") }) -> LoginGate {
        let log = self.log
        return LoginGate(configPath: configPath, stateDirectory: stateDirectory, callers: callers, clock: SystemClock(),
                         elapsed: SystemMonotonicClock(), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() },
                         sources: sources, mqtt: nil, log: { log.write($0, $1) }, endProcess: endProcess)
    }

    /// A login from `replay`, under the longest timeout there is (10 min), so that the deadline
    /// never ends a test of a decision: in the whole suite a test may wait minutes for a thread
    /// of the cooperative pool, which the deadline's own thread does not (a replay is read at
    /// once whatever the timeout).
    func request(_ replay: String = LoginGateTests.kiosk, now: String? = nil, timeout: Int64 = 600_000) throws -> LoginGate.Request {
        LoginGate.Request(trigger: TriggerRequest(action: "login", timeoutMilliseconds: timeout, now: try now.map(TimeText.milliseconds),
                                                  source: .nmea(path: replay)))
    }

    @Test func allowsAFreshFixInsideAnAllowZoneAndLogsOneLine() async throws {
        try writeConfig()
        // The log's own time: its first fix is fresh then.
        let outcome = await gate().decide(try request(now: "2026-11-21T14:30:05Z"))
        #expect(outcome.exitStatus == .success, "\(outcome.line)")
        for field in [#"login user="alice""#, #"service="sshd""#, #"rhost="10.1.2.3""#, "decision=allow", #"reason="insideAllowZone""#,
                      #"zone="lyon-office""#, " record="] {
            #expect(outcome.line.contains(field), "\(field) in \(outcome.line)")
        }
        #expect(log.all.map(\.1) == [outcome.line])
        #expect(outcome.record?.subject?.user == "alice")
    }

    @Test func deniesAFixOlderThanMaxAge() async throws {
        try writeConfig()
        // A day after the log: older than the example's policy.maxAge (5m).
        let outcome = await gate().decide(try request(now: "2026-11-22T14:30:00Z"))
        #expect(outcome.exitStatus == .denied)
        #expect(outcome.line.contains("decision=deny"), "\(outcome.line)")
        #expect(log.all.count == 1)
    }

    @Test func keepsTheRecordInTheSpoolForEveryEndpoint() async throws {
        try writeConfig { $0["endpoints"] = ["fleet": ["url": "http://127.0.0.1:9/locations"]] }
        let outcome = await gate().decide(try request(now: "2026-11-21T14:30:05Z"))
        #expect(outcome.exitStatus == .success)
        let spool = try Spool(stateDirectory: stateDirectory, clock: SystemClock())
        #expect(try spool.count() == 1)
    }

    @Test func withoutPAMTypeItRefusesAndSaysWhy() async throws {
        try writeConfig()
        let outcome = await gate(callers: ["PAM_USER": "alice"]).decide(try request())
        #expect(outcome.exitStatus == .failure)
        #expect(outcome.line.contains("PAM_TYPE is not set"))
        #expect(log.all.count == 1)
    }

    @Test func aStageThatDecidesNothingLetsOnSilently() async throws {
        try writeConfig()
        let outcome = await gate(callers: ["PAM_TYPE": "open_session", "PAM_USER": "alice"]).decide(try request())
        #expect(outcome.exitStatus == .success)
        #expect(log.all.isEmpty)
    }

    @Test(arguments: ["deny", "allow"]) func aBrokenConfigIsDecidedByOnError(_ onError: String) async throws {
        try Data(#"{"policy": {"onError": "\#(onError)", "maxAge": "nonsense"}}"#.utf8).write(to: URL(fileURLWithPath: configPath))
        let outcome = await gate().decide(try request())
        #expect(outcome.exitStatus == (onError == "allow" ? .success : .failure))
        #expect(outcome.line.contains("cannot decide (policy.onError \(onError))"), "\(outcome.line)")
    }

    @Test func aConfigOthersCanWriteDecidesNothing() async throws {
        try writeConfig { $0["policy"] = ["onError": "allow"] }
        chmod(configPath, 0o666)
        let outcome = await gate().decide(try request())
        // Not even its onError: deny.
        #expect(outcome.exitStatus == .failure)
        #expect(outcome.line.contains("is not safe"), "\(outcome.line)")
    }

    @Test func aSourceThatNeverAnswersEndsAtTheDeadline() async throws {
        try writeConfig()
        let release = DispatchSemaphore(value: 0)
        let endedSignal = DispatchSemaphore(value: 0)
        let ended = Mutex<Int32?>(nil)
        // gpsd that never answers: the opener blocks until the test ends.
        let hanging = SourceOpener { _, _, _ in
            release.wait()
            throw SourceError.unavailable("released")
        }
        let gate = gate(sources: hanging, endProcess: { code in
            ended.withLock { $0 = code }
            endedSignal.signal()
        })
        let request = LoginGate.Request(trigger: TriggerRequest(action: "login", timeoutMilliseconds: 100, source: .defaultGPSD))
        let decision = Task { await gate.decide(request) }
        // Waited for off the cooperative pool, which the gate needs to start; long enough for
        // a pool the whole suite keeps busy (the deadline itself is 100 ms from the start).
        let signalled = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: endedSignal.wait(timeout: .now() + 900) == .success) }
        }
        #expect(signalled)
        #expect(ended.withLock { $0 } == 1)
        #expect(log.all.first?.1.contains("no decision within the action's timeout") == true, "\(log.all)")
        release.signal()
        _ = await decision.value
    }

    @Test func anUnparsablePAMLineIsDecidedByOnError() throws {
        try writeConfig { $0["policy"] = ["onError": "allow"] }
        let log = self.log
        let outcome = LoginGate.refusingLine("unknown option '--nonsense'", arguments: ["trigger", "login", "--pam", "--config", configPath],
                                             callers: Self.callers, log: { log.write($0, $1) })
        #expect(outcome.exitStatus == .success)
        #expect(outcome.line.contains("the pam.d line's arguments: unknown option"), "\(outcome.line)")
    }
}

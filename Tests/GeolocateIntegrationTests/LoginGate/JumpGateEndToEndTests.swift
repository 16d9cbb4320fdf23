import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §10.1 and §14 in a real PAM stack (issue 39): a jump stands until the travel is
/// possible, whatever a retry, a read-only or full state directory does; a terminal another
/// user controls is no source; and syslog shows a bidi override as an escape, not as text
/// that reads backwards.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .enabled(if: PAMStack.isAvailable, "needs root"))
struct JumpGateEndToEndTests {
    let gate = PAMEndToEndTests()
    var geolocate: GeolocateProcess { gate.geolocate }

    /// The Dublin desk (an allow zone of the example) on `date` (ddmmyy) at `time` (hhmmss).
    func dublin(_ date: String, _ time: String) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let path = geolocate.home.appendingPathComponent("dublin-\(date)-\(time).nmea").path
        try NMEAText.fixes(latitude: SafeDecisionEndToEndTests.dublinDesk.latitude, longitude: SafeDecisionEndToEndTests.dublinDesk.longitude,
                           date: date, time: time).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func login(replay: String, extra: [String] = [], harness: [String: String] = [:], user: String = "alice") throws -> PAMStack.Outcome {
        let service = PAMStack.service(binary: GeolocateProcess.binary.path, arguments: gate.hookArguments(replay: replay, extra))
        return try PAMStack.run(service: service, user: user, operation: "acct_mgmt", items: PAMEndToEndTests.items,
                                harness: harness, in: geolocate.home)
    }

    /// Lyon at 14:30, then the Dublin desk (1,000 km away, an allow zone) at 14:34: denied as
    /// a jump, and so is every retry (before, the second login compared with the denied one
    /// and was allowed), until the travel could have been made: the next day it is allowed.
    @Test func aRetryAfterAJumpIsDeniedUntilTheTravelIsPossible() throws {
        try gate.writeConfig()
        let first = try login(replay: PAMEndToEndTests.kiosk)
        #expect(first.status == 0, "\(first.log)")
        for (attempt, time) in ["143400", "143401", "143500"].enumerated() {
            let retry = try login(replay: try dublin("211126", time))
            #expect(retry.status != 0, "attempt \(attempt + 1) at \(time)")
            let line = try gate.decisionLine(retry, priority: 4)
            #expect(line.contains(#"decision=deny reason="distrustedJumped""#), "attempt \(attempt + 1): \(line)")
        }
        // 20 hours later, 1,000 km at 14 m/s: the jump no longer stands.
        let nextDay = try login(replay: try dublin("221126", "103000"))
        #expect(nextDay.status == 0, "\(nextDay.log)")
        #expect(try gate.decisionLine(nextDay, priority: 5).contains(#"decision=allow reason="insideAllowZone""#))
    }

    /// The state directory read-only in the hook's mount namespace (or its file system full):
    /// the previous report is still read, so Dublin four minutes after Lyon is a jump. Before,
    /// without its lock file (which cannot be made there) the hook compared with nothing and
    /// allowed.
    @Test(arguments: [("readonly", true), ("readonly", false), ("full", false)])
    func aStateDirectoryThatCannotBeWrittenKeepsTheJump(_ mount: String, _ keepsLockFile: Bool) throws {
        try gate.writeConfig()
        #expect(try login(replay: PAMEndToEndTests.kiosk).status == 0)
        let lock = geolocate.stateDirectory + "/previous-report.lock"
        #expect(FileManager.default.fileExists(atPath: lock))
        if !keepsLockFile { try FileManager.default.removeItem(atPath: lock) }
        let variable = mount == "readonly" ? "PAM_HARNESS_READONLY" : "PAM_HARNESS_FULL"
        let outcome = try login(replay: try dublin("211126", "143400"), harness: [variable: geolocate.stateDirectory])
        #expect(outcome.status != 0, "\(outcome.log)")
        #expect(try gate.decisionLine(outcome, priority: 4).contains(#"decision=deny reason="distrustedJumped""#), "\(outcome.log)")
    }

    /// A previous report that exists and cannot be read leaves nothing to judge travel by: the
    /// hook cannot decide (policy.onError deny), and with onError allow it lets the login in,
    /// as the administrator chose.
    @Test(arguments: ["deny", "allow"]) func anUnreadablePreviousReportIsPolicyOnError(_ onError: String) throws {
        try gate.writeConfig { config in
            var policy = config["policy"] as? [String: Any] ?? [:]
            policy["onError"] = onError
            config["policy"] = policy
        }
        #expect(try login(replay: PAMEndToEndTests.kiosk).status == 0)
        try Data("{\"latitude\": 45.7".utf8).write(to: URL(fileURLWithPath: geolocate.stateDirectory + "/previous-report-replay.json"))
        let outcome = try login(replay: try dublin("211126", "143400"))
        #expect(outcome.status == (onError == "allow" ? 0 : 1), "\(outcome.log)")
        let line = try gate.decisionLine(outcome, priority: onError == "allow" ? 4 : 3)
        #expect(line.contains("decision=\(onError) reason=\"cannot decide (policy.onError \(onError)): the previous report cannot be read"), "\(line)")
    }

    /// `source nmea:/dev/pts/N` fed by another user: refused (onError), however good its fix;
    /// the same terminal owned by root is a source (the decision rests on its fix).
    @Test func aTerminalAnotherUserControlsIsNoSource() throws {
        try gate.writeConfig()
        let receiver = try TerminalReceiver(log: PAMEndToEndTests.kiosk, linesPerSecond: 400)
        defer { receiver.stop() }
        let arguments = ["trigger", "login", "--pam", "--config", geolocate.configPath, "--state-dir", geolocate.stateDirectory,
                         "--source", "nmea:" + receiver.path, "--timeout", "3s"]
        let service = PAMStack.service(binary: GeolocateProcess.binary.path, arguments: arguments)
        let nobody = getpwnam("nobody").pointee.pw_uid
        #expect(chown(receiver.path, nobody, gid_t.max) == 0)
        let foreign = try PAMStack.run(service: service, user: "alice", operation: "acct_mgmt", items: PAMEndToEndTests.items, in: geolocate.home)
        #expect(foreign.status == 1, "\(foreign.log)")
        let line = try gate.decisionLine(foreign, priority: 3)
        #expect(line.contains("decision=deny reason=\"cannot decide (policy.onError deny): ") && line.contains("terminal of uid \(nobody)"), "\(line)")

        #expect(chown(receiver.path, 0, gid_t.max) == 0)
        let roots = try PAMStack.run(service: service, user: "alice", operation: "acct_mgmt", items: PAMEndToEndTests.items, in: geolocate.home)
        let rootsLine = try #require(roots.decisionLines.first, "\(roots.log)")
        #expect(!rootsLine.contains("cannot decide"), "a root-owned terminal is a source: \(rootsLine)")
    }

    /// Found by the hostile pass: a replay named through a directory another user may write
    /// (a link there to a root-owned log in an allow zone) let that user choose the fix. The
    /// directories on the way must be root's alone, as for the config.
    @Test func anNMEASourceInADirectoryAnotherUserControlsIsRefused() throws {
        try gate.writeConfig()
        let theirs = geolocate.home.appendingPathComponent("theirs")
        try FileManager.default.createDirectory(at: theirs, withIntermediateDirectories: true)
        let nobody = getpwnam("nobody").pointee.pw_uid
        #expect(chown(theirs.path, nobody, gid_t.max) == 0)
        let link = theirs.appendingPathComponent("gps.nmea").path
        #expect(symlink(PAMEndToEndTests.kiosk, link) == 0)
        let outcome = try login(replay: link)
        #expect(outcome.status == 1, "\(outcome.log)")
        let line = try gate.decisionLine(outcome, priority: 3)
        #expect(line.contains("cannot decide (policy.onError deny): ") && line.contains("belongs to uid \(nobody)"), "\(line)")
        // A relative path is the caller's working directory's to resolve (su lets it choose).
        let relative = try login(replay: "Examples/nmea/kiosk-gnss.nmea")
        #expect(relative.status == 1, "\(relative.log)")
        #expect(try gate.decisionLine(relative, priority: 3).contains("is a relative path"), "\(relative.log)")
    }

    /// Found by the hostile pass: a pam.d line geolocate cannot parse (`--timeout -5s`) exited
    /// 64 with the error on stderr and nothing in syslog. It is a case where the gate cannot
    /// decide: silent, one syslog line, policy.onError.
    @Test(arguments: ["deny", "allow"]) func aPAMLineThatCannotBeParsedIsPolicyOnError(_ onError: String) throws {
        try gate.writeConfig { config in
            var policy = config["policy"] as? [String: Any] ?? [:]
            policy["onError"] = onError
            config["policy"] = policy
        }
        let outcome = try login(replay: PAMEndToEndTests.kiosk, extra: ["--timeout", "-5s"])
        #expect(outcome.status == (onError == "allow" ? 0 : 1), "\(outcome.log)")
        let line = try gate.decisionLine(outcome, priority: onError == "allow" ? 4 : 3)
        #expect(line.contains("decision=\(onError) reason=\"cannot decide (policy.onError \(onError)): the pam.d line's arguments: "), "\(line)")
        let direct = try geolocate.run(gate.hookArguments(replay: PAMEndToEndTests.kiosk, ["--bogus"]),
                                       environment: ["PAM_TYPE": "account", "PAM_USER": "alice"])
        #expect(direct.stdout.isEmpty && direct.stderr.isEmpty && direct.status == (onError == "allow" ? 0 : 1), "\(direct)")
        // Found by a hostile pass: --help or --version on the line printed and exited 0, which
        // let every login through; they decide nothing, so policy.onError does.
        for asked in ["--help", "-h", "--version"] {
            let help = try geolocate.run(gate.hookArguments(replay: PAMEndToEndTests.kiosk, [asked]),
                                         environment: ["PAM_TYPE": "account", "PAM_USER": "alice"])
            #expect(help.stdout.isEmpty && help.stderr.isEmpty && help.status == (onError == "allow" ? 0 : 1), "\(asked): \(help)")
        }
    }

    /// SPEC §3: `--now` on a live source is a usage error, which the gate hands to
    /// policy.onError: a 44-minute-old fix is never made fresh by it.
    @Test func nowOnALiveSourceIsPolicyOnError() throws {
        try gate.writeConfig()
        let arguments = ["trigger", "login", "--pam", "--config", geolocate.configPath, "--state-dir", geolocate.stateDirectory,
                         "--source", "gpsd://127.0.0.1:1", "--now", "2026-11-21T14:30:00Z"]
        let service = PAMStack.service(binary: GeolocateProcess.binary.path, arguments: arguments)
        let outcome = try PAMStack.run(service: service, user: "alice", operation: "acct_mgmt", items: PAMEndToEndTests.items, in: geolocate.home)
        #expect(outcome.status == 1, "\(outcome.log)")
        #expect(try gate.decisionLine(outcome, priority: 3).contains("--now is for tests of replays"), "\(outcome.log)")
    }

    /// A send from the gate that fails (HTTP 503) is the endpoint's last error in `status`, and
    /// the record waits in the spool; before, `lastError` stayed null.
    @Test func aFailedSendFromTheGateIsTheEndpointsLastError() throws {
        let collector = try Collector()
        defer { collector.stop() }
        try collector.script(["/down": ["default": ["status": 503]]])
        try gate.writeConfig { config in
            config["endpoints"] = ["audit": ["url": collector.url("/down"), "format": "mosaic"]]
            var actions = config["actions"] as? [String: Any] ?? [:]
            var login = actions["login"] as? [String: Any] ?? [:]
            login["endpoint"] = "audit"
            actions["login"] = login
            config["actions"] = actions
        }
        let outcome = try login(replay: PAMEndToEndTests.kiosk)
        #expect(outcome.status == 0, "\(outcome.log)")
        #expect(collector.requests("/down").count == 1)
        let status = try geolocate.run(["status", "--json", "--state-dir", geolocate.stateDirectory, "--config", geolocate.configPath])
        let document = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any], "\(status)")
        let endpoint = try #require((document["endpoints"] as? [[String: Any]])?.first, "\(status.stdout)")
        #expect((endpoint["lastError"] as? String)?.contains("503") == true && endpoint["pending"] as? Int == 1, "\(endpoint)")
    }

    /// SPEC §14: a bidi override in PAM_USER reaches syslog as `\u{202E}`, never raw.
    @Test func formatCharactersAreEscapedInSyslog() throws {
        try gate.writeConfig()
        let outcome = try login(replay: try dublin("211126", "143000"), user: "\u{202E}evil\u{200B}")
        let line = try #require(outcome.decisionLines.first, "\(outcome.log)")
        #expect(line.contains(#"user="\u{202E}evil\u{200B}""#), "\(line)")
        #expect(!line.unicodeScalars.contains { $0.properties.generalCategory == .format }, "\(line)")
    }
}

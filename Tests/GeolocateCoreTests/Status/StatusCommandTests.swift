import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import Logging
import Testing

/// `status` and `flush` as the core runs them for the command line: what each prints and how
/// it ends, without starting the binary.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct StatusCommandTests {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("status-\(UUID().uuidString)").path
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    func context(_ settings: Settings = Settings()) -> CommandContext {
        CommandContext(settings: settings, configPath: "/nonexistent/config.json", environment: ["GEOLOCATE_SOURCE": "nmea:-"],
                       stateDirectory: state, clock: FixedClock(1_795_000_000_000), elapsed: ManualMonotonicClock(), logger: logger)
    }

    func unreachable(_ host: String, _ port: Int) -> GPSDHealth {
        Issue.record("probed gpsd at \(host):\(port) with a replay configured")
        return GPSDHealth(reachable: false, error: "not asked")
    }

    @Test func aConfigurationThatCannotBeReadIsUnknownUnderCheckAndItsOwnErrorElsewhere() {
        let broken = GeolocateError.configuration(file: "/etc/geolocate/config.json", line: 3, reason: "a | b")
        let check = StatusReport.command(.check(.init()), context: .failure(broken), stateDirectory: state, probe: unreachable)
        #expect(check.exitStatus == .checkUnknown)
        #expect(check.report == "GEOLOCATE UNKNOWN - /etc/geolocate/config.json:3: a / b (fix the file, or move it away to start over) (state \(state))")
        #expect(check.problem == nil)
        let text = StatusReport.command(.text, context: .failure(broken), stateDirectory: state, probe: unreachable)
        #expect(text.exitStatus == .configuration)
        #expect(text.report == nil)
        #expect(text.problem == broken.description)
    }

    @Test func aStateDirectoryWithNothingInItIsOK() {
        let check = StatusReport.command(.check(.init()), context: .success(context()), stateDirectory: state, probe: unreachable)
        #expect(check.exitStatus == .checkOK)
        #expect(check.report?.hasPrefix("GEOLOCATE OK - no spool yet, 0 pending (state \(state))") == true, "\(check.report ?? "")")
        let text = StatusReport.command(.text, context: .success(context()), stateDirectory: state, probe: unreachable)
        #expect(text.exitStatus == .success)
        #expect(text.report?.contains("does not exist yet") == true)
    }

    /// Found by a hostile pass: a file named as the state directory was reported as an empty
    /// state directory (OK to a monitor); it is said, UNKNOWN under --check.
    @Test func aFileNamedAsTheStateDirectoryIsSaid() throws {
        try FileManager.default.createDirectory(atPath: (state as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try "not a directory\n".write(toFile: state, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: state) }
        let line = "cannot read state file \(state): it is not a directory (check --state-dir or GEOLOCATE_STATE_DIR)"
        let check = StatusReport.command(.check(.init()), context: .success(context()), stateDirectory: state, probe: unreachable)
        #expect(check.exitStatus == .checkUnknown)
        #expect(check.report == "GEOLOCATE UNKNOWN - \(line) (state \(state))")
        for form in [StatusForm.text, .json] {
            let shown = StatusReport.command(form, context: .success(context()), stateDirectory: state, probe: unreachable)
            #expect(shown.exitStatus == .dataError && shown.report == nil && shown.problem == line, "\(shown)")
        }
    }

    @Test func flushWithoutEndpointsIsAConfigurationError() async {
        await #expect {
            _ = try await Delivery.flushCommand(context(), FlushRequest(), mqtt: nil) { _ in }
        } throws: { ($0 as? GeolocateError)?.exitStatus == .configuration }
    }

    /// Found by a hostile pass: with none configured, a name said where to add one, not
    /// "(configured: )".
    @Test func anEndpointNamedWhereNoneIsConfiguredSaysHowToAddOne() async {
        await #expect {
            _ = try await Delivery.flushCommand(context(), FlushRequest(endpoints: ["nosuch"]), mqtt: nil) { _ in }
        } throws: { ($0 as? GeolocateError)?.description.hasPrefix("no endpoint is configured in /nonexistent/config.json; add one") == true }
        #expect {
            _ = try Settings().endpoint(named: "nosuch", configPath: "/c.json")
        } throws: { error in
            let error = error as? GeolocateError
            return error?.exitStatus == .configuration && error?.description.contains("none is configured in /c.json") == true
                && error?.description.contains("configured: )") == false
        }
    }
}

/// The table of exit codes against SPEC §8's numbers, written out here rather than read from
/// `ExitStatus`: a renumbering there fails this test.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ExitStatusTests {
    @Test func everyErrorEndsWithItsSPECCode() {
        let cases: [(GeolocateError, Int32)] = [
            (.usage("x"), 64), (.outputIsStateFile(path: "a", stateFile: "b"), 64), (.outputIsProtected(path: "a", what: "b"), 64),
            (.unreadableInput(reason: "x"), 65), (.stateUnreadable(path: "a", reason: "b"), 65), (.spoolDamaged(path: "a", reason: "b"), 65),
            (.inputMissing(path: "a"), 66), (.sourceUnavailable("x"), 69),
            (.stateNotWritable(path: "a", reason: "b"), 73), (.stateFileRefused(path: "a", reason: "b"), 73),
            (.uncommitted(path: "a", count: 1), 73), (.fileNotWritable(path: "a", reason: "b"), 73),
            (.outputFailed(reason: "x"), 74), (.spoolLocked(path: "a"), 75), (.spoolChanged(path: "a"), 75),
            (.configuration(file: "a", line: nil, reason: "b"), 78), (.permissionDenied(path: "a", writing: false, uid: 1), 78),
            (.permissionRequired("x"), 78), (.missingSetting("x"), 78), (.endpointRefused("x"), 78),
            (.locationRequired(reason: "x"), 3), (.valueNotSet(key: "x"), 1), (.policyDenied(PolicyResult(decision: .deny, rule: .tooOld)), 4),
        ]
        for (error, code) in cases { #expect(error.exitStatus.rawValue == code, "\(error)") }
        #expect([ExitStatus.checkOK, .checkWarning, .checkCritical, .checkUnknown].map(\.rawValue) == [0, 1, 2, 3])
        #expect([ExitStatus.success, .failure, .denied, .temporaryFailure].map(\.rawValue) == [0, 1, 4, 75])
    }
}

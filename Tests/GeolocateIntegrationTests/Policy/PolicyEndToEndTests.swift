import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SPEC §10.2 through the binary: the shipped example hook, run as a shell runs it. The
/// decision's rules, `--enforce`'s exit codes and bad zones files are tested in process
/// (PolicyDecisionTests).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct PolicyEndToEndTests {
    let geolocate = GeolocateProcess()

    /// Each log on a device of its own: Lyon then Maynooth on one device is a jump, denied
    /// before any zone (SafeDecisionEndToEndTests).
    @Test func theExampleHookAllowsTheOfficeAndDeniesElsewhere() throws {
        for (log, status, line) in [("kiosk-gnss.nmea", 0, "login allowed: allow: inside lyon-office by"),
                                    ("maynooth-drive.nmea", 1, "login denied: deny: outside every allow zone; the nearest is dublin-desk")] {
            let hook = try LoginHook.run("Examples/policy/login-hook.sh", config: "Examples/policy/config.json",
                                         stateDirectory: geolocate.stateDirectory + "/" + log, replay: GeolocateProcess.example(log))
            #expect(hook.status == status && hook.text.hasPrefix(line), "\(log): \(hook.text)")
        }
    }
}

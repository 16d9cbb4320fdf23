import Foundation
import GPSD
import GeolocateCore
import GeolocateModel
import Mosquitto
import TPM

/// `trigger ACTION --pam`: the login gate as `pam_exec` runs it (SPEC §14); the decision is
/// `LoginGate`'s.
extension TriggerCommand {
    /// Decides the login; the gate logs the decision itself.
    func runAsPAMHook() async -> ExitStatus {
        // The pam.d line is the administrator's: only its flags choose files, never the caller's environment.
        let gate = LoginGate(configPath: globalOptions.config ?? Paths.systemConfigFile,
                             stateDirectory: globalOptions.stateDir ?? Paths.systemStateDirectory,
                             callers: ProcessInfo.processInfo.environment, clock: globalOptions.clock, elapsed: globalOptions.elapsed,
                             logger: DiagnosticLog.systemLogger(), sources: SourceOpener.withGPSD,
                             mqtt: MosquittoTransport(elapsed: globalOptions.elapsed), tpm: TSS2TPM(elapsed: globalOptions.elapsed))
        let request = LoginGate.Request(trigger: request, post: post, endpoint: endpoint)
        return await withTaskExecutorPreference(WorkExecutor.shared) { await gate.decide(request) }.exitStatus
    }
}

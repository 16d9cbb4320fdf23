import ArgumentParser
import Foundation
import GPSD
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Mosquitto
import Synchronization

/// `trigger ACTION --pam`: the login gate as `pam_exec` runs it (SPEC §14).
///
/// Silent on stdout and stderr (the person logging in sees nothing), one syslog line per
/// decision, exit 0 to allow and 4 to deny; when geolocate cannot decide, `policy.onError`
/// chooses (deny: exit 1). The process ends by the action's timeout + 200 ms whatever happens.
extension TriggerCommand {
    /// The margin kept from the 200 ms SPEC §14 allows beyond the timeout, for starting the
    /// process and ending it.
    static let pamSlackSeconds = 0.1

    func runAsPAMHook() async -> Int32 {
        let callers = ProcessInfo.processInfo.environment
        let hook = PAMHook(environment: callers)
        if let code = TriggerCommand.exitWithoutDeciding(hook, action: action) { return code }
        let monotonic = globalOptions.elapsed
        let started = monotonic.nowSeconds
        let onError = ErrorPolicyChoice()
        let action = self.action
        @Sendable func failure(_ reason: String) -> Int32 {
            TriggerCommand.cannotDecide(hook, action: action, policy: onError.value, reason: reason)
        }
        let deadline = HookDeadline(seconds: Double(timeout ?? Settings()[ConfigKey.queryTimeout]) / 1000 + Self.pamSlackSeconds, clock: monotonic) {
            failure("no decision within the action's timeout")
        }
        // The pam.d line is the administrator's: only its flags choose files, never the caller's environment.
        let configPath = globalOptions.config ?? Paths.systemConfigFile
        let stateDirectory = globalOptions.stateDir ?? Paths.systemStateDirectory
        let environment = PAMHook.environment(from: callers, stateDirectory: stateDirectory)
        let logger = DiagnosticLog.systemLogger()
        // A file others could change must not choose even policy.onError.
        if let problem = TrustedPath.problem(configPath) { return failure("\(configPath) is not safe: \(problem)") }
        let store = ConfigStore(path: configPath)
        let settings: Settings
        do {
            settings = try store.settings()
        } catch {
            // An invalid value elsewhere leaves the administrator's onError readable.
            if let choice = store.errorPolicy() { onError.value = choice }
            return failure(describe(error))
        }
        onError.value = settings[ConfigKey.policyOnError]
        let trigger = Trigger(settings: settings, environment: environment, clock: globalOptions.clock, elapsed: monotonic, logger: logger,
                              openSource: SourceOpener.withGPSD.trustingOnlySystemListeners().trustingOnlyRootsNMEA().open)
        deadline.reset(seconds: Double(trigger.resolveTimeout(timeout, action: action)) / 1000 + Self.pamSlackSeconds, from: started)
        let serviceUser = TrustedPath.uid(ofUser: "geolocate").map { Set([$0]) } ?? []
        var unsafe = [(stateDirectory, serviceUser)]
        if let zones = settings[ConfigKey.policyZones] { unsafe.append((settings.resolvedPath(zones), [])) }
        for (path, owners) in unsafe {
            if let problem = TrustedPath.problem(path, owners: owners) {
                return failure("\(path) is not safe: \(problem)")
            }
        }
        // Without its state the hook would decide on no last known location and no signals;
        // with anything planted in it (a link, a FIFO, another user's file) it decides nothing.
        do {
            guard let directory = try OpenDirectory.open(stateDirectory, create: true) else { throw POSIXError(.ENOENT) }
            if let refusal = directory.stateRefusal() { return failure(refusal.description) }
        } catch {
            return failure("the state directory \(stateDirectory) is unusable: \(ErrorText.plain(error))")
        }
        // A token dated by --now would carry a time that is not the device's (SPEC §3).
        if now != nil, let name = endpoint ?? settings[ConfigKey.actionEndpoint, name: action],
           settings.endpoints.first(where: { $0.name == name })?.format == .jwt {
            return failure("--now cannot be used with a jwt endpoint (\(name)): a token's times are the device's own")
        }
        let record: Record
        do {
            record = try await trigger.run(TriggerRequest(
                action: action, mode: mode, timeoutMilliseconds: timeout, permission: permission?.granted, now: now,
                source: sourceOptions.specifier, replaySpeed: sourceOptions.replaySpeed, policy: true, subject: hook.subject))
        } catch {
            return failure(describe(error))
        }
        // Without the previous report nothing can be decided (SPEC §10.1): policy.onError.
        if record.policy?.rule == .previousUnreadable {
            return failure("the previous report cannot be read, so impossible travel cannot be judged")
        }
        let passes = record.policy.map { LocationPolicy.passes($0, settings: settings) } ?? false
        let code: Int32 = passes ? 0 : 4
        SystemLog.write(passes ? .notice : .warning,
                        hook.decisionLine(action: action, decision: passes ? "allow" : "deny", reason: record.policy?.rule.rawValue ?? "noPolicy",
                                          zone: record.policy?.zone, recordID: record.id))
        deadline.decided(code)
        await keep(record, settings: settings, configPath: configPath, environment: environment, logger: logger,
                   timeoutMilliseconds: deadline.remainingMilliseconds)
        return code
    }

    /// The exit of a hook run for a PAM type that decides nothing (0), or with none at all
    /// (1, fail closed, with its syslog line); `nil` when the hook decides.
    static func exitWithoutDeciding(_ hook: PAMHook, action: String) -> Int32? {
        switch hook.stage {
        case .notDeciding:
            return 0
        case .missing:
            SystemLog.write(.error, hook.decisionLine(action: action, decision: "deny", reason: "PAM_TYPE is not set: run it from pam_exec", recordID: nil))
            return 1
        case .decides:
            return nil
        }
    }

    /// What the gate does when it cannot decide: one syslog line, and `policy` (onError) chooses
    /// the exit: 0 to let the login on, 1 to refuse it.
    static func cannotDecide(_ hook: PAMHook, action: String, policy: ErrorPolicy, reason: String) -> Int32 {
        let decision = policy == .allow ? "allow" : "deny"
        SystemLog.write(policy == .allow ? .warning : .error,
                        hook.decisionLine(action: action, decision: decision, reason: "cannot decide (policy.onError \(policy.rawValue)): \(reason)", recordID: nil))
        return policy == .allow ? 0 : 1
    }

    /// The exit of `trigger --pam` whose pam.d line cannot be parsed (`message`, one line): as
    /// when it cannot decide, by the configuration's policy.onError (of the line's `--config`
    /// or the system's, when it is root's alone; else deny), never a usage error on a stderr
    /// nobody reads.
    static func refusingPAMLine(_ message: String, arguments: [String]) -> Int32 {
        let hook = PAMHook(environment: ProcessInfo.processInfo.environment)
        let named = arguments.dropFirst().first { !$0.hasPrefix("-") }
        let action = named.flatMap { name in (try? Trigger.validate(action: name)).map { name } } ?? "trigger"
        if let code = exitWithoutDeciding(hook, action: action) { return code }
        var configPath = Paths.systemConfigFile
        for (index, argument) in arguments.enumerated() {
            if argument.hasPrefix("--config=") { configPath = String(argument.dropFirst("--config=".count)) }
            if argument == "--config", index + 1 < arguments.count { configPath = arguments[index + 1] }
        }
        let policy = TrustedPath.problem(configPath) == nil ? ConfigStore(path: configPath).errorPolicy() ?? .deny : .deny
        return cannotDecide(hook, action: action, policy: policy, reason: "the pam.d line's arguments: \(message)")
    }

    /// Sends the record where `--post`, `--endpoint` or `actions.NAME.endpoint` say (it waits
    /// in the spool if that fails), else spools it for every configured endpoint; a failure
    /// is logged, and never changes the decision.
    private func keep(_ record: Record, settings: Settings, configPath: String, environment: [String: String],
                      logger: Logger, timeoutMilliseconds: Int64) async {
        let configured = settings[ConfigKey.actionEndpoint, name: action]
        do {
            if let target = post.map(Delivery.Target.url) ?? (endpoint ?? configured).map(Delivery.Target.endpoint) {
                let outcome = try await Delivery.post(record, to: target, settings: settings, configPath: configPath,
                                                      environment: environment, logger: logger, mqtt: MosquittoTransport(elapsed: globalOptions.elapsed),
                                                      clock: globalOptions.clock, elapsed: globalOptions.elapsed,
                                                      timeoutMilliseconds: timeoutMilliseconds)
                if case .spooled(let why) = outcome {
                    logger.warning("record \(record.id) was not sent (\(why)); it is in the spool for the next flush")
                }
            } else if !settings.endpoints.isEmpty {
                let stateDirectory = Paths.stateDirectory(environment: environment)
                let spool = try Spool(stateDirectory: stateDirectory, busyTimeout: 1, clock: globalOptions.clock)
                _ = try spool.enqueue(SpoolEntry(OutputPolicy(settings: settings).applied(to: record)),
                                      now: globalOptions.clock.nowMilliseconds, limits: settings.spoolLimits)
                StatusSummaryWriter(stateDirectory: stateDirectory, settings: settings, clock: globalOptions.clock,
                                    elapsed: globalOptions.elapsed, logger: logger).refresh(through: spool)
            }
        } catch {
            logger.error("record \(record.id) was not kept: \(describe(error))")
        }
    }

    private func describe(_ error: Error) -> String {
        (error as? GeolocateError)?.description ?? "\(error)"
    }
}

/// `policy.onError` as far as it is known: `deny` until the configuration is read; the
/// deadline's thread reads it.
final class ErrorPolicyChoice: Sendable {
    private let choice = Mutex(ErrorPolicy.deny)

    var value: ErrorPolicy {
        get { choice.withLock { $0 } }
        set { choice.withLock { $0 = newValue } }
    }
}

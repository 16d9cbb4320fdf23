import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Synchronization

/// The login gate, `trigger ACTION --pam` as `pam_exec` runs it (SPEC §14): one decision, its
/// one syslog line, and the record kept or sent after it.
///
/// Silent on stdout and stderr (the person logging in sees nothing); allow is exit 0, deny 4;
/// when it cannot decide, `policy.onError` chooses (deny: exit 1). The process ends by the
/// action's timeout + 200 ms whatever gpsd, the spool or an endpoint does (`HookDeadline`).
package struct LoginGate: Sendable {
    /// What the pam.d line asks for: the event and its collection, and where the record goes.
    package struct Request: Sendable {
        package var trigger: TriggerRequest
        /// `--post URL`.
        package var post: String?
        /// `--endpoint NAME`: else `actions.NAME.endpoint`.
        package var endpoint: String?

        package init(trigger: TriggerRequest, post: String? = nil, endpoint: String? = nil) {
            self.trigger = trigger
            self.post = post
            self.endpoint = endpoint
        }
    }

    /// The decision: how the process ends, the line the system log got, and the record it rests
    /// on (none when the gate decided nothing or could not decide).
    package struct Outcome: Sendable {
        package var exitStatus: ExitStatus
        package var line: String
        package var record: Record?
    }

    /// The pam.d line's `--config`, else the system's: only the line's flags choose files,
    /// never the environment of whoever logs in.
    package var configPath: String
    /// The pam.d line's `--state-dir`, else the system's.
    package var stateDirectory: String
    /// The process's environment: its `PAM_*` values say who logs in, from where, and for
    /// which stack (`PAMHook`); nothing else of it is used.
    package var callers: [String: String]
    package var clock: WallClock
    package var elapsed: MonotonicClock
    /// Diagnostics after the decision (a record not sent), to the system log in the program.
    package var logger: Logger
    /// Opens gpsd (`SourceOpener.withGPSD` in the program); the gate trusts only a gpsd that a
    /// system user listens as, and NMEA input only root controls.
    package var sources: SourceOpener
    /// Publishes to an MQTT endpoint; `nil` in a build without libmosquitto.
    package var mqtt: MQTTTransport?
    /// Signs tokens with a device key inside a TPM; `nil` in tests without one.
    package var tpm: (any TPMAccess)?
    /// Writes a decision line: `SystemLog.write` in the program, a collector in tests.
    package var log: @Sendable (SystemLog.Priority, String) -> Void
    /// Ends the process at the deadline with the decided code: `_exit` in the program.
    package var endProcess: @Sendable (Int32) -> Void

    /// The margin kept from the 200 ms SPEC §14 allows beyond the timeout, for starting the
    /// process and ending it.
    package static let slackSeconds = 0.1

    package init(configPath: String, stateDirectory: String, callers: [String: String], clock: WallClock, elapsed: MonotonicClock,
                 logger: Logger, sources: SourceOpener, mqtt: MQTTTransport?, tpm: (any TPMAccess)? = nil,
                 log: @escaping @Sendable (SystemLog.Priority, String) -> Void = SystemLog.write,
                 endProcess: @escaping @Sendable (Int32) -> Void = { _exit($0) }) {
        self.configPath = configPath
        self.stateDirectory = stateDirectory
        self.callers = callers
        self.clock = clock
        self.elapsed = elapsed
        self.logger = logger
        self.sources = sources
        self.mqtt = mqtt
        self.tpm = tpm
        self.log = log
        self.endProcess = endProcess
    }

    /// Decides the login, logs the decision and keeps the record (sent where the request or
    /// `actions.NAME.endpoint` says, else spooled for every endpoint), within the deadline.
    package func decide(_ request: Request) async -> Outcome {
        let hook = PAMHook(environment: callers)
        let action = request.trigger.action
        if let outcome = LoginGate.outcomeWithoutDeciding(hook, action: action, log: log) { return outcome }
        let started = elapsed.nowSeconds
        let onError = ErrorPolicyChoice()
        let log = self.log
        @Sendable func failure(_ reason: String) -> Outcome {
            LoginGate.cannotDecide(hook, action: action, policy: onError.value, reason: reason, log: log)
        }
        let deadline = HookDeadline(seconds: Double(request.trigger.timeoutMilliseconds ?? Settings()[ConfigKey.queryTimeout]) / 1000
                                        + Self.slackSeconds, clock: elapsed, end: endProcess) {
            failure("no decision within the action's timeout").exitStatus.rawValue
        }
        defer { deadline.cancel() }
        // A file others could change must not choose even policy.onError.
        if let problem = TrustedPath.problem(configPath) { return failure("\(configPath) is not safe: \(problem)") }
        let store = ConfigStore(path: configPath)
        let settings: Settings
        do {
            settings = try store.settings()
        } catch {
            // An invalid value elsewhere leaves the administrator's onError readable.
            if let choice = store.errorPolicy() { onError.value = choice }
            return failure(LoginGate.describe(error))
        }
        onError.value = settings[ConfigKey.policyOnError]
        let context = CommandContext(settings: settings, configPath: configPath,
                                     environment: PAMHook.environment(from: callers, stateDirectory: stateDirectory),
                                     stateDirectory: stateDirectory, clock: clock, elapsed: elapsed, logger: logger, tpm: tpm)
        let trigger = Trigger(context, openSource: sources.trustingOnlySystemListeners().trustingOnlyRootsNMEA().open)
        deadline.reset(seconds: Double(trigger.resolveTimeout(request.trigger.timeoutMilliseconds, action: action)) / 1000 + Self.slackSeconds,
                       from: started)
        if let problem = trustProblem(settings) { return failure(problem) }
        // A token dated by --now would carry a time that is not the device's (SPEC §3).
        if request.trigger.now != nil, let name = request.endpoint ?? settings[ConfigKey.actionEndpoint, name: action],
           settings.endpoints.first(where: { $0.name == name })?.format == .jwt {
            return failure("--now cannot be used with a jwt endpoint (\(name)): a token's times are the device's own")
        }
        var collection = request.trigger
        collection.policy = true
        collection.subject = hook.subject
        collection.startedAt = started
        let record: Record
        do {
            record = try await trigger.run(collection)
        } catch {
            return failure(LoginGate.describe(error))
        }
        // Without the previous report nothing can be decided (SPEC §10.1): policy.onError.
        if record.policy?.rule == .previousUnreadable {
            return failure("the previous report cannot be read, so impossible travel cannot be judged")
        }
        let passes = record.policy.map { LocationPolicy.passes($0, settings: settings) } ?? false
        let status: ExitStatus = passes ? .success : .denied
        let line = hook.decisionLine(action: action, decision: passes ? "allow" : "deny", reason: record.policy?.rule.rawValue ?? "noPolicy",
                                     zone: record.policy?.zone, recordID: record.id)
        log(passes ? .notice : .warning, line)
        deadline.decided(status.rawValue)
        await keep(record, request, context, timeoutMilliseconds: deadline.remainingMilliseconds)
        return Outcome(exitStatus: status, line: line, record: record)
    }

    /// Why a file or directory the decision rests on cannot be trusted (others could change
    /// it, or something is planted in the state directory), or `nil`. Without its state the
    /// gate would decide on no last known location and no signals; with anything planted in it
    /// (a link, a FIFO, another user's file) it decides nothing.
    private func trustProblem(_ settings: Settings) -> String? {
        let serviceUser = TrustedPath.uid(ofUser: "geolocate").map { Set([$0]) } ?? []
        var checked = [(stateDirectory, serviceUser)]
        if let zones = settings[ConfigKey.policyZones] { checked.append((settings.resolvedPath(zones), [])) }
        for (path, owners) in checked {
            if let problem = TrustedPath.problem(path, owners: owners) { return "\(path) is not safe: \(problem)" }
        }
        do {
            guard let directory = try OpenDirectory.open(stateDirectory, create: true) else { throw POSIXError(.ENOENT) }
            return directory.stateRefusal()?.description
        } catch {
            return "the state directory \(stateDirectory) is unusable: \(ErrorText.plain(error))"
        }
    }

    /// Sends the record where `--post`, `--endpoint` or `actions.NAME.endpoint` say (it waits
    /// in the spool if that fails), else spools it for every configured endpoint; a failure is
    /// logged, and never changes the decision.
    private func keep(_ record: Record, _ request: Request, _ context: CommandContext, timeoutMilliseconds: Int64) async {
        let settings = context.settings
        let configured = settings[ConfigKey.actionEndpoint, name: request.trigger.action]
        do {
            if let target = request.post.map(Delivery.Target.url) ?? (request.endpoint ?? configured).map(Delivery.Target.endpoint) {
                let outcome = try await Delivery.post(record, to: target, context, role: .gate, mqtt: mqtt, timeoutMilliseconds: timeoutMilliseconds)
                if case .spooled(let why) = outcome {
                    logger.warning("record \(record.id) was not sent (\(why)); it is in the spool for the next flush")
                }
            } else if !settings.endpoints.isEmpty {
                let spool = try Spool(stateDirectory: context.stateDirectory, busyTimeout: .seconds(1), clock: clock)
                _ = try spool.enqueue(SpoolEntry(OutputPolicy(settings: settings).applied(to: record)),
                                      now: clock.nowMilliseconds, limits: settings.spoolLimits)
                StatusSummaryWriter(context).refresh(through: spool)
            }
        } catch {
            logger.error("record \(record.id) was not kept: \(LoginGate.describe(error))")
        }
    }

    /// An error as the decision line says it: ours in our words, any other as Swift prints it.
    private static func describe(_ error: Error) -> String {
        (error as? GeolocateError)?.description ?? "\(error)"
    }

    /// The outcome of a hook run for a PAM type that decides nothing (0), or with none at all
    /// (1, fail closed, with its syslog line); `nil` when the hook decides.
    package static func outcomeWithoutDeciding(_ hook: PAMHook, action: String,
                                               log: @Sendable (SystemLog.Priority, String) -> Void) -> Outcome? {
        switch hook.stage {
        case .notDeciding:
            return Outcome(exitStatus: .success, line: "", record: nil)
        case .missing:
            let line = hook.decisionLine(action: action, decision: "deny", reason: "PAM_TYPE is not set: run it from pam_exec", recordID: nil)
            log(.error, line)
            return Outcome(exitStatus: .failure, line: line, record: nil)
        case .decides:
            return nil
        }
    }

    /// What the gate does when it cannot decide: one syslog line, and `policy` (onError)
    /// chooses: let the login on (0) or refuse it (1).
    package static func cannotDecide(_ hook: PAMHook, action: String, policy: ErrorPolicy, reason: String,
                                     log: @Sendable (SystemLog.Priority, String) -> Void) -> Outcome {
        let allow = policy == .allow
        let line = hook.decisionLine(action: action, decision: allow ? "allow" : "deny",
                                     reason: "cannot decide (policy.onError \(policy.rawValue)): \(reason)", recordID: nil)
        log(allow ? .warning : .error, line)
        return Outcome(exitStatus: allow ? .success : .failure, line: line, record: nil)
    }

    /// The outcome of a pam.d line that cannot be parsed (`message`, one line): as when the
    /// gate cannot decide, by the configuration's policy.onError (of the line's `--config`, or
    /// the system's, when it is root's alone; else deny), never a usage error on a stderr
    /// nobody reads.
    package static func refusingLine(_ message: String, arguments: [String], callers: [String: String],
                                     log: @escaping @Sendable (SystemLog.Priority, String) -> Void = SystemLog.write) -> Outcome {
        let hook = PAMHook(environment: callers)
        let named = arguments.dropFirst().first { !$0.hasPrefix("-") }
        let action = named.flatMap { name in (try? Trigger.validate(action: name)).map { name } } ?? "trigger"
        if let outcome = outcomeWithoutDeciding(hook, action: action, log: log) { return outcome }
        var configPath = Paths.systemConfigFile
        for (index, argument) in arguments.enumerated() {
            if argument.hasPrefix("--config=") { configPath = String(argument.dropFirst("--config=".count)) }
            if argument == "--config", index + 1 < arguments.count { configPath = arguments[index + 1] }
        }
        let policy = TrustedPath.problem(configPath) == nil ? ConfigStore(path: configPath).errorPolicy() ?? .deny : .deny
        return cannotDecide(hook, action: action, policy: policy, reason: "the pam.d line's arguments: \(message)", log: log)
    }
}

/// `policy.onError` as far as it is known: `deny` until the configuration is read; the
/// deadline's thread reads it.
private final class ErrorPolicyChoice: Sendable {
    private let choice = Mutex(ErrorPolicy.deny)

    var value: ErrorPolicy {
        get { choice.withLock { $0 } }
        set { choice.withLock { $0 = newValue } }
    }
}

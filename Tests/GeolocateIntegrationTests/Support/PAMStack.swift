import Foundation

/// A real PAM stack for the login gate's tests: `pamtester` against a pam.d service of the
/// test's own, with the system log captured (`Support/pam-harness.sh`).
struct PAMStack {
    struct Outcome {
        /// pamtester's exit status: 0 when the stack succeeded.
        var status: Int32
        /// What pamtester printed: the PAM conversation, where anything the hook printed shows.
        var conversation: String
        /// Each syslog datagram, as sent (`<PRI>TIMESTAMP TAG[PID]: MESSAGE`).
        var log: [String]

        /// The lines geolocate wrote (tag `geolocate[PID]`).
        var geolocateLines: [String] { log.filter { $0.range(of: #"> ?[A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} geolocate\[[0-9]+\]: "#, options: .regularExpression) != nil } }

        /// The one decision line (`decision=` outside a quoted value).
        var decisionLines: [String] { geolocateLines.filter { PAMStack.unquoted($0).contains(" decision=") } }
    }

    static let harness = GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/pam-harness.sh").path

    /// Whether this run can use the stack: root (mount namespaces, /etc/pam.d). As root the
    /// tests run and fail when pamtester is missing (`make test` installs it), so CI never
    /// skips them in silence.
    static var isAvailable: Bool { getuid() == 0 }

    /// The pam.d service: `geolocate` (with `arguments`) in the auth and the account stacks,
    /// each followed by pam_permit, as `Examples/pam/geolocate.pam` puts it in a real one.
    /// `stdout` makes pam_exec show anything the hook prints in the conversation.
    static func service(binary: String, arguments: [String]) -> String {
        let command = ([binary] + arguments).joined(separator: " ")
        return """
            auth requisite pam_exec.so quiet stdout \(command)
            auth required pam_permit.so
            account requisite pam_exec.so quiet stdout \(command)
            account required pam_permit.so

            """
    }

    /// Runs `operation` (`authenticate` or `acct_mgmt`) for `user` through `service`, with PAM
    /// items such as `rhost=10.0.0.1` or `tty=ssh`. With `serviceUID`, the stack sees a system
    /// user `geolocate` of that uid (in its own mount namespace; the machine's users stay).
    /// `harness` sets more of `pam-harness.sh`'s variables, such as `PAM_HARNESS_READONLY`.
    static func run(service: String, user: String, operation: String, items: [String] = [], serviceUID: uid_t? = nil,
                    harness settings: [String: String] = [:], in directory: URL) throws -> Outcome {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("pam-service-\(UUID().uuidString)")
        try service.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let variables = (serviceUID.map { ["PAM_HARNESS_SERVICE_UID=\($0)"] } ?? []) + settings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let arguments = (variables.isEmpty ? [] : ["env"] + variables) + [harness, file.path, user, operation]
            + items.flatMap { ["-I", $0] }
        let outcome = try Spawn.run(arguments, mergingStderr: true)
        let text = String(decoding: outcome.stdout, as: UTF8.self)
        let lines = text.split(separator: "\n").map(String.init)
        guard let rcLine = lines.lastIndex(where: { $0.hasPrefix("rc=") }), let status = Int32(lines[rcLine].dropFirst(3)) else {
            throw Tool.Failed(arguments: arguments, status: outcome.status, stderr: text)
        }
        return Outcome(status: status, conversation: lines[..<rcLine].joined(separator: "\n"),
                       log: lines[(rcLine + 1)...].filter { $0.hasPrefix("log: ") }.map { String($0.dropFirst(5)) })
    }

    /// `line` with every double-quoted value (and its escapes) taken out: what a syslog
    /// reader splitting on spaces sees as fields.
    static func unquoted(_ line: String) -> String {
        var result = ""
        var inQuotes = false
        var escaped = false
        for character in line {
            if inQuotes {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inQuotes = false }
            } else if character == "\"" {
                inQuotes = true
                result.append("\"\"")
            } else {
                result.append(character)
            }
        }
        return result
    }
}

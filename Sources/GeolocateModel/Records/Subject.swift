/// Who a login hook ran for, as PAM says (SPEC §14): the record's `subject`.
///
/// Every value comes from the environment `pam_exec` sets, which the person logging in can
/// shape (a user name or remote host name of their choosing), so each is cut to
/// `maximumBytes` and written only through an encoder or `syslogField`, never as it came.
package struct Subject: Sendable, Equatable {
    /// `PAM_USER`: the account being logged in to.
    package var user: String?
    /// `PAM_SERVICE`: the program asking (sshd, login, su…).
    package var service: String?
    /// `PAM_RHOST`: the remote host, as the client named it.
    package var remoteHost: String?
    /// `PAM_TTY`: the terminal, or what the service puts there (`ssh`).
    package var tty: String?

    /// The longest value kept, in UTF-8 bytes.
    package static let maximumBytes = 256

    package init(user: String? = nil, service: String? = nil, remoteHost: String? = nil, tty: String? = nil) {
        self.user = user.map(Subject.cut)
        self.service = service.map(Subject.cut)
        self.remoteHost = remoteHost.map(Subject.cut)
        self.tty = tty.map(Subject.cut)
    }

    /// The subject `pam_exec` describes in `environment`; `nil` values are not set (or empty).
    package init(pamEnvironment environment: [String: String]) {
        func value(_ key: String) -> String? { environment[key].flatMap { $0.isEmpty ? nil : $0 } }
        self.init(user: value("PAM_USER"), service: value("PAM_SERVICE"), remoteHost: value("PAM_RHOST"), tty: value("PAM_TTY"))
    }

    /// `text` cut to at most `maximumBytes` UTF-8 bytes, at a character boundary.
    package static func cut(_ text: String) -> String {
        guard text.utf8.count > maximumBytes else { return text }
        var kept = ""
        var bytes = 0
        for scalar in text.unicodeScalars {
            let size = String(scalar).utf8.count
            guard bytes + size <= maximumBytes else { break }
            kept.unicodeScalars.append(scalar)
            bytes += size
        }
        return kept
    }

    /// `value` as one quoted syslog field: `"`, `\`, control and Unicode format characters
    /// escaped, so `user="x decision=allow"` stays one field, no value forges a second line
    /// and none reads backwards (`\u{202E}`).
    package static func syslogField(_ value: String?) -> String {
        guard let value else { return "-" }
        var quoted = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar.properties.generalCategory == .control:
                quoted += "\\x" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            // Format characters (bidi overrides such as U+202E, zero-width ones) and line or
            // paragraph separators would make the line read otherwise than it is (SPEC §14).
            case _ where [.format, .lineSeparator, .paragraphSeparator].contains(scalar.properties.generalCategory):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                quoted += "\\u{" + hex + "}"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }
}

import Foundation
import GeolocateDelivery
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// `trigger ACTION --pam`: what `pam_exec` runs (SPEC §14), and what it may trust.
///
/// The hook runs with the environment of whoever is logging in (under `su`, the calling
/// user's), so nothing it reads from there may choose a file, a source or a state directory:
/// `environment(from:stateDirectory:)` keeps only the `PAM_*` values and a fixed `PATH`.
package struct PAMHook: Sendable {
    /// `PAM_TYPE`: which stack runs the hook.
    package enum Stage: Equatable, Sendable {
        /// `auth` or `account`: the hook decides.
        case decides(String)
        /// Any other type (`session`, `password`, `open_session`…): nothing to decide, exit 0.
        case notDeciding(String)
        /// No `PAM_TYPE`: not run by `pam_exec`; refused (fail closed).
        case missing
    }

    package var stage: Stage
    package var subject: Subject

    /// The `PATH` the hook runs with: the system's, never the caller's.
    package static let path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

    package init(environment: [String: String]) {
        switch environment["PAM_TYPE"] {
        case nil, "": stage = .missing
        case let type? where type == "auth" || type == "account": stage = .decides(type)
        case let type?: stage = .notDeciding(type)
        }
        subject = Subject(pamEnvironment: environment)
    }

    /// The environment the hook's collection sees: the `PAM_*` values, `PATH`, and the state
    /// directory as `GEOLOCATE_STATE_DIR`; no `GEOLOCATE_*`, `XDG_*` or `HOME` of the caller's.
    package static func environment(from callers: [String: String], stateDirectory: String) -> [String: String] {
        var environment = callers.filter { $0.key.hasPrefix("PAM_") }
        environment["PATH"] = path
        environment["GEOLOCATE_STATE_DIR"] = stateDirectory
        return environment
    }

    /// The one syslog line of a decision: who, from where, the decision, why and the record,
    /// never coordinates (the log is read more widely than the spool).
    package func decisionLine(action: String, decision: String, reason: String, zone: String? = nil, recordID: String?) -> String {
        var line = "\(action) user=\(Subject.syslogField(subject.user)) service=\(Subject.syslogField(subject.service))"
        line += " rhost=\(Subject.syslogField(subject.remoteHost)) tty=\(Subject.syslogField(subject.tty))"
        line += " decision=\(decision) reason=\(Subject.syslogField(reason))"
        if let zone { line += " zone=\(Subject.syslogField(zone))" }
        if let recordID { line += " record=\(recordID)" }
        return line
    }
}

extension SourceOpener {
    /// This opener, refusing a gpsd on this machine whose port a user other than root,
    /// `gpsd` or the one running geolocate listens on (SPEC §14): such a source is
    /// unavailable, so nothing it serves is reported, remembered as the last known location
    /// or weighed by a login gate.
    ///
    /// Port 2947 is unprivileged: while gpsd is down any local user could listen there. The
    /// host counts as this machine when any address it resolves to is a loopback, unspecified
    /// or local interface address (`localhost`, `[::ffff:127.0.0.1]`, the host name, `0.0.0.0`);
    /// a remote gpsd cannot be checked this way and is opened as before.
    package func trustingOnlySystemListeners() -> SourceOpener {
        let inner = self
        return SourceOpener { host, port, opening in
            if PortListener.isThisMachine(host) {
                let trusted = Set([0, geteuid()] + [TrustedPath.uid(ofUser: "gpsd"), TrustedPath.uid(ofUser: "_gpsd")].compactMap { $0 })
                if let stranger = PortListener.owners(port: port).subtracting(trusted).min() {
                    throw SourceError.unavailable("gpsd://\(host):\(port): the port is held by uid \(stranger), not root, gpsd or this user, so its fixes are not trusted")
                }
            }
            return try inner.gpsd(host, port, opening)
        }
    }
}

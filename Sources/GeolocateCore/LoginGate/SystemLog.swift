import Foundation
import GeolocateConfig
import GeolocateDelivery

#if canImport(Glibc)
import Glibc
#endif

/// Lines to the system log, facility authpriv: where PAM modules write, readable by root only.
package enum SystemLog {
    /// The priorities geolocate writes at.
    package enum Priority: Sendable {
        case error, warning, notice, info

        var value: Int32 {
            switch self {
            case .error: return LOG_ERR
            case .warning: return LOG_WARNING
            case .notice: return LOG_NOTICE
            case .info: return LOG_INFO
            }
        }
    }

    /// Writes `line` as `geolocate[PID]: line` to authpriv at `priority`.
    ///
    /// The text goes as a `%s` argument, never as the format: it holds what users typed.
    package static func write(_ priority: Priority, _ line: String) {
        openlog(identity, LOG_PID, LOG_AUTHPRIV)
        line.withCString { text in
            withVaList([text]) { vsyslog(priority.value, "%s", $0) }
        }
    }

    /// The tag before each line; `openlog` keeps the pointer, so it must live as long as the process.
    private nonisolated(unsafe) static let identity = strdup("geolocate")
}

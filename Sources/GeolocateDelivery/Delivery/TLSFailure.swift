import Foundation
import GeolocateConfig
import NIOSSL

/// Why a TLS handshake failed, read from the TLS library's error so that a message can say it
/// in our words: the library's text names its own types and the path it was built in.
///
/// Each of these says the destination or its settings are wrong, never the records: retrying
/// cannot help, so a flush stops for the endpoint and exits 78.
package enum TLSFailure: Sendable, Equatable {
    /// The server's certificate does not chain to a trusted CA, or has expired.
    case untrusted
    /// The certificate is trusted but names other hosts than the URL's.
    case wrongHost
    /// The server asked for a client certificate and got none, or refused the one it got.
    case clientCertificateRefused
    /// The server ended the handshake with a bare "handshake failure": a client certificate
    /// it requires, or no protocol version or cipher in common.
    case handshakeRefused
    /// What answered does not speak TLS (a plain HTTP port).
    case notTLS
    /// Another handshake failure.
    case failed

    /// The failure `error` stands for; `nil` when it is no TLS failure (a reset, a timeout:
    /// the network's, retried).
    package init?(_ error: Error) {
        if let error = error as? NIOSSLExtraError {
            guard error == .failedToValidateHostname else { return nil }
            self = .wrongHost
            return
        }
        let reasons: String
        switch error {
        case NIOSSLError.handshakeFailed(let cause):
            reasons = String(describing: cause)
        case let cause as BoringSSLError:
            // An alert after the client finished its side of a TLS 1.3 handshake, such as
            // "certificate required", arrives with the first read.
            guard case .sslError = cause else { return nil }
            reasons = String(describing: cause)
        default:
            return nil
        }
        self = TLSFailure(reasons: reasons) ?? .failed
    }

    /// The failure BoringSSL's reason codes in `text` name (`CERTIFICATE_VERIFY_FAILED`, the
    /// alert the server sent); `nil` for none of them.
    private init?(reasons text: String) {
        let certificateAlerts = ["CERTIFICATE_REQUIRED", "BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN", "CERTIFICATE_EXPIRED",
                                 "CERTIFICATE_REVOKED", "UNSUPPORTED_CERTIFICATE", "ACCESS_DENIED"]
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            self = .untrusted
        } else if certificateAlerts.contains(where: { text.contains("ALERT_" + $0) }) {
            self = .clientCertificateRefused
        } else if text.contains("ALERT_HANDSHAKE_FAILURE") || text.contains("ALERT_PROTOCOL_VERSION") {
            self = .handshakeRefused
        } else if ["WRONG_VERSION_NUMBER", "HTTP_REQUEST", "PACKET_LENGTH_TOO_LONG"].contains(where: text.contains) {
            self = .notTLS
        } else {
            return nil
        }
    }

    /// Whose settings a message about a failure names.
    package enum Destination: Sendable {
        /// `endpoints.NAME.*`, with its files.
        case endpoint(String, TLSFiles)
        /// A `trigger --post` URL: no settings, the system's CAs.
        case postURL
        /// `geocoder.caFile`; the geocoder presents no certificate.
        case geocoder(caFile: String?)
    }

    /// The failure in one line, for `host`, naming the setting that would fix it:
    /// "TLS certificate not trusted (set endpoints.primary.caFile to the CA that signed it)".
    package func text(host: String, for destination: Destination) -> String {
        // Where a CA or a client certificate would be set, or why none can be.
        let caKey: String
        let caFile: String?
        let certificate: (keys: String, file: String?)?
        switch destination {
        case .endpoint(let name, let files):
            (caKey, caFile) = ("endpoints.\(name).caFile", files.caFile)
            certificate = ("endpoints.\(name).certFile and endpoints.\(name).keyFile", files.certFile)
        case .postURL:
            return postURLText(host: host)
        case .geocoder(let file):
            (caKey, caFile, certificate) = ("geocoder.caFile", file, nil)
        }
        switch self {
        case .untrusted:
            guard let caFile else { return "TLS certificate not trusted (set \(caKey) to the CA that signed it)" }
            return "TLS certificate not trusted: not signed by a CA in \(caKey) (\(caFile)), or expired"
        case .clientCertificateRefused:
            guard let certificate else { return "the server requires a TLS client certificate, which the geocoder does not present" }
            guard let file = certificate.file else { return "the server requires a TLS client certificate (set \(certificate.keys))" }
            return "the server refused this device's TLS certificate (check \(certificate.keys), \(file): is it signed by a CA the server trusts?)"
        case .handshakeRefused:
            guard let certificate, certificate.file == nil else {
                return "the server refused the TLS handshake (is a client certificate or a TLS version it requires missing?)"
            }
            return "the server refused the TLS handshake (does it require a client certificate? set \(certificate.keys))"
        case .wrongHost, .notTLS, .failed:
            return postURLText(host: host)
        }
    }

    /// The failure for a destination with no TLS settings (a `--post` URL), and the failures
    /// no setting fixes.
    private func postURLText(host: String) -> String {
        let noSettings = "a --post URL has no TLS settings: configure an endpoint with endpoints.NAME."
        switch self {
        case .untrusted: return "TLS certificate not trusted by the system's CAs (\(noSettings)caFile)"
        case .clientCertificateRefused: return "the server requires a TLS client certificate (\(noSettings)certFile and keyFile)"
        case .handshakeRefused: return "the server refused the TLS handshake (does it require a client certificate? \(noSettings)certFile)"
        case .wrongHost: return "TLS certificate not valid for \(host) (the URL must name a host the certificate lists)"
        case .notTLS: return "\(host) does not speak TLS on this port (check the URL's scheme and port)"
        case .failed: return "the TLS handshake with \(host) failed"
        }
    }
}

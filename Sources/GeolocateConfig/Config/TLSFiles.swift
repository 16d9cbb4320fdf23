/// The TLS files of a destination (`endpoints.NAME.caFile`, `.certFile`, `.keyFile`, or
/// `geocoder.caFile`): the CA bundle its certificate must chain to, and this device's
/// certificate and key for mutual TLS.
///
/// The same keys serve `https://` (read here, into AsyncHTTPClient's configuration) and
/// `mqtts://` (handed to libmosquitto, which opens them itself).
package struct TLSFiles: Sendable, Equatable {
    /// The CA certificates (PEM) trusted instead of the system's.
    package var caFile: String?
    /// This device's certificate (PEM), with its chain.
    package var certFile: String?
    /// The private key (PEM, unencrypted) of `certFile`.
    package var keyFile: String?

    package init(caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
    }

    /// Whether no file is set: the system's CAs, no client certificate.
    package var isEmpty: Bool { caFile == nil && certFile == nil && keyFile == nil }

    /// The largest CA, certificate or key file read: the system's whole CA bundle is a tenth of it.
    package static let maximumBytes = 4 * 1024 * 1024
}

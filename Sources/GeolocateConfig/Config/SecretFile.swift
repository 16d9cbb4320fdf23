import Foundation
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// Secret settings whose value names a file (`file:/PATH`, SPEC §7), read when a request is
/// sent: a header value (`endpoints.NAME.headers.X`) or a password (`endpoints.NAME.password`).
///
/// The secret then need not sit in the configuration file, which an administrator may open
/// to 0644 for a PAM stack: systemd credentials (`file:/run/credentials/…`) or a 0600 token
/// file keep it. The file is read as every other file geolocate did not write: a regular file
/// of bounded size, never a FIFO; one trailing newline (`echo token > file`) is not part of it.
package enum SecretFile {
    /// The prefix of a value that names a file rather than being the secret.
    package static let prefix = "file:"

    /// A token, a password or a certificate-sized bearer value fits many times over.
    package static let maximumBytes = 64 * 1024

    /// The absolute path `value` names (`file:/PATH`), or `nil` when it is the secret itself.
    package static func path(in value: String) -> String? {
        value.hasPrefix(prefix + "/") ? String(value.dropFirst(prefix.count)) : nil
    }

    /// Why `value` is refused as a secret setting's value: a `file:` value must name an
    /// absolute path, or the working directory of whoever runs geolocate (`/` under PAM)
    /// would decide which file is read.
    package static func problem(in value: String) -> String? {
        guard value.hasPrefix(prefix), path(in: value) == nil else { return nil }
        return "a file: value needs an absolute path (file:/PATH)"
    }

    /// `value` as it is sent: the contents of the file it names without one trailing
    /// newline, or `value` itself when it names no file.
    /// - Throws: `GeolocateError.missingSetting` (78) naming `key` and the file, never the
    ///   contents: a file that is missing, unreadable, not a regular file, too large, empty,
    ///   or that holds what `key` refuses (a line break in a header value).
    package static func resolve(_ value: String, key: String) throws -> String {
        guard let path = path(in: value) else { return value }
        func refused(_ why: String) -> GeolocateError { .missingSetting("\(key) is \(value), which \(why)") }
        let data: Data
        switch BoundedFile.read(path, limit: maximumBytes) {
        case .success(let contents): data = contents
        case .failure(.unreadable(let code)) where code == EACCES || code == EPERM:
            throw refused("cannot be read: permission denied (make it readable by UID \(geteuid()), the user running geolocate)")
        case .failure(let failure): throw refused(failure.text(limit: maximumBytes))
        }
        guard var text = String(data: data, encoding: .utf8) else { throw refused("is not UTF-8 text") }
        if text.hasSuffix("\r\n") { text.removeLast() } else if text.hasSuffix("\n") { text.removeLast() }
        guard !text.isEmpty else { throw refused("is empty") }
        if let setting = ConfigKey.setting(for: key.split(separator: ".").map(String.init)), let problem = setting.check(.string(text)) {
            throw refused("holds a value geolocate cannot send: \(problem)")
        }
        return text
    }
}

extension Endpoint {
    /// This endpoint with each `file:/PATH` header value and password replaced by the file's
    /// contents, read now, as it is about to be used.
    /// - Throws: `GeolocateError.missingSetting` (78) naming the key and the file.
    package func readingSecretFiles() throws -> Endpoint {
        guard !isPostDestination else { return self }
        var endpoint = self
        for (name, value) in headers {
            endpoint.headers[name] = try SecretFile.resolve(value, key: "endpoints.\(self.name).headers.\(name)")
        }
        endpoint.mqtt.password = try mqtt.password.map { try SecretFile.resolve($0, key: "endpoints.\(self.name).password") }
        return endpoint
    }
}

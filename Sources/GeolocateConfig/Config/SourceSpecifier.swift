import Foundation
import GeolocateModel

/// Where locations come from: `gpsd`, `gpsd://HOST:PORT` or `nmea:FILE`.
package enum SourceSpecifier: Sendable, Equatable, CustomStringConvertible {
    case gpsd(host: String, port: Int)
    case nmea(path: String)

    package static let defaultGPSD = SourceSpecifier.gpsd(host: "localhost", port: 2947)

    package init(parsing text: String) throws {
        if text == "gpsd" {
            self = .defaultGPSD
        } else if text.hasPrefix("gpsd://") {
            // HOST, HOST:PORT, or an IPv6 address in brackets: [::1] or [::1]:2947.
            let rest = text.dropFirst("gpsd://".count)
            var host = rest[...]
            var portText: Substring?
            if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") {
                host = rest[rest.index(after: rest.startIndex)..<close]
                let after = rest[rest.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":") else { throw SourceSpecifier.invalid(text) }
                    portText = after.dropFirst()
                }
            } else if let colon = rest.firstIndex(of: ":") {
                host = rest[..<colon]
                portText = rest[rest.index(after: colon)...]
            }
            // A host is a name or an address: no spaces or control characters, which would
            // also reach messages and `config get` raw.
            guard !host.isEmpty, !host.contains("/"), !host.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }),
                  portText.map({ !$0.contains(":") }) ?? true,
                  let port = portText.map({ Int($0) }) ?? 2947, (1...65535).contains(port)
            else { throw SourceSpecifier.invalid(text) }
            self = .gpsd(host: String(host), port: port)
        } else if text.hasPrefix("nmea:"), text.count > 5 {
            self = .nmea(path: String(text.dropFirst(5)))
        } else {
            throw SourceSpecifier.invalid(text)
        }
    }

    private static func invalid(_ text: String) -> GeolocateError {
        .usage("invalid source '\(ConfigStore.redactedURL(text))' (use gpsd, gpsd://HOST:PORT, gpsd://[IPv6]:PORT or nmea:FILE)")
    }

    package var description: String {
        switch self {
        case .gpsd(let host, let port): return host.contains(":") ? "gpsd://[\(host)]:\(port)" : "gpsd://\(host):\(port)"
        case .nmea(let path): return "nmea:\(path)"
        }
    }
}

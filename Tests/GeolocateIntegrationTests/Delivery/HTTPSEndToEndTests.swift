import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `flush` and `trigger --endpoint` to an `https://` endpoint behind a private CA (SPEC §14):
/// a real TLS server on 127.0.0.1 (`collector.py` with a certificate openssl made for the
/// test), `endpoints.NAME.caFile`, `.certFile` and `.keyFile`, and every way the handshake
/// can fail said in plain words, as a configuration error (78) that is not retried.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct HTTPSEndToEndTests {
    let geolocate = GeolocateProcess()
    let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")

    /// Spools the fixes of the kiosk log and returns their ids.
    func spool() throws -> [String] {
        let result = try geolocate.run(["track", "--replay", kiosk, "--every-fix", "--stdout", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
        let ids = result.stdout.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
        }
        try #require(!ids.isEmpty)
        return ids
    }

    func set(_ settings: [(String, String)]) throws {
        for (key, value) in settings {
            let result = try geolocate.run(["config", "set", key, value])
            try #require(result.status == 0, "\(key): \(result.stderr)")
        }
    }

    func spooledCount() throws -> Int { try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).count() }

    /// What `status --json` keeps as the endpoint's last error.
    func lastError(of name: String) throws -> String? {
        let status = try geolocate.run(["status", "--json"])
        let endpoints = try status.json()["endpoints"] as? [[String: Any]] ?? []
        return endpoints.first { $0["name"] as? String == name }?["lastError"] as? String
    }

    /// A flush that fails: 78, one plain line on stderr (holding `line` when given) and
    /// nothing on stdout, the records still pending, and the endpoint's last error the same
    /// words, `expected`.
    func expectConfigurationError(_ expected: String, line: String? = nil, pending: Int,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
        let result = try geolocate.run(["flush"])
        #expect(result.status == 78, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(line ?? expected), "\(result.stderr)", sourceLocation: sourceLocation)
        for leak in ["NIOSSL", "BoringSSL", ".build", "handshake.cc", "sslError", "OPENSSL_internal"] {
            #expect(!result.stderr.contains(leak), "\(leak) in \(result.stderr)", sourceLocation: sourceLocation)
        }
        #expect(try spooledCount() == pending, sourceLocation: sourceLocation)
        let kept = try lastError(of: "secure")
        #expect(kept?.contains(expected) == true, "\(kept ?? "none")", sourceLocation: sourceLocation)
    }

    /// curl, an independent client, accepts the test's server with the test's CA and refuses
    /// it without: the PKI is right, so a failure below is geolocate's.
    @Test func curlTrustsTheServerOnlyThroughTheTestCA() throws {
        let pki = try TestCertificates()
        let collector = try Collector(tls: pki.server())
        defer { collector.stop() }
        let answer = try Tool.run(["curl", "-sS", "--cacert", pki.path("ca.crt"), "-d", "{}", collector.url("/curl")])
        #expect(answer == #"{"ok":true}"#)
        #expect(throws: Tool.Failed.self) { try Tool.run(["curl", "-sS", "-d", "{}", collector.url("/curl")]) }
        #expect(throws: Tool.Failed.self) {
            try Tool.run(["curl", "-sS", "--cacert", pki.path("other-ca.crt"), "-d", "{}", collector.url("/curl")])
        }
    }

    @Test func theRightCADeliversEveryRecord() throws {
        let pki = try TestCertificates()
        let collector = try Collector(tls: pki.server())
        defer { collector.stop() }
        let ids = try spool()
        try set([("endpoints.secure.url", collector.url("/in")), ("endpoints.secure.caFile", pki.path("ca.crt"))])
        let validated = try geolocate.run(["config", "validate"])
        #expect(validated.status == 0, "\(validated.stderr)")
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Set(collector.acceptedIDs("/in")) == Set(ids))
        #expect(try spooledCount() == 0)
    }

    /// Without caFile the system's CAs cannot vouch for the private CA's server; a CA that did
    /// not sign it cannot either. Each is the configuration's fault: 78 at once, one attempt
    /// only (a transient failure is tried 4 times), and the next flush says it again.
    @Test func anUntrustedCertificateIsAConfigurationErrorTriedOnce() throws {
        let pki = try TestCertificates()
        let collector = try Collector(tls: pki.server())
        defer { collector.stop() }
        let ids = try spool()
        try set([("endpoints.secure.url", collector.url("/in"))])
        let place = "geolocate: endpoint secure (https://127.0.0.1:\(collector.port)/in): "
        let untrusted = "TLS certificate not trusted (set endpoints.secure.caFile to the CA that signed it)"
        try expectConfigurationError(untrusted, line: place + untrusted + "; its records stay pending\n", pending: ids.count)
        #expect(waitUntil(.seconds(5)) { collector.handshakeFailures().count == 1 })
        #expect(collector.handshakeFailures().count == 1, "\(collector.handshakeFailures())")
        // Not parked as a transient failure would be: the next flush tries and says it again.
        try expectConfigurationError(untrusted, line: place + untrusted, pending: ids.count)

        try set([("endpoints.secure.caFile", pki.path("other-ca.crt"))])
        try expectConfigurationError("TLS certificate not trusted: not signed by a CA in endpoints.secure.caFile (\(pki.path("other-ca.crt"))), or expired",
                                     pending: ids.count)
        #expect(collector.requests("/in").isEmpty, "nothing was sent over an untrusted connection")

        // Fixed, the same records go.
        try set([("endpoints.secure.caFile", pki.path("ca.crt"))])
        let fixed = try geolocate.run(["flush"])
        #expect(fixed.status == 0, "\(fixed.stderr)")
        #expect(Set(collector.acceptedIDs("/in")) == Set(ids))
    }

    @Test func aCertificateForAnotherHostIsRefused() throws {
        let pki = try TestCertificates()
        let collector = try Collector(tls: pki.server("elsewhere"))
        defer { collector.stop() }
        let ids = try spool()
        try set([("endpoints.secure.url", collector.url("/in")), ("endpoints.secure.caFile", pki.path("ca.crt"))])
        try expectConfigurationError("TLS certificate not valid for 127.0.0.1", pending: ids.count)
        #expect(collector.requests("/in").isEmpty)
    }

    /// A server that requires a client certificate signed by the CA: certFile and keyFile
    /// deliver; none, or one from another CA, is refused by the server (which says why in its
    /// own log) and is a configuration error here.
    @Test func mutualTLS() throws {
        let pki = try TestCertificates()
        let collector = try Collector(tls: pki.server(requiringClientsOf: "ca"))
        defer { collector.stop() }
        let ids = try spool()
        try set([("endpoints.secure.url", collector.url("/in")), ("endpoints.secure.caFile", pki.path("ca.crt"))])
        try expectConfigurationError("the server requires a TLS client certificate (set endpoints.secure.certFile and endpoints.secure.keyFile)",
                                     pending: ids.count)
        #expect(waitUntil(.seconds(5)) { collector.handshakeFailures().contains { $0.contains("did not return a certificate") } },
                "\(collector.handshakeFailures())")

        try set([("endpoints.secure.certFile", pki.path("stranger.crt")), ("endpoints.secure.keyFile", pki.path("stranger.key"))])
        try expectConfigurationError("the server refused this device's TLS certificate (check endpoints.secure.certFile and endpoints.secure.keyFile, \(pki.path("stranger.crt"))",
                                     pending: ids.count)
        #expect(collector.requests("/in").isEmpty)

        try set([("endpoints.secure.certFile", pki.path("client.crt")), ("endpoints.secure.keyFile", pki.path("client.key"))])
        let result = try geolocate.run(["flush"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Set(collector.acceptedIDs("/in")) == Set(ids))
        #expect(try spooledCount() == 0)
    }

    /// TLS files that cannot be used are said by `config validate` (they used to be "ok" on an
    /// https URL and ignored) and by flush, naming the key and the file, before any connection.
    @Test func unusableTLSFilesAreConfigurationErrors() throws {
        let pki = try TestCertificates()
        let collector = try Collector(tls: pki.server(requiringClientsOf: "ca"))
        defer { collector.stop() }
        let ids = try spool()
        let fifo = pki.path("fifo.pem")
        #expect(mkfifo(fifo, 0o600) == 0)
        let notPEM = pki.path("client.csr.txt")
        try "not a certificate\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let url = collector.url("/in")
        let cases: [(settings: [(String, String)], expected: String)] = [
            ([("endpoints.secure.certFile", pki.path("client.crt"))],
             "endpoints.secure.certFile and endpoints.secure.keyFile go together: set both, or neither"),
            ([("endpoints.secure.keyFile", pki.path("client.key"))],
             "endpoints.secure.certFile and endpoints.secure.keyFile go together: set both, or neither"),
            ([("endpoints.secure.caFile", pki.path("no-such-ca.crt"))], "endpoints.secure.caFile \(pki.path("no-such-ca.crt")) does not exist"),
            ([("endpoints.secure.caFile", fifo)], "endpoints.secure.caFile \(fifo) is a FIFO, not a regular file"),
            ([("endpoints.secure.caFile", notPEM)], "endpoints.secure.caFile \(notPEM) holds no PEM certificate"),
            ([("endpoints.secure.certFile", pki.path("client.crt")), ("endpoints.secure.keyFile", pki.path("stranger.key"))],
             "endpoints.secure.keyFile \(pki.path("stranger.key")) is not the private key of endpoints.secure.certFile \(pki.path("client.crt"))"),
            ([("endpoints.secure.certFile", pki.path("client.crt")), ("endpoints.secure.keyFile", pki.path("client.crt"))],
             "endpoints.secure.keyFile \(pki.path("client.crt")) holds no unencrypted PEM private key"),
            ([("endpoints.secure.url", "http://127.0.0.1:\(collector.port)/in"), ("endpoints.secure.caFile", pki.path("ca.crt"))],
             "caFile, certFile and keyFile need an https:// URL"),
        ]
        for (settings, expected) in cases {
            _ = try geolocate.run(["config", "unset", "endpoints.secure"])
            try set([("endpoints.secure.url", url)] + settings)
            let validated = try geolocate.start(["config", "validate"])
            let result = try #require(validated.finish(within: .seconds(20)), "config validate hung with \(settings)")
            #expect(result.status == 78, "\(settings): \(result.stderr)")
            #expect(result.stderr.contains("endpoint secure: " + expected), "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            let flushing = try geolocate.start(["flush"])
            let flushed = try #require(flushing.finish(within: .seconds(20)), "flush hung with \(settings)")
            #expect(flushed.status == 78, "\(settings): \(flushed.stderr)")
            #expect(flushed.stderr.split(separator: "\n").count == 1 && flushed.stderr.contains(expected), "\(flushed.stderr)")
            #expect(try lastError(of: "secure") == expected)
        }
        #expect(try spooledCount() == ids.count)
        #expect(collector.requests("/in").isEmpty)
    }

    /// `trigger --endpoint` over TLS that fails does what it does for a refusing MQTT broker:
    /// the record is printed and spooled, a plain warning says why (exit 0); the flush after
    /// the fix delivers it.
    @Test func triggerSpoolsTheRecordWithAPlainWarning() throws {
        let pki = try TestCertificates()
        let collector = try Collector(tls: pki.server())
        defer { collector.stop() }
        try set([("permissions", "fine"), ("endpoints.secure.url", collector.url("/in"))])
        let result = try geolocate.run(["trigger", "login", "--replay", kiosk, "--endpoint", "secure"])
        #expect(result.status == 0, "\(result.stderr)")
        let id = try #require(try result.json()["id"] as? String)
        #expect(result.stderr.contains("TLS certificate not trusted (set endpoints.secure.caFile to the CA that signed it)"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && !result.stderr.contains("NIOSSL") && !result.stderr.contains(".build"),
                "\(result.stderr)")
        #expect(try spooledCount() == 1)

        // A --post URL has no TLS settings: it trusts the system's CAs, and says so.
        let posted = try geolocate.run(["trigger", "login", "--replay", kiosk, "--post", collector.url("/post")])
        #expect(posted.status == 0, "\(posted.stderr)")
        #expect(posted.stderr.contains("TLS certificate not trusted by the system's CAs"), "\(posted.stderr)")

        try set([("endpoints.secure.caFile", pki.path("ca.crt"))])
        let delivered = try geolocate.run(["trigger", "login", "--replay", kiosk, "--endpoint", "secure"])
        #expect(delivered.status == 0 && !delivered.stderr.contains("could not send"), "\(delivered.stderr)")
        let flushed = try geolocate.run(["flush", "--endpoint", "secure"])
        #expect(flushed.status == 0, "\(flushed.stderr)")
        #expect(collector.acceptedIDs("/in").contains(id))
    }
}

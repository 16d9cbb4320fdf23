import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real mosquitto broker on a loopback port reserved for it (`Loopback.Reservation`, kept
/// across a restart), in its own process group, with its configuration, TLS files and
/// persistence in a directory of its own; stopped at the end of its last reference.
final class MosquittoBroker {
    enum Security {
        case plain
        /// Clients must log in as `user` with `password`.
        case password(user: String, password: String)
        /// TLS with a CA the test makes; clients must show a certificate it signed.
        case mutualTLS
    }

    let directory: URL
    let port: Int
    let security: Security
    private let reservation: Loopback.Reservation
    private(set) var pid: pid_t = 0

    /// Starts the broker and waits until it listens; `readOnlyTopics` are topics an ACL lets
    /// clients subscribe to and never publish to; `maxInflight` is its `max_inflight_messages`.
    init(_ security: Security = .plain, readOnlyTopics: [String] = [], maxInflight: Int = 100) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-mqtt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        reservation = try Loopback.Reservation()
        port = reservation.port
        self.security = security
        var lines = ["listener \(port) 127.0.0.1", "persistence true", "persistence_location \(directory.path)/",
                     "log_dest file \(directory.path)/broker.log", "log_type all", "max_queued_messages 0", "max_inflight_messages \(maxInflight)",
                     // Run as root, mosquitto would become user mosquitto, which cannot read this directory.
                     "user \(String(cString: getpwuid(geteuid()).pointee.pw_name))"]
        switch security {
        case .plain:
            lines.append("allow_anonymous true")
        case .password(let user, let password):
            try Tool.run(["mosquitto_passwd", "-b", "-c", path("passwords"), user, password])
            lines += ["allow_anonymous false", "password_file \(path("passwords"))"]
        case .mutualTLS:
            try makeCertificates()
            lines += ["allow_anonymous true", "cafile \(path("ca.crt"))", "certfile \(path("server.crt"))", "keyfile \(path("server.key"))",
                      "require_certificate true", "use_identity_as_username true"]
        }
        if !readOnlyTopics.isEmpty {
            try (readOnlyTopics.map { "topic read \($0)" }.joined(separator: "\n") + "\n").write(toFile: path("acl"), atomically: true, encoding: .utf8)
            // mosquitto 2.0.11 drops a client whose refused message's PUBACK is still queued
            // when max_queued_messages is 0, before the PUBACK with the reason is written.
            lines = lines.filter { !$0.hasPrefix("max_queued_messages") } + ["acl_file \(path("acl"))", "max_queued_messages 1000"]
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: path("mosquitto.conf"), atomically: true, encoding: .utf8)
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// Starts the broker (again, after `stop`) and waits until it listens.
    func start() throws {
        pid = try ProcessGroup.spawn(["mosquitto", "-c", path("mosquitto.conf")], outputPath: path("stdout.log"))
        guard waitUntil(.seconds(10), { Loopback.isListening(port) }) else {
            stop()
            throw ProcessGroup.SpawnError(command: "mosquitto on port \(port): \((try? String(contentsOfFile: path("broker.log"), encoding: .utf8)) ?? "")", code: ETIMEDOUT)
        }
    }

    /// Stops the broker with SIGTERM, which saves its persistence file (the subscriber's
    /// queue) as a restart expects, and waits for it to end.
    func stop() {
        guard pid > 0 else { return }
        ProcessGroup.stop(pid, grace: .seconds(5))
        pid = 0
    }

    /// The TLS options of a client (`mosquitto_sub`) for this broker.
    var clientTLSArguments: [String] {
        guard case .mutualTLS = security else { return [] }
        return ["--cafile", path("ca.crt"), "--cert", path("client.crt"), "--key", path("client.key")]
    }

    /// A CA, a server certificate for 127.0.0.1, and a client certificate, made with openssl.
    private func makeCertificates() throws {
        let days = "2"
        try Tool.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", days, "-subj", "/CN=geolocate test CA",
                      "-keyout", path("ca.key"), "-out", path("ca.crt")])
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        for (name, extensions) in [("server", ["-extfile", path("server.ext")]), ("client", [])] {
            try Tool.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=geolocate-\(name)",
                          "-keyout", path("\(name).key"), "-out", path("\(name).csr")])
            try Tool.run(["openssl", "x509", "-req", "-in", path("\(name).csr"), "-CA", path("ca.crt"), "-CAkey", path("ca.key"),
                          "-CAcreateserial", "-days", days, "-out", path("\(name).crt")] + extensions)
        }
    }
}

/// `mosquitto_sub` subscribed at QoS 1 with a session the broker keeps (`-c`), so it gets
/// every message even across a broker restart: what a fleet's backend sees.
final class MQTTSubscriber {
    private let pid: pid_t
    private let output: String

    /// Subscribes to `topic` and waits for the broker's SUBACK; with `version5`, over MQTT 5,
    /// each message followed by a line of its user properties (`properties`).
    init(_ broker: MosquittoBroker, topic: String, credentials: (user: String, password: String)? = nil, version5: Bool = false) throws {
        output = broker.path("subscriber-\(UUID().uuidString).out")
        // stdbuf: mosquitto_sub's SUBACK line would sit in its stdout buffer until it exits.
        var arguments = ["stdbuf", "-oL", "mosquitto_sub", "-h", "127.0.0.1", "-p", String(broker.port), "-t", topic, "-q", "1", "-c",
                         "-i", "subscriber-\(getpid())", "-d", "-F", version5 ? "MSG %t %p\\nPROP %P" : "MSG %t %p"] + broker.clientTLSArguments
        if version5 { arguments += ["-V", "5", "-x", "600"] }
        if let credentials { arguments += ["-u", credentials.user, "-P", credentials.password] }
        pid = try ProcessGroup.spawn(arguments, outputPath: output)
        guard waitUntil(.seconds(10), { self.text.contains("SUBACK") }) else {
            ProcessGroup.stop(pid)
            throw ProcessGroup.SpawnError(command: "mosquitto_sub: \(text)", code: ETIMEDOUT)
        }
    }

    deinit { ProcessGroup.stop(pid) }

    private var text: String { (try? String(contentsOfFile: output, encoding: .utf8)) ?? "" }

    /// The messages received so far: topic and payload.
    var messages: [(topic: String, payload: String)] {
        text.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("MSG ") else { return nil }
            let rest = line.dropFirst(4)
            guard let space = rest.firstIndex(of: " ") else { return nil }
            return (String(rest[..<space]), String(rest[rest.index(after: space)...]))
        }
    }

    /// With `version5`, the user properties of each message received so far (`key:value`, as
    /// mosquitto_sub prints them; empty without any).
    var properties: [String] {
        text.split(separator: "\n", omittingEmptySubsequences: false).compactMap { line in
            line.hasPrefix("PROP") ? String(line.dropFirst(4).drop { $0 == " " }) : nil
        }
    }

    /// The payloads received so far, parsed as JSON objects.
    var objects: [[String: Any]] {
        messages.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.payload.utf8))) as? [String: Any] }
    }
}

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

/// `file:/PATH` secrets (SPEC §7, issue 27 item 4): a header value or an MQTT password kept in
/// a 0600 file or a systemd credential, read when sending, never shown and never written to
/// the configuration file; a file that cannot be read is a configuration error (78) that
/// names the key and the file, never the secret.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct SecretFileEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    func set(_ key: String, _ value: String) throws {
        let result = try geolocate.run(["config", "set", key, value])
        try #require(result.status == 0, "\(key): \(result.stderr)")
    }

    /// Writes `text` to a 0600 file in the test's home and returns its path.
    func secretFile(_ name: String, _ text: String) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let path = geolocate.home.appendingPathComponent(name).path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]))
        return path
    }

    /// Spools `count` fixes of the drive log.
    func spool(_ count: Int) throws {
        let result = try geolocate.run(["track", "--replay", drive, "--every-fix", "--permission", "fine", "--count", String(count)])
        try #require(result.status == 0, "\(result.stderr)")
    }

    @Test func aHeaderFromAFileReachesTheCollectorAndIsNeverShown() throws {
        let collector = try Collector()
        defer { collector.stop() }
        let token = try secretFile("token", "Bearer from-a-file\n")
        try set("endpoints.main.url", collector.url("/in"))
        try set("endpoints.main.headers.Authorization", "file:" + token)
        try spool(3)

        let flush = try geolocate.run(["flush", "--json"])
        #expect(flush.status == 0, "\(flush.stderr)")
        let requests = collector.requests("/in")
        #expect(!requests.isEmpty)
        // The file's contents without its trailing newline, not the file: value.
        #expect(requests.allSatisfy { $0.headers["Authorization"] == "Bearer from-a-file" }, "\(requests.map(\.headers))")

        // config show prints where the secret is (no secret itself), the file never.
        let show = try geolocate.run(["config", "show"])
        #expect(show.stdout.contains("\"file:\(token)\""), "\(show.stdout)")
        for text in [flush.stdout, flush.stderr, show.stdout, try String(contentsOfFile: geolocate.configPath, encoding: .utf8)] {
            #expect(!text.contains("from-a-file"))
        }

        // Read when sent: a rotated token is used by the next flush.
        try Data("Bearer rotated".utf8).write(to: URL(fileURLWithPath: token))
        try spool(1)
        #expect(try geolocate.run(["flush"]).status == 0)
        #expect(collector.requests("/in").last?.headers["Authorization"] == "Bearer rotated")
    }

    @Test func aMissingOrBadSecretFileIsAConfigurationError() throws {
        let collector = try Collector()
        defer { collector.stop() }
        let missing = geolocate.home.appendingPathComponent("no-such-token").path
        try set("endpoints.main.url", collector.url("/in"))
        try set("endpoints.main.headers.X-Api-Key", "file:" + missing)
        try spool(2)

        for arguments in [["flush"], ["trigger", "login", "--replay", drive, "--permission", "fine", "--endpoint", "main"]] {
            let result = try geolocate.run(arguments)
            #expect(result.status == 78, "\(arguments): \(result.status) \(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.contains { $0.hasPrefix("geolocate: ") && $0.contains("endpoints.main.headers.X-Api-Key") && $0.contains(missing) && $0.contains("does not exist") },
                    "\(arguments): \(result.stderr)")
        }
        #expect(collector.requests("/in").isEmpty, "nothing is sent without the header")
        #expect(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).count() == 2, "the records stay spooled")

        // A line break inside the value, an empty file, a FIFO: refused, the contents never quoted.
        let twoLines = try secretFile("two-lines", "first-secret\nsecond-secret\n")
        let empty = try secretFile("empty", "\n")
        let fifo = geolocate.home.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for (file, reason) in [(twoLines, "control characters"), (empty, "is empty"), (fifo, "a FIFO")] {
            try set("endpoints.main.headers.X-Api-Key", "file:" + file)
            let flush = try geolocate.run(["flush"])
            #expect(flush.status == 78 && flush.stderr.contains(file) && flush.stderr.contains(reason), "\(flush.stderr)")
            #expect(!flush.stderr.contains("first-secret") && !flush.stderr.contains("second-secret"), "\(flush.stderr)")
        }

        // A relative file: value would depend on the working directory (/ under PAM).
        let relative = try geolocate.run(["config", "set", "endpoints.main.headers.X-Api-Key", "file:token"])
        #expect(relative.status == 64 && relative.stderr.contains("absolute path"), "\(relative.stderr)")
    }

    @Test func anMQTTPasswordFromAFileLogsIn() throws {
        let broker = try MosquittoBroker(.password(user: "device", password: "right horse"))
        let password = try secretFile("mqtt-password", "right horse\n")
        try set("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet")
        try set("endpoints.fleet.username", "device")
        try set("endpoints.fleet.password", "file:" + password)
        let subscriber = try MQTTSubscriber(broker, topic: "fleet", credentials: ("device", "right horse"))
        try spool(2)

        let flush = try geolocate.run(["flush"])
        #expect(flush.status == 0, "\(flush.stderr)")
        #expect(waitUntil(.seconds(10)) { subscriber.messages.count >= 1 }, "\(flush.stderr)")
        #expect(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).count() == 0)
        #expect(try geolocate.run(["config", "get", "endpoints.fleet.password"]).stdout == "file:\(password)\n")
    }
}

import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One device, four roles (SPEC §16): root (the gate), the user geolocate (the services, with
/// `--system` as the units run them), a monitoring user in the group geolocate and an outsider,
/// each its own uid, on a device made as the package makes it (`device-harness.sh`: overlays
/// of /etc and /var/lib in a private mount namespace, so the machine's own files never change).
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .enabled(if: geteuid() == 0, "needs root: users and mount namespaces"))
struct DeviceRolesEndToEndTests {
    /// A device of its own: the overlays' changes, and a copy of the binary and the logs every
    /// user may read (the checkout may be private to root).
    final class Device {
        static let harness = GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/device-harness.sh").path
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-device-\(UUID().uuidString)")
        var shared: String { work.appendingPathComponent("shared").path }
        var binary: String { shared + "/geolocate" }

        init() throws {
            try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
            chmod(work.path, 0o755)
            chmod(shared, 0o755)
            try Tool.run(["cp", GeolocateProcess.binary.path, binary])
            for log in ["kiosk-gnss.nmea", "maynooth-drive.nmea"] {
                try Tool.run(["install", "-m", "0644", GeolocateProcess.projectRoot.appendingPathComponent("Examples/nmea/\(log)").path, shared + "/\(log)"])
            }
        }

        deinit { try? FileManager.default.removeItem(at: work) }

        /// A log of `count` fixes in Lyon, one a second, the last one dated now: records a
        /// monitor judges as fresh.
        func freshLog(count: Int = 5) throws -> String {
            func sentence(_ body: String) -> String {
                String(format: "$%@*%02X", body, body.utf8.reduce(UInt8(0), ^))
            }
            let formatter = DateFormatter()
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.locale = Locale(identifier: "en_US_POSIX")
            var lines: [String] = []
            for index in 0..<count {
                let date = Date().addingTimeInterval(Double(index - count + 1))
                formatter.dateFormat = "HHmmss.00"
                let time = formatter.string(from: date)
                formatter.dateFormat = "ddMMyy"
                let day = formatter.string(from: date)
                lines.append(sentence("GPGGA,\(time),4545.6000,N,00450.5000,E,1,10,0.9,170.0,M,49.0,M,,"))
                lines.append(sentence("GPRMC,\(time),A,4545.6000,N,00450.5000,E,0.0,0.0,\(day),,,A"))
            }
            let path = shared + "/fresh-\(UUID().uuidString).nmea"
            try (lines.joined(separator: "\r\n") + "\r\n").write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o644)
            return path
        }

        /// Runs `geolocate ARGUMENTS` as `role` (root, geolocate, monitor, outsider) with only
        /// `environment` set beside PATH and HOME.
        func run(_ role: String, _ arguments: [String], environment: [String: String] = [:]) throws -> GeolocateProcess.Result {
            try shell(role, [binary] + arguments, environment: environment)
        }

        /// Runs any command as `role` on the device.
        func shell(_ role: String, _ command: [String], environment: [String: String] = [:]) throws -> GeolocateProcess.Result {
            let words = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            var outcome: Spawn.Outcome
            repeat {
                // A process another test forks while the copy is written holds it open (ETXTBSY).
                outcome = try Spawn.run([Device.harness, work.path + "/overlay", role] + command,
                                        environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "DEVICE_HARNESS_ENV": words])
            } while String(decoding: outcome.stderr, as: UTF8.self).contains("Text file busy")
            return GeolocateProcess.Result(status: outcome.status, stdout: String(decoding: outcome.stdout, as: UTF8.self),
                                           stderr: String(decoding: outcome.stderr, as: UTF8.self), signal: outcome.signal)
        }

        /// `stat -c FORMAT PATH` on the device.
        func stat(_ format: String, _ path: String) throws -> String {
            try shell("root", ["stat", "-c", format, path]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// The spool's pending records counted by Python's sqlite3, not by geolocate.
        func spoolCount() throws -> Int {
            let count = try shell("root", ["python3", "-c", "import sqlite3; print(sqlite3.connect('file:/var/lib/geolocate/spool.sqlite?mode=ro', uri=True).execute('SELECT COUNT(*) FROM records').fetchone()[0])"])
            return Int(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }

        /// Sets `key` to `value` in the system config, as root.
        func set(_ key: String, _ value: String) throws {
            let result = try run("root", ["config", "set", key, value])
            #expect(result.status == 0, "config set \(key): \(result.stderr)")
        }
    }

    @Test func theMonitorReadsTheServicesSummaryWithNoFlags() throws {
        let device = try Device()
        try device.set("permissions", "fine")
        try device.set("source", "nmea:\(try device.freshLog())")
        try device.set("endpoints.fleet.url", "http://127.0.0.1:9/unreachable")
        let track = try device.run("geolocate", ["track", "--system"])
        #expect(track.status == 0, "\(track.stderr)")
        let pending = try device.spoolCount()
        #expect(pending > 0)
        // The spool and the last known location stay the services'; the summary is the group's.
        #expect(try device.stat("%U:%G %a", "/var/lib/geolocate/spool.sqlite") == "geolocate:geolocate 600")
        #expect(try device.stat("%U:%G %a", "/var/lib/geolocate/last-known-replay.json") == "geolocate:geolocate 600")
        #expect(try device.stat("%U:%G %a", "/var/lib/geolocate/status.json") == "geolocate:geolocate 640")
        let summary = try device.shell("root", ["cat", "/var/lib/geolocate/status.json"]).stdout
        #expect(!summary.contains("latitude") && !summary.contains("45.7"), "the summary holds no location: \(summary)")

        // No flags, HOME without files of its own: the system's, read through the summary.
        let check = try device.run("monitor", ["status", "--check"])
        #expect(check.status == 0 && check.stdout.hasPrefix("GEOLOCATE OK - \(pending) pending") && check.stdout.contains("(state /var/lib/geolocate)"),
                "\(check)")
        #expect(check.stderr.isEmpty, "--check says everything in its line: \(check.stderr)")
        let json = try device.run("monitor", ["status", "--json"]).json()
        let endpoints = json["endpoints"] as? [[String: Any]]
        #expect(json["stateDirectory"] as? String == "/var/lib/geolocate" && json["summaryWrittenAt"] != nil
                && (json["spool"] as? [String: Any])?["pending"] as? Int == pending && endpoints?.first?["pending"] as? Int == pending, "\(json)")
        let iss = try device.shell("root", ["cat", "/var/lib/geolocate/device-id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(json["iss"] as? String == iss, "status --json names the device id the tokens carry")
        // The monitor can read no location: export needs the services' user.
        let export = try device.run("monitor", ["export", "--format", "geojson"])
        #expect(export.status != 0 && export.stdout.isEmpty && export.stderr.contains("/var/lib/geolocate/spool.sqlite"), "\(export)")
    }

    @Test func onlyRootAndTheServiceUserWriteInSystemMode() throws {
        let device = try Device()
        for command in [["flush", "--system"], ["track", "--system", "--count", "1"], ["config", "set", "permissions", "fine", "--system"], ["key", "init", "--system"]] {
            let refused = try device.run("outsider", command)
            #expect(refused.status == 64 && refused.stderr.contains("only root and the user geolocate"), "\(command): \(refused)")
        }
        let path = try device.run("outsider", ["config", "path", "--system"])
        #expect(path.status == 0 && path.stdout == "/etc/geolocate/config.json\n", "commands that only show take --system from anyone: \(path)")
        // status may choose the system's files as any user; reading them is the files' to allow.
        let status = try device.run("outsider", ["status", "--system", "--json"])
        #expect(status.status == 78 && status.stderr.contains("cannot read /etc/geolocate/config.json"), "\(status)")
        let service = try device.run("geolocate", ["config", "path", "--system"])
        #expect(service.status == 0 && service.stdout == "/etc/geolocate/config.json\n", "\(service)")
    }

    @Test func theGateAndTheServicesSignWithOneKeyAndAKeyProblemStopsOnlyItsEndpoints() throws {
        let device = try Device()
        let collector = try Collector()
        defer { collector.stop() }
        try device.set("permissions", "fine")
        try device.set("source", "nmea:\(device.shared)/kiosk-gnss.nmea")
        try device.set("endpoints.fleet.url", collector.url("/fleet"))
        try device.set("endpoints.fleet.actions", "track")
        try device.set("endpoints.risk.url", collector.url("/risk"))
        try device.set("endpoints.risk.format", "jwt")
        try device.set("endpoints.risk.actions", "login")
        try device.set("signing.audience", "https://risk.example")
        #expect(try device.run("geolocate", ["track", "--system"]).status == 0)
        let tracked = try device.spoolCount()

        // No key yet: the fleet's records go; the risk server's endpoint says why it waits.
        let withoutKey = try device.run("geolocate", ["flush", "--system"])
        #expect(withoutKey.status == 78 && withoutKey.stderr.contains("endpoint risk") && withoutKey.stderr.contains("/etc/geolocate/device-key"),
                "\(withoutKey)")
        #expect(collector.acceptedIDs("/fleet").count == tracked, "every track record reached the fleet server")
        #expect(collector.requests("/risk").isEmpty, "track records are not the risk server's")

        // Root makes the key: the service user's, 0600, and both sign with it.
        let made = try device.run("root", ["key", "init"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try device.stat("%U:%G %a", "/etc/geolocate/device-key") == "geolocate:geolocate 600")
        let enrolled = device.shared + "/enrolled.json"
        let shown = try device.run("geolocate", ["key", "show", "--system"])
        #expect(shown.stdout == made.stdout, "key show prints what key init did: \(shown)")
        try shown.stdout.write(toFile: enrolled, atomically: true, encoding: .utf8)
        let kid = try Tool.run([TokenEndToEndTests.python, GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/jws-tool.py").path,
                                "thumbprints", enrolled]).trimmingCharacters(in: .whitespacesAndNewlines)
        let gate = try device.run("root", ["trigger", "login", "--format", "jwt", "--replay", device.shared + "/kiosk-gnss.nmea"])
        #expect(gate.status == 0, "\(gate.stderr)")
        try collector.script(["/risk": ["default": ["status": 503]]])
        let spooled = try device.run("root", ["trigger", "login", "--endpoint", "risk", "--replay", device.shared + "/kiosk-gnss.nmea"])
        #expect(spooled.stderr.contains("spool"), "the risk server refused, so the login waits in the spool: \(spooled)")
        try collector.script([:])
        let flushed = try device.run("geolocate", ["flush", "--system"])
        #expect(flushed.status == 0, "\(flushed)")
        let tokens = collector.requests("/risk").filter { $0.sent && $0.status == 200 }.flatMap { $0.body.split(separator: "\n").map(String.init) }
        #expect(tokens.count == 1, "one login, no track record: \(tokens)")
        for token in tokens + [gate.stdout.trimmingCharacters(in: .whitespacesAndNewlines)] {
            let header = try Tool.run([TokenEndToEndTests.python, "-c", "import jwt, sys; print(jwt.get_unverified_header(sys.argv[1])['kid'])", token])
            #expect(header.trimmingCharacters(in: .whitespacesAndNewlines) == kid, "signed with the one device key")
            let claims = try Tool.run([TokenEndToEndTests.python, GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/jws-tool.py").path,
                                       "decode", token, enrolled])
            #expect(claims.contains(#""iss": ""#) || claims.contains(#""iss":""#), "\(claims)")
        }
    }

    /// The key inside a TPM (issue 43; swtpm on loopback, as a TPM the device reaches): root's
    /// `key init` gives the service user a key file that holds no private key, and root's gate
    /// and the services sign ES256 with the one key, which PyJWT verifies with what the
    /// service user's `key show` prints.
    @Test func theGateAndTheServicesSignWithOneKeyInTheTPM() throws {
        let device = try Device()
        let tpm = try SoftwareTPM()
        let collector = try Collector()
        defer { collector.stop() }
        try device.set("permissions", "fine")
        try device.set("source", "nmea:\(device.shared)/kiosk-gnss.nmea")
        try device.set("endpoints.risk.url", collector.url("/risk"))
        try device.set("endpoints.risk.format", "jwt")
        try device.set("endpoints.risk.actions", "login")
        try device.set("signing.audience", "https://risk.example")
        try device.set("signing.keyProvider", "tpm")
        try device.set("signing.tpm", tpm.tcti)
        let made = try device.run("root", ["key", "init"])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try device.stat("%U:%G %a", "/etc/geolocate/device-key") == "geolocate:geolocate 600")
        let file = try device.shell("root", ["cat", "/etc/geolocate/device-key"]).stdout
        #expect(file.hasPrefix("-----BEGIN GEOLOCATE TPM KEY-----") && !file.contains("PRIVATE"), "\(file)")
        let enrolled = device.shared + "/enrolled.json"
        let shown = try device.run("geolocate", ["key", "show", "--system"])
        #expect(shown.stdout == made.stdout, "\(shown)")
        try shown.stdout.write(toFile: enrolled, atomically: true, encoding: .utf8)
        let gate = try device.run("root", ["trigger", "login", "--format", "jwt", "--replay", device.shared + "/kiosk-gnss.nmea"])
        #expect(gate.status == 0, "\(gate.stderr)")
        try collector.script(["/risk": ["default": ["status": 503]]])
        let spooled = try device.run("root", ["trigger", "login", "--endpoint", "risk", "--replay", device.shared + "/kiosk-gnss.nmea"])
        #expect(spooled.stderr.contains("spool"), "\(spooled)")
        try collector.script([:])
        let flushed = try device.run("geolocate", ["flush", "--system"])
        #expect(flushed.status == 0, "the service user signs in the TPM: \(flushed)")
        let tokens = collector.requests("/risk").filter { $0.sent && $0.status == 200 }.flatMap { $0.body.split(separator: "\n").map(String.init) }
        #expect(tokens.count == 1, "\(tokens)")
        for token in tokens + [gate.stdout.trimmingCharacters(in: .whitespacesAndNewlines)] {
            let claims = try Spawn.run([TokenEndToEndTests.python, TPMKeyEndToEndTests.tool, "decode", token, enrolled])
            #expect(claims.status == 0, "ES256 with the enrolled key: \(String(decoding: claims.stderr, as: UTF8.self))")
        }
        // The monitor sees the key, not its authorisation: the file is the service user's alone.
        let monitor = try device.run("monitor", ["key", "show", "--system"])
        #expect(monitor.status != 0 && monitor.stdout.isEmpty && monitor.stderr.contains("belongs to uid"), "\(monitor)")
    }

    /// The receiver's own verdicts across the roles (issue 42), on u-blox logs pyubx2 made
    /// (`ubx-stream.py`), their last epoch dated now: root's gate, through the PAM hook, lets
    /// a login through when the receiver says "no spoofing" and OSNMA authenticated the fix,
    /// and denies it on the same log saying "spoofing affirmed" (the default `policy.distrust`);
    /// the services, as geolocate, track the log into the spool with the verdict (read back by
    /// Python's sqlite3); the risk server reads the gate's token with the key `key show`
    /// printed, its `gnssAuth` claim as the log says.
    @Test func theReceiversVerdictsReachEveryRole() throws {
        let device = try Device()
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withDashSeparatorInDate, .withColonSeparatorInTime]
        let start = formatter.string(from: Date().addingTimeInterval(-4))
        func log(_ name: String, spoofing: Int) throws -> String {
            let made = try Spawn.run(["python3", ReceiverVerdictEndToEndTests.generator, "--epochs", "5", "--start", start,
                                      "--pvt", "1", "--sec-sig=1,\(spoofing)", "--osnma", "1,2,0,5"])
            try #require(made.status == 0, "ubx-stream.py: \(String(decoding: made.stderr, as: UTF8.self))")
            let shared = device.shared + "/\(name)"
            try made.stdout.write(to: URL(fileURLWithPath: shared))
            // The gate reads NMEA only from root's own directories.
            #expect(try device.shell("root", ["install", "-m", "0644", shared, "/etc/geolocate/\(name)"]).status == 0)
            return "/etc/geolocate/\(name)"
        }
        let clean = try log("clean.log", spoofing: 1)
        let spoofed = try log("spoofed.log", spoofing: 3)
        try device.set("permissions", "fine")
        let made = try device.run("root", ["key", "init"])
        #expect(made.status == 0, "\(made.stderr)")
        let pam = ["PAM_USER": "alice", "PAM_SERVICE": "sshd", "PAM_TYPE": "account"]

        try device.set("source", "nmea:\(clean)")
        let allowed = try device.run("root", ["trigger", "login", "--pam"], environment: pam)
        #expect(allowed.status == 0, "a clean, authenticated fix lets the login through: \(allowed)")
        try device.set("source", "nmea:\(spoofed)")
        let denied = try device.run("root", ["trigger", "login", "--pam"], environment: pam)
        #expect(denied.status == 4, "spoofing affirmed denies: \(denied)")
        // The hook says its reason to syslog; the same decision, printed, says it is the receiver's.
        let decision = try device.run("root", ["trigger", "login", "--policy"]).json()
        let policy = decision["policy"] as? [String: Any] ?? [:]
        #expect(policy["decision"] as? String == "deny" && (policy["reason"] as? String)?.hasPrefix("receiverSpoofing") == true, "\(decision)")

        #expect(try device.run("geolocate", ["track", "--system"]).status == 0)
        let stored = try device.shell("root", ["python3", "-c", "import sqlite3; print(sorted(set(sqlite3.connect('file:/var/lib/geolocate/spool.sqlite?mode=ro', uri=True).execute("
            + "\"SELECT receiverSpoofing, gnssAuthenticated, osnmaStatus, authenticatedSatellites FROM records WHERE action = 'track'\").fetchall())))"])
        #expect(stored.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "[(1, 1, 'operational', 5)]", "\(stored)")

        let enrolled = device.shared + "/enrolled.json"
        try made.stdout.write(toFile: enrolled, atomically: true, encoding: .utf8)
        try device.set("signing.audience", "https://risk.example")
        let gate = try device.run("root", ["trigger", "login", "--format", "jwt", "--replay", spoofed])
        #expect(gate.status == 0, "\(gate.stderr)")
        let claims = try Tool.run([TokenEndToEndTests.python, GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/jws-tool.py").path,
                                   "decode", gate.stdout.trimmingCharacters(in: .whitespacesAndNewlines), enrolled])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(claims.utf8)) as? [String: Any], "\(claims)")
        let authentication = try #require(object["gnssAuth"] as? [String: Any], "\(claims)")
        #expect(authentication["fixAuthenticated"] as? Bool == true && authentication["osnma"] as? String == "operational"
                    && authentication["authenticatedSatellites"] as? Int == 5, "\(authentication)")
    }

    @Test func aRelativePathInTheSystemConfigIsFromEtcGeolocateInTheUnitsCopy() throws {
        let device = try Device()
        let certificates = try TestCertificates()
        let collector = try Collector(tls: certificates.server())
        defer { collector.stop() }
        #expect(try device.shell("root", ["install", "-D", "-m", "0644", certificates.path("ca.crt"), "/etc/geolocate/tls/ca.pem"]).status == 0)
        try device.set("permissions", "fine")
        try device.set("source", "nmea:\(device.shared)/kiosk-gnss.nmea")
        try device.set("endpoints.track.url", collector.url("/track"))
        try device.set("endpoints.track.caFile", "tls/ca.pem")
        // The units read a private copy (LoadCredential=), elsewhere: the path still means /etc/geolocate/tls/ca.pem.
        #expect(try device.shell("root", ["install", "-D", "-m", "0640", "-g", "geolocate", "/etc/geolocate/config.json", "/run/credentials/geolocate-flush.service/config.json"]).status == 0)
        let unit = ["GEOLOCATE_CONFIG": "/run/credentials/geolocate-flush.service/config.json", "GEOLOCATE_STATE_DIR": "/var/lib/geolocate"]
        #expect(try device.run("geolocate", ["track", "--system"], environment: unit).status == 0)
        let validate = try device.run("geolocate", ["config", "validate", "--system"], environment: unit)
        #expect(validate.status == 0, "\(validate)")
        let flush = try device.run("geolocate", ["flush", "--system"], environment: unit)
        #expect(flush.status == 0 && !collector.acceptedIDs("/track").isEmpty, "\(flush)")
        // Without --system the copy's own directory is meant, as for any file named by --config.
        let user = try device.run("geolocate", ["config", "validate"], environment: unit)
        #expect(user.status == 78 && user.stderr.contains("/run/credentials/geolocate-flush.service/tls/ca.pem"), "\(user)")
    }

    @Test func statusCheckFollowsMonitoringPluginConventions() throws {
        let geolocate = GeolocateProcess()
        for arguments in [["-w", "6h", "-c", "30m"], ["--warning", "0s"], ["--bogus"], ["--json"]] {
            let result = try geolocate.run(["status", "--check"] + arguments)
            #expect(result.status == 3 && result.stdout.hasPrefix("GEOLOCATE UNKNOWN - ") && result.stdout.hasSuffix("\n")
                    && result.stdout.split(separator: "\n").count == 1 && result.stderr.isEmpty, "\(arguments): \(result)")
        }
        let usage = try geolocate.run(["status", "-w", "6h", "-c", "30m"])
        #expect(usage.status == 64, "without --check a usage error is 64: \(usage)")
    }

    /// What users read agrees with the package: units run the installed program as the
    /// installed user, no example takes a packaged unit's name, and nothing cites the contract
    /// behind this repository, which users do not have.
    @Test func examplesAndDocsAgreeWithThePackage() throws {
        let root = GeolocateProcess.projectRoot
        let files = try Tool.run(["git", "-C", root.path, "ls-files", "Examples", "README.md", "docs/REFERENCE.md", "man/geolocate.1"])
            .split(separator: "\n").map(String.init)
        #expect(files.count > 20, "\(files)")
        let packaged = ["geolocate-track.service", "geolocate-flush.service", "geolocate-flush.timer"]
        for file in files {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("SPEC"), "\(file) cites the contract")
            guard file.hasPrefix("Examples/") else { continue }
            #expect(!packaged.contains(URL(fileURLWithPath: file).lastPathComponent), "\(file) takes a packaged unit's name")
            #expect(!text.contains("DynamicUser=yes"), "\(file): the gate cannot trust a dynamic user's state directory")
            for line in text.split(separator: "\n") where line.hasPrefix("ExecStart=") && line != "ExecStart=" {
                #expect(line.hasPrefix("ExecStart=/usr/bin/geolocate "), "\(file): \(line)")
            }
        }
        // The pam.d example runs the gate as the package's profile does.
        let profile = try String(contentsOf: root.appendingPathComponent("packaging/pam-configs/geolocate"), encoding: .utf8)
        let example = try String(contentsOf: root.appendingPathComponent("Examples/pam/geolocate.pam"), encoding: .utf8)
        let gate = "pam_exec.so quiet /usr/bin/geolocate trigger login --pam"
        #expect(profile.contains(gate) && example.contains(gate))
    }

    /// What the gate meets when it sends a login's token is the endpoint's state, as a flush's
    /// would be: a key that cannot sign (the record waits in the spool), a server that refuses
    /// connections (a WARNING, not CRITICAL at once: a server restarting looks the same), and a
    /// delivery (the last success, the error cleared).
    @Test func whatTheGateMeetsSendingIsTheEndpointsState() throws {
        let device = try Device()
        let collector = try Collector()
        defer { collector.stop() }
        let (refusing, held) = try Loopback.refusingPort()
        defer { close(held) }
        let log = try device.freshLog()
        // The gate reads NMEA only from root's own directories.
        #expect(try device.shell("root", ["install", "-m", "0644", log, "/etc/geolocate/live.nmea"]).status == 0)
        try device.set("permissions", "fine")
        try device.set("source", "nmea:/etc/geolocate/live.nmea")
        try device.set("endpoints.risk.url", "http://127.0.0.1:\(refusing)/risk")
        try device.set("endpoints.risk.format", "jwt")
        try device.set("endpoints.risk.actions", "login")
        try device.set("signing.audience", "https://risk.example")
        try device.set("actions.login.endpoint", "risk")
        #expect(try device.run("root", ["key", "init"]).status == 0)
        let pam = ["PAM_USER": "alice", "PAM_SERVICE": "sshd", "PAM_TYPE": "account"]
        func login() throws { _ = try device.run("root", ["trigger", "login", "--pam"], environment: pam) }
        func check() throws -> GeolocateProcess.Result { try device.run("monitor", ["status", "--check"]) }

        try login()
        let unreachable = try check()
        #expect(unreachable.status == 1 && unreachable.stdout.contains("endpoint risk unreachable: ") && unreachable.stdout.contains("pending=1;"),
                "\(unreachable)")

        // The service user makes the key unusable: the login's token waits, and the monitor sees why.
        #expect(try device.shell("geolocate", ["chmod", "640", "/etc/geolocate/device-key"]).status == 0)
        try device.set("endpoints.risk.url", collector.url("/risk"))
        try login()
        let keyless = try check()
        #expect(keyless.status == 2 && keyless.stdout.contains("endpoint risk failed: device key /etc/geolocate/device-key may be read or written by others")
                && keyless.stdout.contains("pending=2;"), "\(keyless)")
        #expect(collector.requests("/risk").isEmpty)

        #expect(try device.shell("geolocate", ["chmod", "600", "/etc/geolocate/device-key"]).status == 0)
        try login()
        #expect(collector.requests("/risk").filter { $0.sent && $0.status == 200 }.count == 1)
        let json = try device.run("monitor", ["status", "--json"]).json()
        let risk = (json["endpoints"] as? [[String: Any]])?.first
        #expect(risk?["lastSuccessAt"] != nil && risk?["lastError"] == nil && risk?["pending"] as? Int == 2, "\(json)")
        #expect(try check().status == 0)

        // A key of root's is refused to the services with the command that gives it to them.
        #expect(try device.shell("root", ["chown", "root:root", "/etc/geolocate/device-key"]).status == 0)
        let flush = try device.run("geolocate", ["flush", "--system"])
        #expect(flush.status == 78 && flush.stderr.contains("chown geolocate: /etc/geolocate/device-key") && !flush.stderr.contains("(check "),
                "\(flush)")
    }

    /// status.json is the service user's file: what it forges may not crash the monitor's
    /// status, nor drive its terminal or split its monitoring line.
    @Test func aSummaryTheServiceUserForgesCannotCrashOrSplitTheMonitorsLine() throws {
        let device = try Device()
        try device.set("permissions", "fine")
        try device.set("source", "nmea:\(try device.freshLog())")
        try device.set("endpoints.fleet.url", "http://127.0.0.1:9/in")
        #expect(try device.run("geolocate", ["track", "--system"]).status == 0)
        let forged = device.shared + "/forged.json"
        func plant(_ object: [String: Any]) throws {
            try JSONSerialization.data(withJSONObject: object).write(to: URL(fileURLWithPath: forged))
            chmod(forged, 0o644)
            #expect(try device.shell("geolocate", ["cp", forged, "/var/lib/geolocate/status.json"]).status == 0)
        }
        let spool: [String: Any] = ["pending": 1, "deadLetters": 0, "expired": 0, "expiredLast24h": 0, "keptDelivered": 0]
        var overflowing = spool
        overflowing["oldestPendingRecordedAt"] = Int64.min
        try plant(["writtenAt": 1, "spool": overflowing, "endpoints": []])
        let overflow = try device.run("monitor", ["status", "--check"])
        #expect(overflow.status == 3 && overflow.signal == nil && overflow.stdout.hasPrefix("GEOLOCATE UNKNOWN - "), "\(overflow)")
        try plant(["writtenAt": 1, "iss": "\u{1b}]0;pwn\u{07}", "spool": spool, "endpoints": []])
        #expect(try device.run("monitor", ["status", "--check"]).status == 3, "a device id that is no UUID is no summary of ours")
        let error = "boom | pending=0;;;0\nGEOLOCATE OK - all good\u{1b}[31m\u{202e}"
        try plant(["writtenAt": 1, "spool": spool,
                   "endpoints": [["name": "fleet", "pending": 1, "lastError": error, "lastErrorKind": "configuration"]]])
        let check = try device.run("monitor", ["status", "--check"])
        #expect(check.status == 2 && check.stdout.split(separator: "\n").count == 1 && !check.stdout.contains("\u{1b}")
                && !check.stdout.contains("\u{202e}") && check.stdout.components(separatedBy: " | ").count == 2, "\(check)")
        let text = try device.run("monitor", ["status"])
        #expect(!text.stdout.contains("\u{1b}") && !text.stdout.contains("\nGEOLOCATE OK"), "\(text)")
    }

    /// MQTT 5 across the roles (issue 44), on a broker that closes every MQTT 5 connection before
    /// its CONNACK: root's gate falls back to 3.1.1 but never writes what it learnt; the service
    /// user's flush learns it, says it once and keeps it in mqtt-versions.json (its own file);
    /// the gate then connects with 3.1.1 at once and leaves the file as it found it. Each role
    /// connects as its own client (ID-gate, ID-flush), so neither takes the other's session.
    @Test func mqtt5AcrossTheRoles() throws {
        let device = try Device()
        let broker = try FakeMQTTBroker(plan: ["close-v5"])
        defer { broker.stop() }
        let log = try device.freshLog()
        #expect(try device.shell("root", ["install", "-m", "0644", log, "/etc/geolocate/live.nmea"]).status == 0)
        try device.set("permissions", "fine")
        try device.set("source", "nmea:/etc/geolocate/live.nmea")
        try device.set("endpoints.fleet.url", "mqtt://127.0.0.1:\(broker.port)/fleet")
        try device.set("endpoints.fleet.format", "mosaic-ndjson")
        try device.set("actions.login.endpoint", "fleet")
        let pam = ["PAM_USER": "alice", "PAM_SERVICE": "sshd", "PAM_TYPE": "account"]
        let memory = "/var/lib/geolocate/mqtt-versions.json"
        func exists(_ path: String) throws -> Bool { try device.shell("root", ["test", "-e", path]).status == 0 }

        let firstLogin = try device.run("root", ["trigger", "login", "--pam"], environment: pam)
        #expect(firstLogin.status == 0, "\(firstLogin)")
        #expect(broker.connects() == [5, 4], "the gate falls back at once")
        #expect(try !exists(memory), "the gate never writes the services' state")

        #expect(try device.run("geolocate", ["track", "--system", "--transmit-interval", "off"]).status == 0)
        let tracked = try device.spoolCount()
        let flushed = try device.run("geolocate", ["flush", "--system"])
        #expect(flushed.status == 0 && flushed.stderr.components(separatedBy: "does not take MQTT 5").count == 2, "said once: \(flushed)")
        #expect(try device.spoolCount() == 0 && tracked > 0)
        #expect(try device.stat("%U:%G", memory) == "geolocate:geolocate")
        let learnt = try device.stat("%i %Y %s", memory)

        let before = broker.connections().count
        let secondLogin = try device.run("root", ["trigger", "login", "--pam"], environment: pam)
        #expect(secondLogin.status == 0 && !secondLogin.stderr.contains("MQTT 5"), "\(secondLogin)")
        #expect(broker.connects().dropFirst(before) == [4], "the gate reads what the services learnt: \(broker.connects())")
        #expect(try device.stat("%i %Y %s", memory) == learnt, "and leaves it as it was")

        let id = try device.shell("root", ["cat", "/var/lib/geolocate/device-id"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let clients = Set(broker.connections().map(\.client))
        #expect(!id.isEmpty && clients == ["\(id)-gate", "\(id)-flush"], "\(broker.connections())")
    }

    /// `key attest` across the roles (issue 43), on swtpm with an EK certificate from a private
    /// CA: root makes the key, the risk server (the outsider, a user of its own, with its own
    /// store) enrols what the service user's `key show` prints and the attestation key from the
    /// service user's evidence and root's answer to its challenge; then the service user's
    /// evidence for a nonce the server issued verifies to the key's kid.
    @Test func keyAttestAcrossTheRoles() throws {
        let device = try Device()
        let tpm = try SoftwareTPM(certified: true)
        try device.set("signing.keyProvider", "tpm")
        try device.set("signing.tpm", tpm.tcti)
        let server = device.shared + "/server"
        try FileManager.default.createDirectory(atPath: server, withIntermediateDirectories: true)
        for (from, name) in [(GeolocateProcess.projectRoot.appendingPathComponent("Examples/verify/verify.py"), "verify.py"),
                             (tpm.rootCertificate, "root.pem"), (tpm.intermediateCertificate, "issuer.pem")] {
            try Tool.run(["install", "-m", "0644", from.path, server + "/" + name])
        }
        chown(server, 64103, 64103)
        chmod(server, 0o700)
        /// verify.py as the risk server, the outsider: its store is its own.
        func verifier(_ arguments: [String], input: String? = nil) throws -> GeolocateProcess.Result {
            let file = device.shared + "/input-\(UUID().uuidString)"
            try (input ?? "").write(toFile: file, atomically: true, encoding: .utf8)
            chmod(file, 0o644)
            let command = ["python3", server + "/verify.py", "--store", server + "/store.json", "--ca", server + "/root.pem", "--ca", server + "/issuer.pem"]
                + arguments
            return try device.shell("outsider", ["sh", "-c", "exec \"$@\" < \(file)", "verify"] + command)
        }

        let made = try device.run("root", ["key", "init"])
        #expect(made.status == 0, "\(made.stderr)")
        let shown = try device.run("geolocate", ["key", "show", "--system"])
        let keys = device.shared + "/device.jwks"
        try shown.stdout.write(toFile: keys, atomically: true, encoding: .utf8)
        chmod(keys, 0o644)
        let iss = try #require((try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])?["iss"] as? String)
        let kid = try #require((try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
            .flatMap { ($0["keys"] as? [[String: Any]])?.first?["kid"] as? String })
        #expect(try verifier(["enrol", keys]).status == 0)

        let evidence = try device.run("geolocate", ["key", "attest", "--system", "--nonce", "enrolment"])
        #expect(evidence.status == 0 && evidence.stderr.isEmpty, "\(evidence)")
        let challenge = try verifier(["attest-challenge", iss], input: evidence.stdout)
        #expect(challenge.status == 0, "\(challenge)")
        let answer = try device.run("root", ["key", "attest", "--activate=\(challenge.stdout.trimmingCharacters(in: .whitespacesAndNewlines))"])
        #expect(answer.status == 0, "root answers for the TPM the services sign with: \(answer)")
        let enrolled = try verifier(["attest-enrol", iss], input: answer.stdout)
        #expect(enrolled.status == 0 && enrolled.stdout.hasPrefix("enrolled attestation key"), "\(enrolled)")

        let nonce = try verifier(["nonce", iss]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let attested = try device.run("geolocate", ["key", "attest", "--system", "--nonce=\(nonce)"])
        let checked = try verifier(["attest-check", iss, nonce], input: attested.stdout)
        #expect(checked.status == 0 && checked.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "attested \(kid)", "\(checked)")
        // The monitor may not attest: the key file is the service user's alone.
        let monitor = try device.run("monitor", ["key", "attest", "--system", "--nonce", "x"])
        #expect(monitor.status != 0 && monitor.stdout.isEmpty && monitor.stderr.split(separator: "\n").count == 1, "\(monitor)")
    }

    /// `actions.NAME.endpoint` sends trigger's record as `--endpoint` does, with or without --pam.
    @Test func anActionsEndpointGetsTriggersRecord() throws {
        let geolocate = GeolocateProcess()
        let collector = try Collector()
        defer { collector.stop() }
        #expect(try geolocate.run(["config", "set", "endpoints.risk.url", collector.url("/risk")]).status == 0)
        #expect(try geolocate.run(["config", "set", "actions.login.endpoint", "risk"]).status == 0)
        let login = try geolocate.run(["trigger", "login", "--replay", GeolocateProcess.example("kiosk-gnss.nmea"), "--permission", "fine"])
        let id = try login.json()["id"] as? String
        #expect(login.status == 0 && id != nil && collector.acceptedIDs("/risk") == [id ?? ""], "\(login)")
        let checkout = try geolocate.run(["trigger", "checkout", "--replay", GeolocateProcess.example("kiosk-gnss.nmea"), "--permission", "fine"])
        #expect(checkout.status == 0 && collector.acceptedIDs("/risk").count == 1, "another action's record stays here")
    }
}

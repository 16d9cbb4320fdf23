import Foundation
import Testing

/// SPEC §15, the receiver's own verdicts through gpsd: a u-blox receiver's UBX packets (made by
/// pyubx2 in `Support/ubx-stream.py`, mixed with its NMEA) replayed by gpsfake as a binary log;
/// gpsd 3.22 decodes none of the verdicts, so geolocate reads them on a second, raw connection
/// and gives each TPV the verdict of its epoch. Expected values come from the packets the
/// test asked pyubx2 for.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct ReceiverVerdictGPSDTests {
    let geolocate = GeolocateProcess()

    /// A u-blox log of `epochs` seconds from now (so no clock rule fires), with `options` for
    /// ubx-stream.py.
    func log(_ options: [String], epochs: Int = 600) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let path = geolocate.home.appendingPathComponent("ublox-\(UUID().uuidString).log").path
        let script = GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/ubx-stream.py").path
        let start = ISO8601DateFormatter().string(from: Date()).replacingOccurrences(of: "Z", with: "")
        let made = try Spawn.run(["sh", "-c", "python3 \"$0\" \"$@\" > \"\(path)\"", script, "--epochs", String(epochs), "--start", start] + options)
        #expect(made.status == 0, "\(made.stderr)")
        return path
    }

    /// One login on gpsd replaying `log`, under a policy that distrusts only the receiver's own
    /// verdicts (so no clock or replay rule decides in their place); its record.
    ///
    /// For a u-blox log, the login comes once gpsd has recognised the receiver (a DEVICE report
    /// naming its u-blox driver), as on a device whose gpsd has run for more than a moment: gpsd
    /// first calls any receiver `NMEA0183`, and such a receiver's fixes do not wait for verdicts.
    func login(_ log: String, requireAuthenticated: Bool = false, ublox: Bool = true) throws -> [String: Any] {
        _ = try geolocate.run(["config", "set", "policy.distrust", "receiverSpoofing,osnmaReplay"])
        _ = try geolocate.run(["config", "set", "policy.requireAuthenticated", requireAuthenticated ? "true" : "false"])
        let fake = try GPSDFake(log: log, cycle: 0.02)
        defer { fake.stop() }
        let pipe = try GPSPipe(port: fake.port)
        defer { pipe.stop() }
        if ublox {
            #expect(waitUntil(.seconds(20)) { pipe.reports(ofClass: "DEVICE").contains { $0["driver"] as? String == "u-blox" } },
                    "gpsd never named the u-blox driver")
        } else {
            _ = try pipe.waitForPositionReport()
        }
        let result = try geolocate.run(["trigger", "login", "--source", fake.source, "--permission", "fine",
                                        "--mode", "force-current", "--timeout", "10s", "--policy"])
        #expect(result.status == 0, "\(result.stderr)")
        return try result.json()
    }

    @Test func aReceiverThatReportsSpoofingAndAReplayIsDenied() throws {
        let record = try login(try log(["--pvt", "1", "--sec-sig", "1,3", "--status", "3", "--osnma", "1,2,4,6"]))
        let signals = try #require(record["signals"] as? [String: Any], "\(record)")
        #expect(signals["receiverSpoofing"] as? Bool == true, "\(signals)")
        #expect(signals["osnmaReplay"] as? Bool == true, "\(signals)")
        #expect(signals["receiverJamming"] as? Bool == false, "\(signals)")
        // NAV-PVT says authenticated, but SEC-OSNMA's replay contradicts it.
        #expect(signals["gnssAuthenticated"] as? Bool == false, "\(signals)")
        let policy = try #require(record["policy"] as? [String: Any])
        #expect(policy["decision"] as? String == "deny", "\(policy)")
        #expect((policy["reason"] as? String)?.hasPrefix("receiverSpoofing:") == true, "\(policy)")
    }

    /// UBX before the epoch's NMEA, as some receivers send it: the same verdicts.
    @Test func anAuthenticatedFixAllowsUnderRequireAuthenticated() throws {
        let record = try login(try log(["--pvt", "1", "--sec-sig", "1,1", "--status", "1", "--osnma", "1,2,1,6", "--ubx-first"]),
                               requireAuthenticated: true)
        let signals = try #require(record["signals"] as? [String: Any], "\(record)")
        #expect(signals["gnssAuthenticated"] as? Bool == true, "\(signals)")
        #expect(signals["receiverSpoofing"] as? Bool == false, "\(signals)")
        #expect(signals["osnmaReplay"] as? Bool == false, "\(signals)")
        #expect((record["policy"] as? [String: Any])?["decision"] as? String == "allow", "\(record)")
    }

    @Test func anUnauthenticatedFixIsUndeterminedUnderRequireAuthenticated() throws {
        let record = try login(try log(["--pvt", "0", "--osnma", "1,2,0,0"]), requireAuthenticated: true)
        let signals = try #require(record["signals"] as? [String: Any], "\(record)")
        #expect(signals["gnssAuthenticated"] as? Bool == false, "\(signals)")
        let policy = try #require(record["policy"] as? [String: Any])
        #expect(policy["decision"] as? String == "undetermined", "\(policy)")
        #expect((policy["reason"] as? String)?.contains("policy.requireAuthenticated") == true, "\(policy)")
    }

    /// `status` says what the receiver's health reports are worth through this gpsd: 3.22 reports
    /// no jamming or antenna state, and a u-blox's verdict messages are listed, or said to be missing.
    @Test(arguments: [(["--pvt", "1", "--status", "1", "--sec-sig", "1,1", "--osnma", "1,2,1,4"], "NAV-PVT, NAV-STATUS, SEC-OSNMA, SEC-SIG"),
                      (["--nav-clock"], "none: the u-blox receiver sends no NAV-PVT"),
                      ([], nil)])
    func statusSaysWhatTheReceiverSends(options: [String], verdicts: String?) throws {
        let fake = try GPSDFake(log: try log(options), cycle: 0.02)
        defer { fake.stop() }
        _ = try geolocate.run(["config", "set", "source", fake.source])
        let pipe = try GPSPipe(port: fake.port)
        defer { pipe.stop() }
        _ = try pipe.waitForPositionReport { GPSPipe.hasFix($0) }
        let result = try geolocate.run(["status", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let gpsd = try #require(try result.json()["gpsd"] as? [String: Any], "\(result.stdout)")
        #expect(gpsd["release"] as? String == "3.22", "\(gpsd)")
        #expect((gpsd["receiverHealth"] as? String)?.hasPrefix("jamming and antenna state not available (gpsd 3.22") == true, "\(gpsd)")
        if let verdicts {
            #expect((gpsd["receiverVerdicts"] as? String)?.hasPrefix(verdicts) == true, "\(gpsd)")
        } else {
            #expect(gpsd["receiverVerdicts"] == nil, "an NMEA receiver is no u-blox: \(gpsd)")
        }
    }

    /// A receiver that sends no UBX through gpsd: every verdict unknown (null), never "all clear",
    /// and jamming null too (gpsd 3.22 reports no `jam`).
    @Test func noUBXIsUnknownNotAllClear() throws {
        let record = try login(try log([]), ublox: false)
        let signals = try #require(record["signals"] as? [String: Any], "\(record)")
        for key in ["gnssAuthenticated", "receiverSpoofing", "receiverJamming", "osnmaReplay", "jamming"] {
            #expect(signals.keys.contains(key) && signals[key] is NSNull, "\(key): \(signals)")
        }
    }
}

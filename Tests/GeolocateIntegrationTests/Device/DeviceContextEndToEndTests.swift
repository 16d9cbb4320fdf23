import Foundation
import Testing

/// SPEC §10.3 through the binary: charging, Wi-Fi and carrier read from a fake system
/// (`GEOLOCATE_DEVICE_ROOT`: sysfs under `sys/`, `nmcli` and `mmcli` in `bin/`), never from
/// the test machine's own hardware.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct DeviceContextEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")
    var root: URL { geolocate.home.appendingPathComponent("device-root") }

    func write(_ text: String, _ path: String, executable: Bool = false) throws {
        let url = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
        if executable { try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path) }
    }

    /// A laptop on battery, plugged in, on an office Wi-Fi, with a modem.
    func makeDevice(batteryStatus: String = "Discharging", mainsOnline: String = "1", bssid: String = "aa:bb:cc:dd:ee:01") throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try write("Battery\n", "sys/class/power_supply/BAT0/type")
        try write("\(batteryStatus)\n", "sys/class/power_supply/BAT0/status")
        try write("Mains\n", "sys/class/power_supply/AC/type")
        try write("\(mainsOnline)\n", "sys/class/power_supply/AC/online")
        let escaped = bssid.uppercased().replacingOccurrences(of: ":", with: "\\\\:")
        try write("#!/bin/sh\nprintf 'no:Guest:11\\\\:22\\\\:33\\\\:44\\\\:55\\\\:66\\nyes:Office\\\\:5G:\(escaped)\\n'\n", "bin/nmcli", executable: true)
        try write("#!/bin/sh\nprintf 'modem.generic.model : EM7455\\nmodem.3gpp.operator-name : Vodafone IE\\n'\n", "bin/mmcli", executable: true)
    }

    func track(_ extra: [String] = []) throws -> [[String: Any]] {
        let result = try geolocate.run(["track", "--replay", drive, "--permission", "fine", "--every-fix", "--count", "2", "--stdout", "--no-spool"] + extra,
                                       environment: ["GEOLOCATE_DEVICE_ROOT": root.path])
        #expect(result.status == 0, "\(result.stderr)")
        return try result.stdout.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    @Test func everyFieldFromTheFakeSystem() throws {
        try makeDevice()
        let records = try track()
        #expect(records.count == 2)
        for record in records {
            #expect(record["isCharging"] as? Bool == true)  // on battery, but mains online
            #expect(record["wifiSsid"] as? String == "Office:5G")
            #expect(record["wifiBssid"] as? String == "AA:BB:CC:DD:EE:01")
            #expect(record["carrierName"] as? String == "Vodafone IE")
        }
    }

    @Test func aBatteryOnItsOwnIsNotCharging() throws {
        try makeDevice(batteryStatus: "Discharging", mainsOnline: "0")
        #expect(try track().first?["isCharging"] as? Bool == false)
        try makeDevice(batteryStatus: "Full", mainsOnline: "0")
        #expect(try track().first?["isCharging"] as? Bool == true)
    }

    @Test func eachBehindItsFieldsFlag() throws {
        try makeDevice()
        for key in ["isCharging", "wifiSsid", "carrierName"] {
            #expect(try geolocate.run(["config", "set", "fields.\(key)", "false"]).status == 0)
        }
        let record = try #require(try track().first)
        #expect(record["isCharging"] == nil && record["wifiSsid"] == nil && record["carrierName"] == nil)
        #expect(record["wifiBssid"] as? String == "AA:BB:CC:DD:EE:01")
    }

    @Test func aNewAccessPointWhileTheFixStaysPutIsAReason() throws {
        try makeDevice(bssid: "aa:bb:cc:dd:ee:01")
        _ = try track(["--count", "1"])
        try makeDevice(bssid: "aa:bb:cc:dd:ee:02")
        let signals = try #require(try track(["--count", "1"]).first?["signals"] as? [String: Any])
        let reasons = try #require(signals["reasons"] as? [String])
        #expect(reasons.contains { $0.hasPrefix("wifiChanged: the access point changed from AA:BB:CC:DD:EE:01 to AA:BB:CC:DD:EE:02") }, "\(reasons)")
        // The same access point again: no such reason.
        let again = try #require(try track(["--count", "1"]).first?["signals"] as? [String: Any])
        #expect((again["reasons"] as? [String])?.contains { $0.hasPrefix("wifiChanged") } == false)
    }

    /// A ModemManager that never answers and ignores SIGTERM, and a NetworkManager that leaves
    /// a child holding its output: records still flow, each read given up after 500 ms.
    @Test func stuckCommandsAreGivenUp() throws {
        try makeDevice()
        try write("#!/bin/bash\ntrap '' TERM\nwhile :; do sleep 1; done\n", "bin/mmcli", executable: true)
        try write("#!/bin/sh\n(sleep 30) &\necho 'yes:Office:AA\\:BB\\:CC\\:DD\\:EE\\:01'\n", "bin/nmcli", executable: true)
        let running = try geolocate.start(["track", "--replay", drive, "--permission", "fine", "--every-fix", "--count", "3", "--stdout", "--no-spool"],
                                          environment: ["GEOLOCATE_DEVICE_ROOT": root.path])
        let result = try #require(running.finish(within: .seconds(15)), "track hung on a stuck command")
        #expect(result.status == 0, "\(result.stderr)")
        let records = try result.stdout.split(separator: "\n").map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(records.count == 3)
        #expect(records.allSatisfy { $0["carrierName"] == nil && $0["wifiSsid"] as? String == "Office" && $0["isCharging"] as? Bool == true })
    }

    @Test func spooledAndSentInOpenLocatesNames() throws {
        try makeDevice()
        let collector = try Collector()
        defer { collector.stop() }
        #expect(try geolocate.run(["config", "set", "endpoints.primary.url", collector.url("/ok")]).status == 0)
        let tracked = try geolocate.run(["track", "--replay", drive, "--permission", "fine", "--every-fix", "--count", "2"],
                                        environment: ["GEOLOCATE_DEVICE_ROOT": root.path])
        #expect(tracked.status == 0, "\(tracked.stderr)")
        #expect(try geolocate.run(["flush"]).status == 0)
        let body = try #require(collector.requests().first?.body)
        let locations = try #require((try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["locations"] as? [[String: Any]])
        #expect(locations.count == 2)
        #expect(locations.allSatisfy {
            $0["is_charging"] as? Bool == true && $0["wifi_ssid"] as? String == "Office:5G"
                && $0["wifi_bssid"] as? String == "AA:BB:CC:DD:EE:01" && $0["carrier_name"] as? String == "Vodafone IE"
        })
    }
}

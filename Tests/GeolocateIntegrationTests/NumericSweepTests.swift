import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

/// Every numeric flag and every config key, fed the numbers careless and hostile users type:
/// a clean exit (0, or 64/78 with one line), never a signal, and nothing accepted that the
/// commands then cannot use (SPEC §8).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct NumericSweepTests {
    static let values = ["0", "-1", "0.5", "1e30", "9223372036854775808", "nan", "inf"]
    let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")

    func expectClean(_ result: GeolocateProcess.Result, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.signal == nil && [0, 64, 78].contains(result.status), "\(what): exit \(result.status) \(result.stderr)",
                sourceLocation: sourceLocation)
        if result.status != 0 {
            #expect(result.stdout.isEmpty, "\(what): output on failure", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: values) func numericFlags(value: String) throws {
        let geolocate = GeolocateProcess()
        let trigger = ["trigger", "login", "--replay", kiosk, "--permission", "fine"]
        let track = ["track", "--replay", kiosk, "--stdout", "--no-spool", "--permission", "fine", "--count", "2"]
        let runs: [[String]] = [
            trigger + ["--timeout", value], trigger + ["--timeout", value + "s"], trigger + ["--mode", "last-known:" + value],
            trigger + ["--now", value], trigger + ["--replay-speed", value + "x"],
            track + ["--interval", value], track + ["--distance", value], track + ["--duration", value],
            track + ["--transmit-interval", value], track + ["--replay-speed", value + "x"],
            ["track", "--replay", kiosk, "--stdout", "--no-spool", "--permission", "fine", "--count", value],
            ["flush", "--batch-size", value],
        ]
        for arguments in runs {
            let result = try geolocate.run(arguments)
            expectClean(result, arguments.joined(separator: " "))
            // A number is echoed as it can be read: 1e30 m used to be printed with 31 digits.
            // (The value as typed may be echoed as it was typed.)
            for line in result.stderr.split(separator: "\n") {
                let longestDigits = line.split(whereSeparator: { !$0.isNumber }).map(\.count).max() ?? 0
                #expect(longestDigits <= max(13, value.count), "\(arguments.joined(separator: " ")): \(line)")
            }
        }
        // A zero duration would stop track at once, or flush without a pause.
        if value == "0" {
            for flag in ["--duration", "--transmit-interval"] {
                let zero = try geolocate.run(track + [flag, value])
                #expect(zero.status == 64 && zero.stderr.contains("\(flag) must be above 0"), "\(flag) 0: \(zero.stderr)")
            }
        }
    }

    /// Each key (`NAME` as `a`) with each value: refused with 64, or accepted and then usable by
    /// `config validate` and by a trigger and a track.
    @Test(arguments: ConfigKey.all.map(\.key)) func configKeys(pattern: String) throws {
        let key = pattern.replacingOccurrences(of: "NAME", with: "a")
        for value in Self.values {
            let geolocate = GeolocateProcess()
            if key.hasPrefix("endpoints.a.") && key != "endpoints.a.url" {
                _ = try geolocate.run(["config", "set", "endpoints.a.url", "http://127.0.0.1:1/"])
            }
            let set = try geolocate.run(["config", "set", key, value])
            expectClean(set, "config set \(key) \(value)")
            guard set.status == 0 else { continue }
            expectClean(try geolocate.run(["config", "validate"]), "validate after \(key) \(value)")
            let trigger = try geolocate.run(["trigger", "login", "--replay", kiosk, "--permission", "fine"])
            #expect(trigger.signal == nil && trigger.status == 0, "trigger after \(key) \(value): \(trigger.status) \(trigger.stderr)")
            let track = try geolocate.run(["track", "--replay", kiosk, "--count", "2", "--stdout", "--permission", "fine",
                                           "--transmit-interval", "off"])
            #expect(track.signal == nil && track.status == 0, "track after \(key) \(value): \(track.status) \(track.stderr)")
        }
    }
}

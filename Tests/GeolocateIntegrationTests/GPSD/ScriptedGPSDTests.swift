import Foundation
import Testing

/// `geolocate trigger` against a scripted gpsd (`fake-gpsd.py`) reporting what a real gpsd
/// cannot be made to: values out of range, a fix dated 2099, or nothing at all.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct ScriptedGPSDTests {
    let geolocate = GeolocateProcess()

    /// 2026-11-22T12:00:00Z and one second later, as `--now`, so the fixes are current.
    static let fixTime = "2026-11-22T12:00:00.000Z"
    static let now = "1795348801000"

    func trigger(_ gpsd: ScriptedGPSD, _ extra: [String] = []) throws -> GeolocateProcess.Result {
        try geolocate.run(["trigger", "login", "--source", gpsd.source, "--permission", "fine",
                           "--mode", "force-current"] + extra)
    }

    /// The record of a trigger whose gpsd holds `held` (?POLL;) and then streams `streamed`.
    func record(held: [[String: Any]], streamed: [[String: Any]] = [], timeout: String = "1500ms",
                now: String? = ScriptedGPSDTests.now) throws -> [String: Any] {
        let gpsd = try ScriptedGPSD(["poll": held, "stream": streamed])
        defer { gpsd.stop() }
        let result = try trigger(gpsd, ["--timeout", timeout] + (now.map { ["--now", $0] } ?? []))
        #expect(result.status == 0, "\(result.stderr)")
        return try result.json()
    }

    /// gpsd 3.26 and later put the receiver's jamming indicator and antenna state in the TPV
    /// (from a u-blox's MON-HW; `antPwr` from 3.27), which Debian's gpsd 3.22 never sends: the record's signals
    /// carry them with their reasons, a receiver that reports neither leaves them out, and a
    /// policy that distrusts them denies.
    @Test func jammingAndAntennaStateReachTheSignals() throws {
        let faulty = try record(held: [ScriptedGPSD.tpv(time: Self.fixTime, ["jam": 180, "ant": 2, "antPwr": 2])])
        let signals = try #require(faulty["signals"] as? [String: Any], "\(faulty)")
        #expect(signals["jamming"] as? Int == 180 && signals["jammed"] as? Bool == true, "\(signals)")
        #expect(signals["antenna"] as? String == "open" && signals["antennaFault"] as? Bool == true, "\(signals)")
        #expect(signals["antennaPower"] as? String == "on", "\(signals)")
        let reasons = signals["reasons"] as? [String] ?? []
        #expect(reasons.contains("jammed: the receiver's jamming indicator is 180 of 255 (limit 100)"), "\(reasons)")
        #expect(reasons.contains("antennaFault: the receiver reports its antenna open (disconnected)"), "\(reasons)")
        var checker = GeolocateProcess()
        checker.executable = GeolocateProcess.projectRoot.appendingPathComponent("scripts/check-schema")
        let verdict = try checker.run([GeolocateProcess.projectRoot.appendingPathComponent("docs/schema/record.schema.json").path, "-"],
                                      stdin: try JSONSerialization.data(withJSONObject: faulty))
        #expect(verdict.status == 0, "record.schema.json: \(verdict.stdout)\(verdict.stderr)")
        let healthy = try #require(try record(held: [ScriptedGPSD.tpv(time: Self.fixTime, ["jam": 20, "ant": 1])])["signals"] as? [String: Any])
        #expect(healthy["jamming"] as? Int == 20 && healthy["jammed"] as? Bool == false && healthy["antenna"] as? String == "ok"
                    && healthy["antennaFault"] as? Bool == false, "\(healthy)")
        let silent = try #require(try record(held: [ScriptedGPSD.tpv(time: Self.fixTime)])["signals"] as? [String: Any])
        // Unknown jamming is said as null, never left out to look like "not jammed" (SPEC §15).
        #expect(silent["jamming"] is NSNull && silent["jammed"] == nil && silent["antenna"] == nil && silent["antennaFault"] == nil, "\(silent)")

        #expect(try geolocate.run(["config", "set", "policy.distrust", "jumped,spoofingSuspected,jammed"]).status == 0)
        let gpsd = try ScriptedGPSD(["poll": [ScriptedGPSD.tpv(time: Self.fixTime, ["jam": 180])]])
        defer { gpsd.stop() }
        // No --now: it is refused for a live policy decision (SPEC §3); the fix's age is then
        // unknown, and the distrusted signal denies before any age rule.
        let result = try trigger(gpsd, ["--timeout", "1500ms", "--policy"])
        let policy = try #require(try result.json()["policy"] as? [String: Any], "\(result.stderr)")
        #expect(policy["decision"] as? String == "deny" && (policy["reason"] as? String)?.hasPrefix("jammed") == true, "\(policy)")
    }

    /// A held fix whose arrival geolocate did not see, with `--now` (not the system's clock):
    /// its age is unknown (SPEC §3), so it is the last known location with `ageMs` null.
    @Test func aValidHeldFixIsReportedAsGpsdSentIt() throws {
        let record = try record(held: [ScriptedGPSD.tpv(time: Self.fixTime)])
        let location = try #require(record["location"] as? [String: Any], "\(record)")
        #expect(record["locationSource"] as? String == "last_known" && record["ageMs"] is NSNull, "\(record)")
        #expect(location["latitude"] as? String == "53.3613367")
        #expect(location["longitude"] as? String == "-6.5056200")
        #expect(location["accuracy"] as? String == "12.1")  // eph 19.6 × 0.617
        #expect(location["speed"] as? String == "1.25")
        #expect(location["course"] as? String == "45.5")
    }

    @Test(arguments: [("lat", 91.0), ("lat", -90.5), ("lon", 500.0), ("lon", -180.25)])
    func coordinatesOutOfRangeAreNoFix(_ key: String, _ value: Double) throws {
        // Before: printed as "91.0000000". Now no fix at all: nothing held, nothing arrives.
        let bad = ScriptedGPSD.tpv(time: Self.fixTime, [key: value])
        let record = try record(held: [bad], streamed: [bad], timeout: "500ms")
        #expect(record["location"] is NSNull, "\(key) \(value): \(record)")
        #expect(record["fallbackReason"] as? String == "timeout")
        #expect(record["errorCode"] as? Int == 1056)
    }

    @Test func aBadReportDoesNotHideTheGoodOneAfterIt() throws {
        let bad = ScriptedGPSD.tpv(time: Self.fixTime, ["lat": 91.0])
        let good = ScriptedGPSD.tpv(time: "2026-11-22T12:00:01.000Z", ["lat": 53.25])
        let record = try record(held: [bad], streamed: [bad, good], timeout: "5s")
        let location = try #require(record["location"] as? [String: Any], "\(record)")
        #expect(location["latitude"] as? String == "53.2500000")
        #expect(record["locationSource"] as? String == "current")
    }

    @Test func valuesOutOfRangeAreLeftOut() throws {
        // Before: accuracy "-30.9" from eph -50, speed "-5.00", course "999.0".
        let record = try record(held: [ScriptedGPSD.tpv(time: Self.fixTime, [
            "eph": -50.0, "epx": -1.0, "epy": -1.0, "epv": -3.0, "speed": -5.0, "track": 999.0,
            "altHAE": 250_000.0, "altMSL": 249_950.0,
        ])])
        let location = try #require(record["location"] as? [String: Any], "\(record)")
        #expect(location["latitude"] as? String == "53.3613367")
        for key in ["accuracy", "verticalAccuracy", "speed", "course", "altitude"] {
            #expect(location[key] == nil, "\(key): \(location[key] ?? "")")
        }
    }

    /// A fix dated far from the system clock (a week-rollover 2034, here 2099) is a position
    /// that just arrived (SPEC §3, §8): reported current with its age from arrival, said once
    /// on stderr, and it never wedges the last known location: a later arrival replaces it.
    @Test func aFixDatedFarFromTheClockIsAPositionThatJustArrived() throws {
        let future = ScriptedGPSD.tpv(time: "2099-01-01T00:00:00.000Z")
        let gpsd = try ScriptedGPSD(["poll": [], "stream": [future]])
        defer { gpsd.stop() }
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let result = try trigger(gpsd, ["--timeout", "1500ms"])
        gpsd.stop()
        let record = try result.json()
        let location = try #require(record["location"] as? [String: Any], "\(record) \(result.stderr)")
        #expect(record["locationSource"] as? String == "current" && record["errorCode"] as? Int == 0)
        #expect(location["recordTimestamp"] as? Int == 4_070_908_800_000)
        #expect((record["ageMs"] as? Int).map { $0 >= 0 && $0 <= 1500 } == true, "\(record)")
        let skew = Int64(try #require((record["signals"] as? [String: Any])?["clockSkewMs"] as? Int))
        #expect(skew <= before - 4_070_908_800_000 + 60_000 && skew < -2_000_000_000_000)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("dates its fixes 2099-01-01T00:00:00Z"), "\(result.stderr)")

        // A fix of today, arriving later, is fresher than the one of 2099 and replaces it.
        let today = ISO8601DateFormatter().string(from: Date())
        let later = try ScriptedGPSD(["poll": [], "stream": [ScriptedGPSD.tpv(time: today)]])
        defer { later.stop() }
        let second = try trigger(later, ["--timeout", "1500ms"])
        later.stop()
        #expect(try second.json()["locationSource"] as? String == "current", "\(second.stderr)")
        let stored = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: geolocate.stateDirectory + "/last-known.json"))) as? [String: Any]
        #expect((stored?["timestamp"] as? NSNumber)?.int64Value ?? 0 < 4_070_908_800_000, "\(stored ?? [:])")
    }

    @Test func aFixDatedWithinTheSkewIsReported() throws {
        // Ten minutes ahead of the system clock is a clock difference, not a wrong date.
        let soon = Date().addingTimeInterval(600)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let record = try record(held: [ScriptedGPSD.tpv(time: formatter.string(from: soon))], now: nil)
        #expect(record["location"] is [String: Any], "\(record)")
    }

    /// A fix dated before the GPS epoch (1980-01-06) is no fix: before, a streamed year-1 fix
    /// was reported as current and became the last known location. A fix gpsd streams with an
    /// old but possible date is current (gpsfake replays old logs; `recordTimestamp` tells).
    @Test func fixesBeforeTheGPSEpochAreNoFixes() throws {
        let beforeEpoch = ScriptedGPSD.tpv(time: "0001-01-01T00:00:00.000Z", ["lat": 20.0])
        let old = ScriptedGPSD.tpv(time: "2001-05-01T12:00:00.000Z", ["lat": 10.0])
        let gpsd = try ScriptedGPSD(["poll": [], "stream": [beforeEpoch, beforeEpoch, old]])
        defer { gpsd.stop() }
        let result = try trigger(gpsd, ["--timeout", "3s"])
        #expect(result.status == 0, "\(result.stderr)")
        let streamed = try result.json()
        let location = try #require(streamed["location"] as? [String: Any], "\(streamed)")
        #expect(location["latitude"] as? String == "10.0000000", "\(location)")
        #expect(location["recordTimestamp"] as? Int64 == 988_718_400_000)

        // A pre-epoch fix gpsd holds is no fix either, not even a last known one.
        let fresh = GeolocateProcess()
        let holding = try ScriptedGPSD(["poll": [beforeEpoch], "stream": []])
        defer { holding.stop() }
        let held = try fresh.run(["trigger", "login", "--source", holding.source, "--permission", "fine", "--timeout", "300ms"])
        #expect(held.status == 0, "\(held.stderr)")
        #expect(try held.json()["location"] is NSNull, "\(held.stdout)")
        #expect(!FileManager.default.fileExists(atPath: fresh.stateDirectory + "/last-known.json"))
    }

    /// Malformed lines from gpsd are skipped, and the fix after them is reported. libgps 3.22
    /// loops forever decoding `{s"class":"TPV"}` (found by `make fuzz`): read with `gps_read`,
    /// such a line hung trigger past any timeout.
    @Test func malformedLinesDoNotHangTheSource() throws {
        let good = ScriptedGPSD.tpv(time: Self.fixTime)
        let gpsd = try ScriptedGPSD(["poll": [], "stream": [good],
                                     "raw": [#"{s"class":"TPV"}"#, "not json", #"{"class":"TPV","mode":3"#, "{}"]])
        defer { gpsd.stop() }
        let running = try geolocate.start(["trigger", "login", "--source", gpsd.source, "--permission", "fine",
                                           "--mode", "force-current", "--timeout", "3s", "--now", Self.now])
        let result = try #require(running.finish(within: .seconds(30)), "trigger hung on a malformed line")
        #expect(result.status == 0, "\(result.stderr)")
        let location = try #require(try result.json()["location"] as? [String: Any], "\(result.stdout)")
        #expect(location["latitude"] as? String == "53.3613367")
    }

    /// A line over 64 KiB is dropped whole, wherever its end falls in what was read: a TPV
    /// padded to 70 KB, and a TPV at the end of a line that began 65 KB earlier (found by the
    /// hostile pass: the first was taken, the second would have been), are no fixes; the
    /// valid TPV after them is the record's.
    @Test func aLineOver64KiBIsDroppedWhole() throws {
        let padded = ScriptedGPSD.tpv(time: Self.fixTime, ["lat": 10.0, "lon": 10.0])
        var text = String(decoding: try JSONSerialization.data(withJSONObject: padded), as: UTF8.self)
        text.insert(contentsOf: String(repeating: " ", count: 70_000), at: text.index(after: text.startIndex))
        let tail = String(repeating: " ", count: 65_600) + #"{"class":"TPV","mode":3,"time":"2026-11-22T12:00:00.000Z","lat":20.0,"lon":20.0}"#
        let gpsd = try ScriptedGPSD(["poll": [], "stream": [ScriptedGPSD.tpv(time: Self.fixTime)], "raw": [text, tail]])
        defer { gpsd.stop() }
        let result = try trigger(gpsd, ["--timeout", "3s", "--now", Self.now])
        #expect(result.status == 0, "\(result.stderr)")
        let location = try #require(try result.json()["location"] as? [String: Any], "\(result.stdout)")
        #expect(location["latitude"] as? String == "53.3613367", "\(location)")
    }

    /// D15: a gpsd that accepts and never reports costs the timeout, plus at most 100 ms: the
    /// time from connect to close as the server saw it, so the process's own start-up on a
    /// loaded machine does not count.
    @Test(arguments: [true, false])
    func forceCurrentOnASilentGpsdReturnsWithinTheTimeout(_ greets: Bool) throws {
        let gpsd = try ScriptedGPSD(greets ? ["poll": [], "stream": [], "greeting": true, "pollSilent": true]
                                           : ["silent": true])
        defer { gpsd.stop() }
        let result = try trigger(gpsd, ["--timeout", "1s"])
        #expect(result.status == 0, "\(result.stderr)")
        let record = try result.json()
        #expect(record["location"] is NSNull)
        let waited = try #require(gpsd.firstSessionSeconds, "the scripted gpsd saw no whole session")
        #expect(waited < 1.1, "waited \(waited) s on gpsd")
        #expect(!gpsd.commands.isEmpty, "geolocate never reached the scripted gpsd")
    }

    /// A u-blox whose raw stream is nothing but sync bytes, as fast as they are read (found by
    /// the hostile pass on issue 42: reading the flood held the gate past --timeout): the fix
    /// is reported within the timeout, as the server saw every connection, with its verdicts
    /// unknown (null, never "all clear"); the flood was still running when geolocate let go.
    @Test func aRawWatchFloodOfSyncBytesDoesNotHoldTheGate() throws {
        let gpsd = try ScriptedGPSD(["poll": [], "stream": [ScriptedGPSD.tpv(time: Self.fixTime)], "driver": "u-blox", "rawFlood": true])
        defer { gpsd.stop() }
        let result = try trigger(gpsd, ["--timeout", "1s", "--now", Self.now])
        #expect(result.status == 0, "\(result.stderr)")
        let record = try result.json()
        let location = try #require(record["location"] as? [String: Any], "\(result.stdout)")
        #expect(location["latitude"] as? String == "53.3613367")
        let signals = try #require(record["signals"] as? [String: Any], "\(record)")
        for key in ["gnssAuthenticated", "receiverSpoofing", "osnmaReplay"] {
            #expect(signals[key] is NSNull, "\(key): \(signals)")
        }
        #expect(gpsd.commands.contains { $0.contains(#""raw":2"#) }, "no raw watch was asked for: \(gpsd.commands)")
        #expect(waitUntil(.seconds(10)) { !gpsd.floodedBytes.isEmpty }, "the flood never ended")
        #expect(gpsd.floodedBytes.allSatisfy { $0 > 0 }, "\(gpsd.floodedBytes)")
        // The timeout and some slack for a loaded machine: read without its bound, the flood
        // held the gate 10 s.
        let held = try #require(gpsd.allSessionsSeconds, "the scripted gpsd saw no whole session")
        #expect(held < 2, "geolocate held gpsd's connections for \(held) s with --timeout 1s")
    }
}

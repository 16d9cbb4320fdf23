import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing
import NMEA

/// Replays every log of the gpsd corpus and compares our fixes with gpsd 3.22's, epoch by
/// epoch, in both directions, for every log on its own:
///
/// - every epoch gpsd reports as a 2D/3D fix is a fix of ours with the same position, mode and
///   altitude (HAE, 0.1 m);
/// - every fix of ours is an epoch gpsd reports as a fix: a fix where gpsd's reference has
///   mode 1, or no TPV at all for that time, is a false fix.
///
/// Per the corpus README: the reference for an epoch is gpsd's last TPV with that `time`;
/// gpsd 3.22 moves pre-2017 dates 1024 weeks later while geolocate keeps a replayed log's own
/// date, so a time of ours matches gpsd's at the same instant or 1024 weeks later. The only
/// exceptions are the `deviations` below, each with its reason; any other difference fails.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ConformanceTests {
    static let weekRolloverShift: Int64 = 619_315_200_000

    /// A known, explained difference from gpsd 3.22 at one epoch of one log.
    struct Deviation {
        enum Kind { case missing, falseFix, mismatch }
        var log: String
        /// gpsd's `time` for `missing`/`mismatch`; ours (the log's own date) for `falseFix`.
        var time: String
        var kind: Kind
        var reason: String
    }

    static let deviations: [Deviation] = [
        Deviation(log: "bt451", time: "2029-07-26T14:33:06.000Z", kind: .missing,
                  reason: "gpsd dates this epoch a day late: the log's segments are joined with the time jumping back "
                      + "from 15:25 to 14:33, which gpsd takes for a midnight; geolocate dates it from its own ZDA"),
        Deviation(log: "bt451", time: "2009-12-09T14:33:06.000Z", kind: .falseFix,
                  reason: "the same epoch under its own date (gpsd reports it a day late, 2029-07-26 after the 1024-week shift)"),
        Deviation(log: "bt451", time: "2009-12-09T15:25:08.500Z", kind: .falseFix,
                  reason: "the last epoch before the segment join, cut short (RMC only): gpsd reports a cycle when the "
                      + "sentence it learned ends one arrives, and none does"),
        Deviation(log: "bt451", time: "2009-12-09T14:33:08.500Z", kind: .falseFix,
                  reason: "the last epoch of the log, cut short after its RMC: gpsd never sees its cycle end"),
        Deviation(log: "isync", time: "2016-02-03T13:15:30.000Z", kind: .falseFix,
                  reason: "the last epoch of the log (RMC and GGA, then GSV and end of file): gpsd never sees its cycle end"),
        Deviation(log: "ublox-lea-5h", time: "2010-08-21T08:37:36.000Z", kind: .falseFix,
                  reason: "the last epoch before the log's two captures are joined (RMC only, then 08:55): gpsd never sees its cycle end"),
        Deviation(log: "gp-320fw-2019-04-06-overflow", time: "2019-04-06T23:57:26.020Z", kind: .falseFix,
                  reason: "gpsd learned GLL as this receiver's cycle end; this epoch (RMC, GGA, GSA, GSV) has no GLL, "
                      + "so gpsd reports 25.020 and then 27.020; its sentences are valid and agree"),
        Deviation(log: "triton400", time: "2013-04-01T03:01:30.000Z", kind: .falseFix,
                  reason: "this epoch's GGA is spliced with the next GLL (wrong checksum); gpsd reports no TPV for it, "
                      + "geolocate reports the epoch's valid GLL"),
        Deviation(log: "eXplorist210", time: "2006-05-20T20:06:21.297Z", kind: .falseFix,
                  reason: "jittery sub-second times: the GLL says .297 where GGA and RMC of the same cycle say .30; "
                      + "gpsd reports the cycle once at 21.300 (matched), geolocate also the GLL alone"),
        Deviation(log: "eXplorist210", time: "2006-05-20T20:06:22.305Z", kind: .falseFix,
                  reason: "jittery sub-second times: the GLL says .305 where GGA and RMC say .31 (see 21.297)"),
        Deviation(log: "sl869", time: "2032-07-11T10:21:43.000Z", kind: .mismatch,
                  reason: "gpsd 2D, geolocate 3D: a GGA with altitude from 3 satellites followed by GNGSA mode 2; "
                      + "letting the later GSA decide breaks 40 other epochs (quectel, ch-4711, iTrek), so gpsd's rule is subtler"),
    ]

    struct Reference {
        var mode: Int
        var latitude: Double
        var longitude: Double
        var altitudeHAE: Double?
        /// gpsd's TPV `status`: 1 (a plain fix) when the TPV has none, as gpsd writes it.
        var status = 1

        /// The fix quality gpsd's status means (gps.h of 3.22: 2 DGPS, 3 RTK fixed, 4 RTK
        /// float, 5 and 6 dead reckoning, 7 time only or manual, 8 simulated, 9 a PPS fix), written
        /// out here, not taken from ours.
        var quality: String {
            switch status {
            case 2: "dgps"
            case 3: "rtk-fixed"
            case 4: "rtk-float"
            case 5, 6: "estimated"
            case 7: "manual"
            case 8: "simulator"
            default: "gps"
            }
        }
    }

    struct LogResult: CustomStringConvertible {
        var name: String
        var matched = 0
        var total = 0
        var fixes = 0
        var falseFixes = 0
        /// Fixes of ours that gpsd reported at the same position without a time.
        var untimed = 0
        var explained = 0
        /// Matched epochs where gpsd reports more than a plain fix (DGPS, RTK, dead reckoning).
        var qualified = 0
        var problems: [String] = []
        var description: String {
            "\(name): \(matched)/\(total) gpsd fix epochs matched, \(falseFixes) false fixes of \(fixes) (\(untimed) matched by an untimed TPV), "
                + "\(qualified) with a status beyond a plain fix, \(explained) listed deviations, \(problems.count) unexplained"
        }
    }

    @Test func everyCorpusLogAgreesWithGpsd() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: TestPaths.corpus.path)
            .filter { $0.hasSuffix(".log") }.sorted()
        try #require(files.count >= 38, "gpsd corpus not found at \(TestPaths.corpus.path)")

        var results: [LogResult] = []
        for file in files {
            results.append(try compare(log: TestPaths.corpus.appendingPathComponent(file)))
        }
        for result in results {
            print("conformance: \(result)")
            for line in result.problems { print("    \(line)") }
        }
        let matched = results.reduce(0) { $0 + $1.matched }
        let total = results.reduce(0) { $0 + $1.total }
        let falseFixes = results.reduce(0) { $0 + $1.falseFixes }
        let explained = results.reduce(0) { $0 + $1.explained }
        print("conformance: corpus \(matched)/\(total) gpsd fix epochs matched, \(falseFixes) false fixes, \(explained) listed deviations")
        // The README's 714 distinct fix times include quectel 02:20:38, whose last TPV is mode 1.
        #expect(total == 713, "713 epochs whose last gpsd TPV is a fix")
        // fixQuality is checked on every matched epoch; these are the ones where gpsd's status is
        // DGPS or RTK (isync, mt3339, nmea-fuzzy-cases, nmea-rtk, skytraq-dgps, ublox-neo-m9n),
        // so a quality that were always `gps` would fail here.
        let qualified = results.reduce(0) { $0 + $1.qualified }
        #expect(qualified == 334, "\(qualified) matched epochs with a DGPS or RTK status")
        for result in results {
            #expect(result.problems.isEmpty, "\(result.name): \(result.problems.joined(separator: "; "))")
        }
        #expect(explained == Self.deviations.count, "a listed deviation no longer occurs: remove it from the table")
    }

    /// Manual input and simulator output, which no corpus log carries with a time: generated
    /// logs with GGA quality 7 or 8 or the RMC mode letter M or S, or an undefined quality and
    /// letter (9 and X, a plain fix for both) (`Fixtures/receiver-words`,
    /// made by its `make-logs.py`), each beside what gpsd 3.22 made of it. gpsd reports every
    /// epoch as a fix, with `status` 7 or 8 from GGA.
    ///
    /// One listed difference: gpsd's TPV has no field for the RMC mode letter, so where GGA
    /// says 1 and the RMC says M or S gpsd reports a plain fix; geolocate takes the letter,
    /// since a receiver that says it simulates or was given its position has not measured it.
    @Test(arguments: [("gga7", nil), ("gga8", nil), ("gga7rmcM", nil), ("gga8rmcS", nil),
                      ("rmcM", "manual"), ("rmcS", "simulator"), ("rmcMonly", "manual"), ("rmcSonly", "simulator"),
                      ("gga9rmcX", "gps")])
    func manualAndSimulatedFixesAgreeWithGpsd(_ name: String, _ qualityWhereGpsdSaysPlain: String?) throws {
        let result = try compare(log: TestPaths.fixture("receiver-words/\(name).log"), qualityWhereGpsdSaysPlain: qualityWhereGpsdSaysPlain)
        #expect(result.total == 6 && result.matched == 6, "\(result)")
        #expect(result.falseFixes == 0 && result.problems.isEmpty, "\(result.problems)")
        #expect(result.qualified == (qualityWhereGpsdSaysPlain == nil ? 6 : 0))
    }

    /// - Parameter qualityWhereGpsdSaysPlain: the quality expected where gpsd's TPV has no
    ///   `status`, when geolocate knows more than gpsd writes.
    func compare(log: URL, qualityWhereGpsdSaysPlain: String? = nil) throws -> LogResult {
        let name = log.deletingPathExtension().lastPathComponent
        var result = LogResult(name: name)
        let (references, untimed) = try loadReference(log.deletingPathExtension().appendingPathExtension("gpsd322.jsonl"))
        let listed = Self.deviations.filter { $0.log == name }
        func deviation(_ kind: Deviation.Kind, _ time: Int64) -> Deviation? {
            listed.first { $0.kind == kind && Self.milliseconds(iso: $0.time) == time }
        }

        let fd = open(log.path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let stream = NMEAEpochStream(fileDescriptor: fd)
        var ours: [Int64: NMEAFix] = [:]
        while let epoch = try stream.next() {
            if let fix = epoch.fix { ours[fix.timestamp] = fix }
        }
        result.fixes = ours.count

        // Every gpsd fix epoch is one of ours, and agrees.
        for (time, reference) in references.sorted(by: { $0.key < $1.key }) where reference.mode >= 2 {
            result.total += 1
            guard let fix = ours[time] ?? ours[time - Self.weekRolloverShift] else {
                if deviation(.missing, time) != nil { result.explained += 1 } else {
                    result.problems.append("\(Self.iso(time)): gpsd has a \(reference.mode)D fix, geolocate none")
                }
                continue
            }
            var problems: [String] = []
            if abs(fix.latitude - reference.latitude) > 1e-6 || abs(fix.longitude - reference.longitude) > 1e-6 {
                problems.append("position \(fix.latitude),\(fix.longitude) vs \(reference.latitude),\(reference.longitude)")
            }
            if (fix.mode == .threeD ? 3 : 2) != reference.mode {
                problems.append("mode \(fix.mode.rawValue) vs \(reference.mode)D")
            }
            let expected = reference.status == 1 ? qualityWhereGpsdSaysPlain ?? reference.quality : reference.quality
            if fix.quality?.rawValue != expected {
                problems.append("fixQuality \(fix.quality?.rawValue ?? "none") vs status \(reference.status) (\(expected))")
            }
            if reference.status != 1 { result.qualified += 1 }
            if let hae = reference.altitudeHAE {
                if let ours = fix.altitudeHAE {
                    if abs(ours - hae) > 0.1 { problems.append("altHAE \(ours) vs \(hae)") }
                } else {
                    problems.append("no altHAE vs \(hae)")
                }
            }
            if problems.isEmpty {
                result.matched += 1
            } else if deviation(.mismatch, time) != nil {
                result.explained += 1
            } else {
                result.problems.append("\(Self.iso(time)): " + problems.joined(separator: "; "))
            }
        }

        // Every fix of ours is a gpsd fix epoch.
        for (time, fix) in ours.sorted(by: { $0.key < $1.key }) {
            let reference = references[time] ?? references[time + Self.weekRolloverShift]
            guard (reference?.mode ?? 0) < 2 else { continue }
            // gpsd reported this epoch as a fix but without a time: its date came later in the
            // epoch (RMC/ZDA after GGA), so only the position can be compared.
            if untimed.contains(where: { abs($0.latitude - fix.latitude) <= 1e-6 && abs($0.longitude - fix.longitude) <= 1e-6 }) {
                result.untimed += 1
                continue
            }
            result.falseFixes += 1
            if deviation(.falseFix, time) != nil { result.explained += 1; continue }
            let said = reference.map { "mode \($0.mode)" } ?? "no TPV"
            result.problems.append("\(Self.iso(time)): geolocate has a \(fix.mode.rawValue) fix, gpsd \(said)")
        }
        return result
    }

    /// gpsd's last TPV per `time`, keyed by milliseconds since 1970, and its fixes without a time.
    func loadReference(_ url: URL) throws -> ([Int64: Reference], [Reference]) {
        let text = try String(contentsOf: url, encoding: .utf8)
        var references: [Int64: Reference] = [:]
        var untimed: [Reference] = []
        struct TPV: Decodable {
            var mode: Int?
            var time: String?
            var lat: Double?
            var lon: Double?
            var altHAE: Double?
            var status: Int?
        }
        for line in text.split(whereSeparator: \.isNewline) {
            let tpv = try JSONDecoder().decode(TPV.self, from: Data(line.utf8))
            let reference = Reference(mode: tpv.mode ?? 0, latitude: tpv.lat ?? .nan,
                                      longitude: tpv.lon ?? .nan, altitudeHAE: tpv.altHAE, status: tpv.status ?? 1)
            guard let time = tpv.time, let ms = Self.milliseconds(iso: time) else {
                if reference.mode >= 2 { untimed.append(reference) }
                continue
            }
            references[ms] = reference
        }
        return (references, untimed)
    }

    /// `2034-08-16T03:07:19.000Z` → milliseconds since 1970.
    static func milliseconds(iso: String) -> Int64? {
        let parts = iso.split(whereSeparator: { "-T:Z".contains($0) })
        guard parts.count == 6, let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              let hour = Int(parts[3]), let minute = Int(parts[4]), let seconds = Double(parts[5]) else { return nil }
        let days = Int64(CivilDate(year: year, month: month, day: day).daysSinceEpoch)
        return days * 86_400_000 + Int64(hour * 3_600_000 + minute * 60_000) + Int64((seconds * 1000).rounded())
    }

    /// Milliseconds since 1970 → `2034-08-16T03:07:19.000Z`.
    static func iso(_ milliseconds: Int64) -> String {
        let days = Int(milliseconds.quotientAndRemainder(dividingBy: 86_400_000).quotient)
        let date = CivilDate(daysSinceEpoch: milliseconds < 0 ? days - 1 : days)
        let ms = Int(milliseconds - Int64(date.daysSinceEpoch) * 86_400_000)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", date.year, date.month, date.day,
                      ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000)
    }
}

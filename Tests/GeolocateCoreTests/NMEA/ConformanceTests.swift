import Foundation
import GeolocateCore
import Testing

/// Replays every log of the gpsd corpus and compares our fixes with gpsd 3.22's, epoch by epoch.
///
/// Per the corpus README: the reference for an epoch is gpsd's last TPV with that `time`;
/// gpsd 3.22 moves pre-2017 dates 1024 weeks later, while geolocate keeps a replayed log's
/// own date, so times are compared modulo that shift.
@Suite struct ConformanceTests {
    static let weekRolloverShift: Int64 = 619_315_200_000

    struct Reference {
        var mode: Int
        var latitude: Double
        var longitude: Double
        var altitudeHAE: Double?
    }

    struct LogResult: CustomStringConvertible {
        var name: String
        var matched = 0
        var total = 0
        var mismatches: [String] = []
        var rate: Double { total == 0 ? 1 : Double(matched) / Double(total) }
        var description: String {
            "\(name): \(matched)/\(total) gpsd fix epochs matched (\(String(format: "%.1f", rate * 100)) %)"
        }
    }

    @Test func everyCorpusLogAgreesWithGpsd() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: TestPaths.corpus.path)
            .filter { $0.hasSuffix(".log") }.sorted()
        try #require(files.count >= 30, "gpsd corpus not found at \(TestPaths.corpus.path)")

        var results: [LogResult] = []
        for file in files {
            results.append(try compare(log: TestPaths.corpus.appendingPathComponent(file)))
        }
        for result in results {
            print("conformance: \(result)")
            for line in result.mismatches.prefix(3) { print("    \(line)") }
        }
        let matched = results.reduce(0) { $0 + $1.matched }
        let total = results.reduce(0) { $0 + $1.total }
        let rate = Double(matched) / Double(total)
        let below = results.filter { $0.rate < 0.95 }.map(\.name)
        print("conformance: corpus \(matched)/\(total) (\(String(format: "%.2f", rate * 100)) %); below 95 %: \(below.isEmpty ? "none" : below.joined(separator: ", "))")
        #expect(total >= 700, "expected the corpus's ~714 fix epochs, found \(total)")
        #expect(rate >= 0.95, "corpus match rate \(rate); logs below 95 %: \(below.joined(separator: ", "))")
    }

    func compare(log: URL) throws -> LogResult {
        let name = log.deletingPathExtension().lastPathComponent
        var result = LogResult(name: name)
        let references = try loadReference(log.deletingPathExtension().appendingPathExtension("gpsd322.jsonl"))

        let fd = open(log.path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let stream = NMEAEpochStream(fileDescriptor: fd)
        var ours: [Int64: Fix] = [:]
        while let epoch = try stream.next() {
            if let fix = epoch.fix { ours[fix.timestamp] = fix }
        }

        for (time, reference) in references.sorted(by: { $0.key < $1.key }) where reference.mode >= 2 {
            result.total += 1
            guard let fix = ours[time] ?? ours[time - Self.weekRolloverShift] else {
                result.mismatches.append("\(time): no fix from geolocate")
                continue
            }
            var problems: [String] = []
            if abs(fix.latitude - reference.latitude) > 1e-6 || abs(fix.longitude - reference.longitude) > 1e-6 {
                problems.append("position \(fix.latitude),\(fix.longitude) vs \(reference.latitude),\(reference.longitude)")
            }
            if (fix.mode == .threeD ? 3 : 2) != reference.mode {
                problems.append("mode \(fix.mode.rawValue) vs \(reference.mode)")
            }
            if let hae = reference.altitudeHAE {
                if let ours = fix.altitudeHAE {
                    if abs(ours - hae) > 0.1 { problems.append("altHAE \(ours) vs \(hae)") }
                } else {
                    problems.append("no altHAE vs \(hae)")
                }
            }
            if problems.isEmpty { result.matched += 1 } else { result.mismatches.append("\(time): " + problems.joined(separator: "; ")) }
        }
        return result
    }

    /// gpsd's last TPV per `time`, keyed by milliseconds since 1970.
    func loadReference(_ url: URL) throws -> [Int64: Reference] {
        let text = try String(contentsOf: url, encoding: .utf8)
        var references: [Int64: Reference] = [:]
        struct TPV: Decodable {
            var mode: Int?
            var time: String?
            var lat: Double?
            var lon: Double?
            var altHAE: Double?
        }
        for line in text.split(whereSeparator: \.isNewline) {
            let tpv = try JSONDecoder().decode(TPV.self, from: Data(line.utf8))
            guard let time = tpv.time, let ms = Self.milliseconds(iso: time) else { continue }
            references[ms] = Reference(mode: tpv.mode ?? 0, latitude: tpv.lat ?? .nan,
                                       longitude: tpv.lon ?? .nan, altitudeHAE: tpv.altHAE)
        }
        return references
    }

    /// `2034-08-16T03:07:19.000Z` → milliseconds since 1970.
    static func milliseconds(iso: String) -> Int64? {
        let parts = iso.split(whereSeparator: { "-T:Z".contains($0) })
        guard parts.count == 6, let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
              let hour = Int(parts[3]), let minute = Int(parts[4]), let seconds = Double(parts[5]) else { return nil }
        let days = Int64(CivilDate(year: year, month: month, day: day).daysSinceEpoch)
        return days * 86_400_000 + Int64(hour * 3_600_000 + minute * 60_000) + Int64((seconds * 1000).rounded())
    }
}

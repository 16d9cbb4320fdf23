import Foundation
import GeolocateCore
import Testing

/// A long, deliberately broken stream from `../shared/tools/nmea-gen.py`, checked against the
/// generator's own truth file: every clean epoch's fix must come out exactly, no-fix tunnels
/// must give no fix, and the broken lines must be counted, never fatal.
@Suite struct GeneratedStreamTests {
    struct Truth: Decodable {
        var time: String
        var lat: Double
        var lon: Double
        var fix: Int
        var corrupted: Bool
    }

    @Test(arguments: ["GP", "GN"])
    func noisyStreamAgainstTruth(_ talker: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gen-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("noisy.nmea").path
        let truthPath = directory.appendingPathComponent("truth.jsonl").path
        let generator = Process()
        generator.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        generator.arguments = ["python3", TestPaths.corpus.appendingPathComponent("../../tools/nmea-gen.py").standardized.path,
                               "--epochs", "3000", "--seed", "5", "--talker", talker, "--extra", "GLL,ZDA",
                               "--bad-fraction", "0.03", "--quiet", "--truth", truthPath, "--out", log]
        try generator.run()
        generator.waitUntilExit()
        try #require(generator.terminationStatus == 0, "nmea-gen.py failed")

        let fd = open(log, O_RDONLY)
        defer { close(fd) }
        let stream = NMEAEpochStream(fileDescriptor: fd)
        var fixes: [Int64: Fix] = [:]
        while let epoch = try stream.next() {
            if let fix = epoch.fix { fixes[fix.timestamp] = fix }
        }
        #expect(stream.statistics.skipped > 100)

        var clean = 0, matched = 0, tunnels = 0, tunnelFixes = 0
        for line in try String(contentsOfFile: truthPath, encoding: .utf8).split(whereSeparator: \.isNewline) {
            let truth = try JSONDecoder().decode(Truth.self, from: Data(line.utf8))
            let time = try #require(Self.milliseconds(truth.time))
            if truth.fix == 0 {
                tunnels += 1
                if fixes[time] != nil { tunnelFixes += 1 }
            } else if !truth.corrupted {
                clean += 1
                if let fix = fixes[time], abs(fix.latitude - truth.lat) < 1e-8, abs(fix.longitude - truth.lon) < 1e-8 {
                    matched += 1
                }
            }
        }
        #expect(clean > 1000)
        #expect(matched == clean, "\(clean - matched) clean epochs without the exact fix")
        #expect(tunnels > 0)
        #expect(tunnelFixes == 0)
    }

    static func milliseconds(_ iso: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let date = formatter.date(from: iso) ?? ISO8601DateFormatter().date(from: iso)
        return date.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
    }
}

import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing
import NMEA

/// A long, deliberately broken stream from `../shared/tools/nmea-gen.py`, checked against the
/// generator's own truth file: every clean epoch's fix must come out exactly, no-fix tunnels
/// must give no fix, and the broken lines must be counted, never fatal.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct GeneratedStreamTests {
    @Test(arguments: ["GP", "GN"])
    func noisyStreamAgainstTruth(_ talker: String) throws {
        let generated = try NMEAGenerator(["--epochs", "3000", "--seed", "5", "--talker", talker, "--extra", "GLL,ZDA",
                                           "--bad-fraction", "0.03"])
        defer { generated.remove() }

        let fd = open(generated.log, O_RDONLY)
        defer { close(fd) }
        let stream = NMEAEpochStream(fileDescriptor: fd)
        var fixes: [Int64: NMEAFix] = [:]
        while let epoch = try stream.next() {
            if let fix = epoch.fix { fixes[fix.timestamp] = fix }
        }
        #expect(stream.statistics.skipped > 100)

        var clean = 0, matched = 0, tunnels = 0, tunnelFixes = 0
        for truth in try generated.truth() {
            let time = try #require(truth.milliseconds)
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

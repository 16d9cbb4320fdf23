import Foundation
import NMEA
import Testing

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct NMEAReaderTests {
    static let gga = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47"

    @Test func acceptsAValidSentence() throws {
        let result = try NMEATestInput.read(Self.gga + "\r\n")
        #expect(result.statistics.accepted == 1)
        #expect(result.statistics.skipped == 0)
        #expect(result.sentences.count == 1)
    }

    /// Broken lines, each skipped and counted once, never fatal; the valid line after each still reads.
    @Test(arguments: [
        ("bad checksum", "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48"),
        ("truncated, checksum lost", "$GPGGA,123519,4807.038,N,0113"),
        ("checksum cut to one digit", "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*4"),
        ("binary garbage", "$GPGGA,1235\u{01}\u{02}19,4807.038*47"),
        ("address only", "$GPG*00"),
        ("no dollar at all", "garbage line without a sentence"),
        // Real receivers (gpsd corpus): gp-320fw cold boot with NUL bytes, com-1289's corrupted GSV.
        ("NUL bytes", "$GPRMC,000346.03,A,4808\u{00}\u{00}\u{00}\u{00}   "),
        ("corrupted GSV", "$GPGSV,3,3,10,29,09,301,24,16,09,020,,*7C"),
    ])
    func skipsBrokenLine(_ label: String, _ line: String) throws {
        let result = try NMEATestInput.read(Self.gga + "\r\n" + line + "\r\n" + Self.gga + "\r\n")
        #expect(result.statistics.accepted == 2, "\(label)")
        #expect(result.statistics.skipped == 1, "\(label)")
    }

    @Test func skipsInvalidUTF8() throws {
        var bytes = Array((Self.gga + "\r\n").utf8)
        bytes += Array("$GPGGA,123519,48".utf8) + [0xC3, 0x28, 0xFF] + Array("*47\r\n".utf8)
        bytes += Array((Self.gga + "\r\n").utf8)
        let result = try NMEATestInput.read(bytes)
        #expect(result.statistics.accepted == 2)
        #expect(result.statistics.skipped == 1)
    }

    @Test func skipsOverlongLineEvenWithAValidChecksum() throws {
        let long = NMEATestInput.sentence("GPGGA,123519" + String(repeating: ",1", count: 600))
        #expect(long.utf8.count > 1024)
        let result = try NMEATestInput.read(Self.gga + "\n" + long + "\n" + Self.gga + "\n")
        #expect(result.statistics.accepted == 2)
        #expect(result.statistics.skipped == 1)
    }

    @Test func skipsAVeryLongLineSpanningReadBlocks() throws {
        let junk = String(repeating: "x", count: 20_000)
        let result = try NMEATestInput.read(Self.gga + "\n" + junk + "\n" + Self.gga + "\n")
        #expect(result.statistics.accepted == 2)
        #expect(result.statistics.skipped == 1)
    }

    /// SPEC §2: a run without a newline ends at the first `$` past the limit, so a sentence
    /// glued to the end of garbage is read, whether the run spans read blocks or not.
    @Test(arguments: [2_000, 3_000_000]) func aSentenceGluedToTheEndOfALongRunIsRead(_ junkLength: Int) throws {
        let junk = String(repeating: "x", count: junkLength)
        let result = try NMEATestInput.read(Self.gga + "\n" + junk + Self.gga + "\n" + Self.gga + "\n")
        #expect(result.statistics.accepted == 3)
        #expect(result.statistics.tooLong == 1)
    }

    /// triton400 in the gpsd corpus: an unterminated GGA spliced with the next GLL.
    @Test func splicedLineKeepsTheSecondSentence() throws {
        let line = "$GPGGA,030130$GPGLL,2638.1728,N,08011.3893,W,030131.000,A,A*41"
        let result = try NMEATestInput.read(line + "\r\n")
        #expect(result.statistics.accepted == 1)
        #expect(result.statistics.skipped == 1)
        guard case .gll(let time, let valid, let latitude, _, _)? = result.sentences.first else {
            Issue.record("expected the GLL, got \(result.sentences)")
            return
        }
        #expect(time == 10_891_000)
        #expect(valid)
        #expect(abs((latitude ?? 0) - 26.63621333) < 1e-8)
    }

    /// gp-320fw cold boot: two complete sentences on one line are both read.
    @Test func twoSentencesOnOneLine() throws {
        let line = "$GPGSA,A,1,,,,,,,,,,,,,,,*1E$GPRMC,235949.00,V,0000.0000,N,00000.0000,E,,,161206,,,N*44"
        let result = try NMEATestInput.read(line + "\r\n")
        #expect(result.statistics.accepted == 2)
        #expect(result.statistics.skipped == 0)
    }

    /// hp58534a: a receiver that never sends checksums is accepted, as gpsd does.
    @Test func acceptsStreamsWithoutChecksums() throws {
        let result = try NMEATestInput.read("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,\r\n$GPZDA,123519,04,03,2010,00,00\r\n")
        #expect(result.statistics.accepted == 2)
        #expect(result.sentences.count == 2)
    }

    @Test func readsTheLastLineWithoutNewline() throws {
        let result = try NMEATestInput.read(Self.gga)
        #expect(result.statistics.accepted == 1)
    }

    @Test func commentsAndBlankLinesAreNeitherAcceptedNorSkipped() throws {
        let result = try NMEATestInput.read("# header\r\n\r\n" + Self.gga + "\r\n")
        #expect(result.statistics.accepted == 1)
        #expect(result.statistics.skipped == 0)
    }
}

import Foundation
import NMEA
import Testing

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct NMEASentenceTests {
    func parse(_ line: String) throws -> NMEASentence? {
        try NMEATestInput.read(line + "\r\n").sentences.first
    }

    @Test func gga() throws {
        let sentence = try parse("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47")
        guard case let .gga(time, latitude, longitude, quality, satellites, hdop, altitude, separation)? = sentence else {
            Issue.record("not a GGA: \(String(describing: sentence))")
            return
        }
        #expect(time == 45_319_000)
        #expect(abs(latitude! - 48.1173) < 1e-9)
        #expect(abs(longitude! - 11.516666667) < 1e-8)
        #expect(quality == 1)
        #expect(satellites == 8)
        #expect(hdop == 0.9)
        #expect(altitude == 545.4)
        #expect(separation == 46.9)
    }

    /// Found by `make fuzz`: a ZDA year of 28 digits overflowed the day arithmetic (a trap).
    @Test func aZDAYearBeyondFourDigitsIsNoDate() throws {
        let sentence = try parse(NMEATestInput.sentence("GPZDA,193922.00,07,09,3333333333333333333333332018,00,00"))
        #expect(sentence == .zda(time: 70_762_000, date: nil))
        let epochs = try NMEATestInput.epochs(NMEATestInput.sentence("GPZDA,193922.00,07,09,3333333333333333333333332018,00,00") + "\r\n"
            + NMEATestInput.sentence("GPZDA,193923.00,07,09,2018,00,00") + "\r\n")
        #expect(epochs.count == 2)
    }

    @Test func rmcSouthWestWithDate() throws {
        let sentence = try parse(NMEATestInput.sentence("GNRMC,030719.250,A,3747.0873,S,17518.8938,W,0.69,181.39,311214,,,A"))
        guard case let .rmc(time, valid, latitude, longitude, speed, course, date, mode)? = sentence else {
            Issue.record("not an RMC")
            return
        }
        #expect(time == 11_239_250)
        #expect(valid)
        #expect(abs(latitude! + 37.784788333) < 1e-8)
        #expect(abs(longitude! + 175.31489667) < 1e-8)
        #expect(speed == 0.69)
        #expect(course == 181.39)
        #expect(date == CivilDate(year: 2014, month: 12, day: 31))
        #expect(mode == UInt8(ascii: "A"))
    }

    /// Eight-decimal minutes (nmea-rtk) keep their precision through integer arithmetic.
    @Test func highPrecisionCoordinates() throws {
        let sentence = try parse(NMEATestInput.sentence("GPGGA,000000.00,4807.03812345,N,01131.00000001,E,4,12,0.5,545.4,M,46.9,M,,"))
        guard case let .gga(_, latitude, longitude, _, _, _, _, _)? = sentence else {
            Issue.record("not a GGA")
            return
        }
        #expect(abs(latitude! - (48 + 7.03812345 / 60)) < 1e-12)
        #expect(abs(longitude! - (11 + 31.00000001 / 60)) < 1e-12)
    }

    @Test(arguments: ["GP", "GN", "GL", "GA", "GB", "BD", "GQ", "QZ"])
    func anyTalker(_ talker: String) throws {
        let sentence = try parse(NMEATestInput.sentence("\(talker)GSA,A,3,01,02,03,04,,,,,,,,,1.8,1.1,1.5"))
        guard case let .gsa(fixType, pdop, hdop, vdop, used)? = sentence else {
            Issue.record("not a GSA")
            return
        }
        #expect(fixType == 3 && pdop == 1.8 && hdop == 1.1 && vdop == 1.5)
        #expect(used.count == 4 && (0..<4).map { used.prn(at: $0) } == [1, 2, 3, 4])
    }

    @Test func otherSentenceTypes() throws {
        var expectedGSV = SatellitesInView(system: 1, messageCount: 3, messageNumber: 1)
        for prn: UInt16 in [3, 4, 6, 13] { expectedGSV.append(prn: prn, cn0: 0) }
        #expect(try parse(NMEATestInput.sentence("GPGST,172814.0,0.006,0.023,0.020,273.6,0.023,0.020,0.031"))
            == .gst(time: 62_894_000, sigmaLatitude: 0.023, sigmaLongitude: 0.020, sigmaAltitude: 0.031))
        #expect(try parse(NMEATestInput.sentence("GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A"))
            == .vtg(course: 54.7, speedKnots: 5.5, faaMode: UInt8(ascii: "A")))
        #expect(try parse(NMEATestInput.sentence("GPZDA,201530.00,04,07,2002,00,00"))
            == .zda(time: 72_930_000, date: CivilDate(year: 2002, month: 7, day: 4)))
        #expect(try parse(NMEATestInput.sentence("GPGSV,3,1,11,03,03,111,00,04,15,270,00,06,01,010,00,13,06,292,00"))
            == .gsv(expectedGSV))
        guard case let .gll(time, valid, _, _, _)? = try parse(NMEATestInput.sentence("GPGLL,4916.45,N,12311.12,W,225444,A,")) else {
            Issue.record("not a GLL")
            return
        }
        #expect(time == 82_484_000)
        #expect(valid)
    }

    /// Valid framing, bad content: fields become nil, the sentence is still decoded.
    @Test(arguments: [
        "GPRMC,000231.099,A,4829.0005,N,00022.0015,E,0.15,212.28,2208-1,,,A",  // april6_2019's malformed date
        "GPRMC,235949.00,V,8960.000000,N,00000.0000,E,,,050180,,,N",         // mtk-3301's 89°60′
        "GPRMC,99ab00,A,4829.0005,N,00022.0015,E,0.15,212.28,310299,,,A",      // bad time, 31 February
    ])
    func malformedFieldsAreNil(_ body: String) throws {
        guard case let .rmc(time, _, latitude, _, _, _, date, _)? = try parse(NMEATestInput.sentence(body)) else {
            Issue.record("not decoded: \(body)")
            return
        }
        #expect(time == nil || latitude == nil || date == nil)
    }

    @Test func unknownAndProprietaryTypesAreIgnored() throws {
        let result = try NMEATestInput.read(
            NMEATestInput.sentence("PSRFE,1,2,3") + "\r\n" + NMEATestInput.sentence("GPRMB,A,0.66,L,003,004") + "\r\n")
        #expect(result.statistics.accepted == 2)
        #expect(result.sentences.isEmpty)
    }
}

import Foundation
import NMEA
import Testing

/// Satellites behind a fix from GSV and GSA (SPEC §10.1 `satellites`).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct SkyViewTests {
    func log(_ bodies: [String]) -> String {
        bodies.map { NMEATestInput.sentence($0) + "\r\n" }.joined()
    }

    /// Population standard deviation, written out as the textbook has it.
    func spread(_ values: [Double]) -> Double {
        let mean = values.reduce(0, +) / Double(values.count)
        return (values.map { pow($0 - mean, 2) }.reduce(0, +) / Double(values.count)).squareRoot()
    }

    @Test func usedSatellitesOfTheLastCycle() throws {
        let epochs = try NMEATestInput.epochs(log([
            "GPGGA,030719.000,3747.0873,S,17518.8938,E,1,05,1.1,59.9,M,23.7,M,,0000",
            "GPGSA,A,3,01,02,03,04,05,,,,,,,,1.8,1.1,1.5",
            "GPGSV,2,1,06,01,40,083,40,02,17,308,42,03,07,344,44,04,22,228,46",
            "GPGSV,2,2,06,05,40,083,48,06,17,308,20",
            "GPRMC,030719.000,A,3747.0873,S,17518.8938,E,1.00,181.39,311214,,,A",
        ]))
        let satellites = try #require(epochs.first?.fix?.satellites)
        #expect(satellites.used == 5)
        #expect(satellites.measured == 5)  // satellite 6 (20 dB-Hz) is in view, not used
        #expect(abs(satellites.cn0Mean! - 44) < 1e-9)
        #expect(abs(satellites.cn0StdDev! - spread([40, 42, 44, 46, 48])) < 1e-9)
    }

    @Test func withoutGSATheSatellitesInViewCount() throws {
        // NMEA 4.1: a signal ID follows the last satellite; it is not a fifth one.
        let epochs = try NMEATestInput.epochs(log([
            "GNGGA,030719.000,3747.0873,S,17518.8938,E,1,07,1.1,59.9,M,23.7,M,,0000",
            "GPGSV,1,1,03,01,40,083,30,02,17,308,,03,07,344,36,1",
            "GLGSV,1,1,01,65,40,083,33,1",
            "GNRMC,030719.000,A,3747.0873,S,17518.8938,E,1.00,181.39,311214,,,A",
        ]))
        let satellites = try #require(epochs.first?.fix?.satellites)
        #expect(satellites.used == 7)  // GGA's count
        #expect(satellites.measured == 3)
        #expect(abs(satellites.cn0Mean! - 33) < 1e-9)
        #expect(abs(satellites.cn0StdDev! - spread([30, 36, 33])) < 1e-9)
    }

    @Test func systemsKeepTheirPRNsApart() throws {
        // GPS 5 is used; Galileo 5, as weak as a satellite gets, is only in view.
        let epochs = try NMEATestInput.epochs(log([
            "GNGGA,030719.000,3747.0873,S,17518.8938,E,1,05,1.1,59.9,M,23.7,M,,0000",
            "GNGSA,A,3,01,02,03,04,05,,,,,,,,1.8,1.1,1.5,1",
            "GPGSV,2,1,05,01,40,083,40,02,17,308,40,03,07,344,40,04,22,228,40",
            "GPGSV,2,2,05,05,40,083,40",
            "GAGSV,1,1,01,05,40,083,11,7",
            "GNRMC,030719.000,A,3747.0873,S,17518.8938,E,1.00,181.39,311214,,,A",
        ]))
        let satellites = try #require(epochs.first?.fix?.satellites)
        #expect(satellites.measured == 5 && satellites.cn0Mean == 40 && satellites.cn0StdDev == 0)
    }

    @Test func anInterruptedCycleIsNotUsed() throws {
        let epochs = try NMEATestInput.epochs(log([
            "GPGGA,030719.000,3747.0873,S,17518.8938,E,1,05,1.1,59.9,M,23.7,M,,0000",
            "GPGSV,3,1,09,01,40,083,40,02,17,308,42,03,07,344,44,04,22,228,46",
            "GPGSV,3,3,09,09,40,083,48",
            "GPRMC,030719.000,A,3747.0873,S,17518.8938,E,1.00,181.39,311214,,,A",
        ]))
        let satellites = try #require(epochs.first?.fix?.satellites)
        #expect(satellites.used == 5 && satellites.measured == 0 && satellites.cn0Mean == nil)
    }

    @Test func noSatelliteDataIsNil() throws {
        let epochs = try NMEATestInput.epochs(log([
            "GPRMC,030719.000,A,3747.0873,S,17518.8938,E,1.00,181.39,311214,,,A",
        ]))
        #expect(epochs.first?.fix != nil)
        #expect(epochs.first?.fix?.satellites == nil)
    }
}

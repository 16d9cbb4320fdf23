import Foundation
import NMEA
import Testing

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct EpochAssemblerTests {
    func log(_ bodies: [String]) -> String {
        bodies.map { NMEATestInput.sentence($0) + "\r\n" }.joined()
    }

    @Test func assemblesOneEpochFromItsSentences() throws {
        let epochs = try NMEATestInput.epochs(log([
            "GPGGA,030719.000,3747.0873,S,17518.8938,E,1,08,1.1,59.9,M,23.7,M,,0000",
            "GPGSA,A,3,17,28,06,01,30,20,26,13,,,,,1.8,1.1,1.5",
            "GPGST,030719.000,1.2,3.0,2.0,45.0,2.0,3.0,4.0",
            "GPRMC,030719.000,A,3747.0873,S,17518.8938,E,1.00,181.39,311214,,,A",
        ]))
        try #require(epochs.count == 1)
        let fix = try #require(epochs[0].fix)
        #expect(fix.timestamp == 1_419_995_239_000)  // 2014-12-31T03:07:19Z, the log's own date
        #expect(fix.mode == .threeD)
        #expect(abs(fix.altitudeHAE! - 83.6) < 1e-9)  // 59.9 MSL + 23.7 geoid separation
        #expect(abs(fix.speed! - 0.514444) < 1e-6)
        #expect(fix.course == 181.39)
        // GST sigmas 2 and 3 m: r68 = 1.5096 × √((4 + 9) / 2)
        #expect(abs(fix.horizontalAccuracy! - 1.5096 * (6.5).squareRoot()) < 1e-9)
        #expect(fix.verticalAccuracy == 4.0)
    }

    @Test func accuracyFromHDOPWithoutGST() throws {
        let epochs = try NMEATestInput.epochs(log([
            "GPGGA,030719.000,3747.0873,S,17518.8938,E,1,08,2.0,59.9,M,23.7,M,,0000",
            "GPRMC,030719.000,A,3747.0873,S,17518.8938,E,0.0,0.0,311214,,,A",
        ]))
        let fix = try #require(epochs.first?.fix)
        #expect(abs(fix.horizontalAccuracy! - 1.5096 * 2.0 * 5.0 / 2.0.squareRoot()) < 1e-9)
    }

    @Test func emptyGeoidSeparationUsesGpsdsGrid() throws {
        // eXplorist210 in the gpsd corpus: MSL 0.0, no separation; gpsd reports altHAE 43.0534.
        let epochs = try NMEATestInput.epochs(log([
            "GPGGA,200619.300,5313.2228,N,00634.4228,E,1,05,2.6,0.0,M,,M,,",
            "GPRMC,200619.300,A,5313.2228,N,00634.4228,E,0.0,0.0,200506,,",
        ]))
        let fix = try #require(epochs.first?.fix)
        #expect(abs(fix.altitudeHAE! - 43.0534) < 0.01)
    }

    @Test(arguments: [
        ("GGA quality 0", ["GPGGA,120000,4807.038,N,01131.000,E,0,00,99.9,,M,,M,,", "GPRMC,120000,V,,,,,,,221126,,,N"]),
        ("RMC status V", ["GPRMC,120000,V,4807.038,N,01131.000,E,,,221126,,,N"]),
        ("GSA mode 1 overrides RMC A", ["GPRMC,120000,A,4807.038,N,01131.000,E,0,0,221126,,,A", "GPGSA,A,1,,,,,,,,,,,,,99.9,99.9,99.9"]),
        ("GGA simulator quality 8, then RMC status V", ["GPGGA,120000,4807.038,N,01131.000,E,8,05,1.0,545.4,M,46.9,M,,", "GPRMC,120000,V,4807.038,N,01131.000,E,0,0,221126,,,S"]),
    ])
    func noFix(_ label: String, _ bodies: [String]) throws {
        let epochs = try NMEATestInput.epochs(log(bodies))
        #expect(epochs.count == 1, "\(label)")
        #expect(epochs.first?.fix == nil, "\(label)")
        #expect(epochs.first?.timestamp == 1_795_348_800_000, "\(label)")  // the clock still runs
    }

    /// The receiver's word on its fix: the most precise measured kind, unless any sentence of
    /// the epoch says it did not measure it (simulator, then manual, then dead reckoning); a
    /// GNS is estimated or manual only when no system measured, but a simulator in any system
    /// taints it.
    @Test(arguments: [
        ("plain GGA and RMC", "1", "A", nil, "gps"),
        ("DGPS from GGA", "2", "D", nil, "dgps"),
        ("RTK float from GGA over an A letter", "5", "A", nil, "rtk-float"),
        ("GGA dead reckoning", "6", "A", nil, "estimated"),
        ("GGA manual", "7", "M", nil, "manual"),
        ("GGA simulator", "8", "A", nil, "simulator"),
        ("RMC simulator letter over GGA 1", "1", "S", nil, "simulator"),
        ("RMC manual letter over GGA 2", "2", "M", nil, "manual"),
        ("GNS: one simulated system", nil, "A", "AS", "simulator"),
        ("GNS: one estimated system beside a measured one", nil, "A", "AE", "gps"),
        ("GNS: every system estimated", nil, "E", "EE", "estimated"),
        ("GNS: manual outweighs estimated", nil, "E", "EM", "manual"),
        ("GNS: one RTK system", nil, "A", "AR", "rtk-fixed"),
    ] as [(String, String?, String, String?, String)])
    func qualityIsTheReceiversWeightiestWord(_ label: String, _ gga: String?, _ letter: String, _ gns: String?, _ expected: String) throws {
        var bodies: [String] = []
        if let gga { bodies.append("GPGGA,120000,4807.038,N,01131.000,E,\(gga),08,1.0,545.4,M,46.9,M,,") }
        bodies.append("GPRMC,120000,A,4807.038,N,01131.000,E,0,0,221126,,,\(letter)")
        if let gns { bodies.append("GNGNS,120000,4807.038,N,01131.000,E,\(gns),08,1.0,545.4,46.9,,") }
        let fix = try #require(try NMEATestInput.epochs(log(bodies)).first?.fix, "\(label)")
        #expect(fix.quality?.rawValue == expected, "\(label)")
    }

    @Test func twoDimensionalWithoutAltitude() throws {
        let epochs = try NMEATestInput.epochs(log([
            "GPGGA,120000,4807.038,N,01131.000,E,1,03,2.0,,M,,M,,",
            "GPGSA,A,2,01,02,03,,,,,,,,,,2.5,2.0,1.5",
            "GPRMC,120000,A,4807.038,N,01131.000,E,0,0,221126,,,A",
        ]))
        let fix = try #require(epochs.first?.fix)
        #expect(fix.mode == .twoD)
        #expect(fix.altitudeHAE == nil)
    }

    @Test func dateCarriesOverMidnight() throws {
        let epochs = try NMEATestInput.epochs(log([
            "GPRMC,235959,A,4807.038,N,01131.000,E,0,0,311226,,,A",
            "GPGGA,000000,4807.038,N,01131.000,E,1,08,1.0,545.4,M,46.9,M,,",
        ]))
        try #require(epochs.count == 2)
        #expect(epochs[1].fix?.timestamp == Int64(CivilDate(year: 2027, month: 1, day: 1).daysSinceEpoch) * 86_400_000)
    }

    @Test func positionWithoutAnyDateIsUndated() throws {
        let epochs = try NMEATestInput.epochs(log(["GPGGA,120000,4807.038,N,01131.000,E,1,08,1.0,545.4,M,46.9,M,,"]))
        #expect(epochs.first?.fix == nil)
        #expect(epochs.first?.undated == true)
    }

    @Test func civilDateRoundTrips() {
        for days in [-1, 0, 1, 10_957, 19_000, 20_454, 60_000] {
            #expect(CivilDate(daysSinceEpoch: days).daysSinceEpoch == days)
        }
        #expect(CivilDate(year: 2024, month: 2, day: 29).isValid)
        #expect(!CivilDate(year: 2023, month: 2, day: 29).isValid)
    }
}

import Foundation
import NMEA
import Testing

/// SPEC §8: numbers from NMEA are range-checked before use. A position out of range is no
/// fix; an accuracy, DOP, speed, course or altitude out of range is unknown, as if empty.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct RangeCheckTests {
    func log(_ bodies: [String]) -> String {
        bodies.map { NMEATestInput.sentence($0) + "\r\n" }.joined()
    }

    /// One epoch's fix from a GGA and an RMC that agree on a valid position at 2026-11-22T12:00:00Z.
    func fix(gga: String = "GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
             rmc: String = "GPRMC,120000,A,4807.038,N,01131.000,E,022.4,084.4,221126,,,A",
             extra: [String] = []) throws -> NMEAFix? {
        try NMEATestInput.epochs(log([gga, rmc] + extra)).first?.fix
    }

    @Test func validEpochKeepsEveryValue() throws {
        let fix = try #require(try fix())
        #expect(fix.latitude == 48 + 7.038 / 60)
        #expect(fix.course == 84.4)
        #expect(abs(fix.speed! - 22.4 * 1852 / 3600) < 1e-9)
        #expect(abs(fix.horizontalAccuracy! - 1.5096 * 0.9 * 5 / 2.0.squareRoot()) < 1e-9)
    }

    @Test func negativeHDOPIsUnknownAccuracy() throws {
        // Reported as "-5.3" before: HDOP -1 × 5.34.
        let fix = try #require(try fix(gga: "GPGGA,120000,4807.038,N,01131.000,E,1,08,-1.0,545.4,M,46.9,M,,"))
        #expect(fix.horizontalAccuracy == nil)
    }

    @Test func negativeGSTSigmasFallBackToHDOP() throws {
        let fix = try #require(try fix(extra: ["GPGST,120000,1.2,3.0,2.0,45.0,-2.0,3.0,-4.0"]))
        #expect(abs(fix.horizontalAccuracy! - 1.5096 * 0.9 * 5 / 2.0.squareRoot()) < 1e-9)
        #expect(fix.verticalAccuracy == nil)
    }

    @Test func courseOutOfRangeAndNegativeSpeedAreUnknown() throws {
        let course = try #require(try fix(rmc: "GPRMC,120000,A,4807.038,N,01131.000,E,022.4,999.0,221126,,,A"))
        #expect(course.course == nil)
        #expect(course.speed != nil)
        let speed = try #require(try fix(rmc: "GPRMC,120000,A,4807.038,N,01131.000,E,-5.0,084.4,221126,,,A"))
        #expect(speed.speed == nil)
        #expect(speed.course == 84.4)
        let fast = try #require(try fix(rmc: "GPRMC,120000,A,4807.038,N,01131.000,E,9999.0,360.0,221126,,,A"))
        #expect(fast.speed == nil)  // 5,144 m/s, beyond FixLimits.maxSpeed
        #expect(fast.course == nil)  // 360 is outside [0, 360)
    }

    @Test func absurdAltitudeIsUnknown() throws {
        let fix = try #require(try fix(gga: "GPGGA,120000,4807.038,N,01131.000,E,1,08,0.9,545454.4,M,46.9,M,,"))
        #expect(fix.altitudeHAE == nil)
        #expect(fix.altitudeMSL == nil)
    }

    @Test(arguments: [
        ("hemisphere X is not N", ["GPGGA,120000,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
                                   "GPRMC,120000,A,4807.038,X,01131.000,E,022.4,084.4,221126,,,A"]),
        ("hemisphere Q is not E", ["GPGGA,120000,4807.038,N,01131.000,Q,1,08,0.9,545.4,M,46.9,M,,",
                                   "GPRMC,120000,A,4807.038,N,01131.000,Q,022.4,084.4,221126,,,A"]),
        ("latitude 91", ["GPGGA,120000,9100.000,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
                         "GPRMC,120000,A,9100.000,N,01131.000,E,022.4,084.4,221126,,,A"]),
        ("longitude 500", ["GPGGA,120000,4807.038,N,50000.000,E,1,08,0.9,545.4,M,46.9,M,,",
                           "GPRMC,120000,A,4807.038,N,50000.000,E,022.4,084.4,221126,,,A"]),
    ])
    func positionOutOfRangeIsNoFix(_ label: String, _ bodies: [String]) throws {
        let epochs = try NMEATestInput.epochs(log(bodies))
        #expect(epochs.count == 1, "\(label)")
        #expect(epochs.first?.fix == nil, "\(label)")
    }

    @Test func hemisphereXInOneSentenceLeavesTheOther() throws {
        // The RMC's valid position is the epoch's; the GGA's unreadable one is ignored.
        let fix = try #require(try fix(gga: "GPGGA,120000,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
                                       rmc: "GPRMC,120000,A,4807.038,S,01131.000,E,022.4,084.4,221126,,,A"))
        #expect(fix.latitude == -(48 + 7.038 / 60))
    }

    /// gpsd's `merge_ddmmyy` (driver_nmea0183.c): century 2000 + yy, and years from 2080 on
    /// moved back a century, so 80–99 are 1980–1999 and 00–79 are 2000–2079.
    @Test(arguments: [("010100", 2000), ("311279", 2079), ("010170", 2070), ("010180", 1980), ("220899", 1999)])
    func twoDigitYearAsGpsdReadsIt(_ ddmmyy: String, _ year: Int) throws {
        let epochs = try NMEATestInput.epochs(log(["GPRMC,120000,A,4807.038,N,01131.000,E,0.0,0.0,\(ddmmyy),,,A"]))
        let fix = try #require(epochs.first?.fix)
        let day = Int(ddmmyy.prefix(2))!, month = Int(ddmmyy.dropFirst(2).prefix(2))!
        #expect(fix.timestamp == Int64(CivilDate(year: year, month: month, day: day).daysSinceEpoch) * 86_400_000 + 43_200_000)
    }

    /// hemi.log in the gpsd corpus: GGA quality 1 with no satellites used; gpsd reports mode 1.
    @Test func ggaWithFewerThanThreeSatellitesIsNoFix() throws {
        let epochs = try NMEATestInput.epochs(log([
            "GPZDA,120000.00,22,11,2026,,",
            "GPGGA,120000.00,4807.038,N,01131.000,E,1,00,0.9,545.4,M,46.9,M,,",
            "GPZDA,120001.00,22,11,2026,,",
            "GPGGA,120001.00,4807.038,N,01131.000,E,1,02,0.9,545.4,M,46.9,M,,",
            "GPZDA,120002.00,22,11,2026,,",
            "GPGGA,120002.00,4807.038,N,01131.000,E,1,03,0.9,545.4,M,46.9,M,,",
        ]))
        #expect(epochs.map { $0.fix != nil } == [false, false, true])
    }
}

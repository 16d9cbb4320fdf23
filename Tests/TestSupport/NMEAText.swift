import Foundation

/// Small NMEA logs written for one case each: fixes at a place and time, fixes the receiver
/// estimated, or no fix at all, with valid checksums: for the tests of both test targets.
public enum NMEAText {
    /// `ddmm.mmmmm,N` or `dddmm.mmmmm,E` for `value` degrees.
    public static func angle(_ value: Double, degreesWidth: Int, positive: String, negative: String) -> String {
        let degrees = Int(abs(value))
        let minutes = (abs(value) - Double(degrees)) * 60
        return String(format: "%0\(degreesWidth)d%08.5f", degrees, minutes) + "," + (value < 0 ? negative : positive)
    }

    public static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return "$\(body)*\(String(format: "%02X", checksum))\r\n"
    }

    /// One epoch a second from `time` (hhmmss) for `seconds` seconds on `date` (ddmmyy), each a
    /// fix at `latitude`/`longitude` good to about 3 m, with GGA `quality` and FAA `mode`.
    public static func fixes(latitude: Double, longitude: Double, date: String, time: String, seconds: Int = 3,
                      quality: Int = 1, mode: String = "A") -> String {
        let lat = angle(latitude, degreesWidth: 2, positive: "N", negative: "S")
        let lon = angle(longitude, degreesWidth: 3, positive: "E", negative: "W")
        return epochs(from: time, seconds: seconds).map { time in
            sentence("GPGGA,\(time),\(lat),\(lon),\(quality),10,0.9,50.0,M,55.0,M,,")
                + sentence("GPGST,\(time),1.0,2.0,2.0,0.0,2.0,2.0,3.0")
                + sentence("GPRMC,\(time),A,\(lat),\(lon),0.0,0.0,\(date),,,\(mode)")
        }.joined()
    }

    /// `seconds` epochs from `time` on `date` in which the receiver has no fix (RMC status V).
    public static func noFix(date: String, time: String, seconds: Int) -> String {
        epochs(from: time, seconds: seconds).map { sentence("GPRMC,\($0),V,,,,,,,\(date),,,N") }.joined()
    }

    public static func epochs(from time: String, seconds: Int) -> [String] {
        let digits = Array(time)
        let start = Int(String(digits[0..<2]))! * 3600 + Int(String(digits[2..<4]))! * 60 + Int(String(digits[4..<6]))!
        return (0..<seconds).map { offset in
            let t = start + offset
            return String(format: "%02d%02d%02d.00", t / 3600, t / 60 % 60, t % 60)
        }
    }
}

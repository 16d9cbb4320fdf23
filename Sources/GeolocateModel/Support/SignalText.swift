/// Figures in reason lines: short, and in the units people read.
package enum SignalText {
    /// One decimal below 100, else whole: `4.2`, `4124`.
    package static func figure(_ value: Double) -> String {
        abs(value) < 100 ? JSONWriter.decimal(value, digits: 1) : JSONWriter.decimal(value.rounded(), digits: 0)
    }

    /// Metres below 10 km, else kilometres: `850 m`, `5630 km`.
    package static func distance(_ metres: Double) -> String {
        metres < 10_000 ? "\(figure(metres)) m" : "\(figure(metres / 1000)) km"
    }

    /// Whole units: `22 min`, `3 h`, `2 d`, `12 s`, `350 ms`.
    package static func duration(_ milliseconds: Int64) -> String {
        switch milliseconds {
        case 172_800_000...: return "\(milliseconds / 86_400_000) d"
        case 7_200_000...: return "\(milliseconds / 3_600_000) h"
        case 120_000...: return "\(milliseconds / 60_000) min"
        case 1_000...: return "\(milliseconds / 1000) s"
        default: return "\(milliseconds) ms"
        }
    }

    /// The one stderr line for a live source whose receiver dates its fixes far from the
    /// system clock (`skew` is system time minus fix time): gpsd and a terminal say it alike.
    package static func farDate(source: String, timestamp: Int64, skew: Int64) -> String {
        let side = skew < 0 ? "ahead of" : "behind"
        return "\(source) dates its fixes \(TimeText.iso8601(timestamp)), \(duration(Int64(clamping: skew.magnitude))) \(side) the system clock (a GPS week rollover, or a system clock without an RTC); their ages count from their arrival"
    }
}

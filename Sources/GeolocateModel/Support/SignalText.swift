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
}

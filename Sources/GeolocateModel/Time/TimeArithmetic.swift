extension Int64 {
    /// `self + other`, held at the bounds instead of trapping on overflow.
    package func addingClamped(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, held at the bounds instead of trapping on overflow.
    package func subtractingClamped(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }
}

extension Duration {
    /// Whole milliseconds, rounded down: the unit of every span a record or setting holds.
    package var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }

    /// Whole microseconds, rounded down: what `usleep` takes.
    package var microseconds: Int64 {
        components.seconds * 1_000_000 + components.attoseconds / 1_000_000_000_000
    }

    /// Seconds, as GRDB's busy timeout and `nowSeconds` readings take them.
    package var seconds: Double { Double(microseconds) / 1_000_000 }
}

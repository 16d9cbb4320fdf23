import Foundation

/// Retries of transient failures within one flush: exponential backoff with jitter.
package struct RetryPolicy: Sendable, Equatable {
    /// Tries per batch in one run, the first included.
    package var maxAttempts = 4
    package var baseDelayMilliseconds: Int64 = 500
    package var maxDelayMilliseconds: Int64 = 30_000
    /// The most one batch waits between its attempts, in all: a wait that would pass it (a
    /// long `Retry-After`, or 29 s twice) ends the run for the endpoint instead, and
    /// the next flush before that time skips it. A flush under cron must not take minutes.
    package var maxWaitMilliseconds: Int64 = 30_000

    package init() {}

    /// The wait after failed attempt `attempt` (1-based): base × 2^(attempt−1), capped, ×0.5–1.5.
    package func delay(afterAttempt attempt: Int) -> Int64 {
        let exponential = min(Double(maxDelayMilliseconds), Double(baseDelayMilliseconds) * pow(2, Double(attempt - 1)))
        return Int64(exponential * Double.random(in: 0.5...1.5))
    }
}

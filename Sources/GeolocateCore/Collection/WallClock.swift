import Foundation

/// Tells the current UTC time in milliseconds since 1970; injected so tests and `--now` control it.
public protocol WallClock: Sendable {
    var nowMilliseconds: Int64 { get }
}

/// The system clock.
public struct SystemClock: WallClock {
    public init() {}
    public var nowMilliseconds: Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) }
}

/// A clock stopped at one instant, for `--now` and tests.
public struct FixedClock: WallClock {
    public let nowMilliseconds: Int64
    public init(_ milliseconds: Int64) { nowMilliseconds = milliseconds }
}

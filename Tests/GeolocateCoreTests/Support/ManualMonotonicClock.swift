import Foundation
import GeolocateCore

/// A monotonic clock a test moves by hand; `sleep` moves it at once, so nothing waits.
final class ManualMonotonicClock: MonotonicClock, @unchecked Sendable {
    // @unchecked: `seconds` is only read and written under `lock`.
    private let lock = NSLock()
    private var seconds = 1000.0

    var nowSeconds: Double { lock.withLock { seconds } }

    func sleep(seconds: Double) { advance(seconds: max(0, seconds)) }

    func advance(seconds: Double) { lock.withLock { self.seconds += seconds } }
}

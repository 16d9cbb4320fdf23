import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Synchronization

/// A monotonic clock a test moves by hand; `sleep` moves it at once, so nothing waits.
final class ManualMonotonicClock: MonotonicClock, Sendable {
    private let seconds = Mutex(1000.0)

    var nowSeconds: Double { seconds.withLock { $0 } }

    func sleep(for duration: Duration) { advance(seconds: max(0, duration.seconds)) }

    func advance(seconds: Double) { self.seconds.withLock { $0 += seconds } }
}

import Foundation
import GeolocateDelivery
import Synchronization

/// A request to stop, set from a signal handler and read by the tracking loop.
///
/// An atomic, not a lock: a signal handler may interrupt the loop while it holds a lock.
package final class StopFlag: Sendable {
    private let requested = Atomic(false)

    package init() {}

    package func request() {
        requested.store(true, ordering: .releasing)
    }

    package var isRequested: Bool {
        requested.load(ordering: .acquiring)
    }
}

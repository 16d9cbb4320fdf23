import GeolocateModel

/// Decides which fixes become records: the first, then one when `--interval` has passed or the
/// device moved `--distance` from the last record (GeoManager), or every one with `--every-fix`.
package struct EmissionFilter: Sendable {
    package let policy: TrackPolicy
    private(set) var lastEmitted: Fix?

    package init(policy: TrackPolicy) { self.policy = policy }

    package func isDue(_ fix: Fix) -> Bool {
        guard let last = lastEmitted, !policy.everyFix else { return true }
        return fix.timestamp - last.timestamp >= policy.intervalMilliseconds
            || Geodesy.greatCircle(last, fix) >= policy.distanceMetres
    }

    /// Notes that a record was made of `fix`: intervals and distances count from it.
    package mutating func emitted(_ fix: Fix) { lastEmitted = fix }
}

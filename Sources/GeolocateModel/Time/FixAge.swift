/// How old a fix is (SPEC §3, "Clocks that disagree"): a live fix from its arrival, a
/// replayed one from its time in the log.
///
/// A receiver's time may be years off a clock that is itself wrong (no RTC, a week-rollover
/// date), so a live fix is aged from when it arrived: on the monotonic clock within one boot,
/// so a step of the system clock changes nothing, and on the system clock across boots,
/// where an arrival after "now" (the clock was stepped back) leaves the age unknown.
package enum FixAge {
    /// The age of `fix` at `now` (ms since 1970), `boot` being the monotonic clock at that
    /// moment when it is the system's; `nil` when unknown: a live fix that arrived after
    /// `now` or whose arrival was not seen (`Fix.arrivalUnknown`), or a replayed one dated
    /// after `now`. Never negative.
    package static func of(_ fix: Fix, at now: Int64, boot: BootTime?) -> Int64? {
        if fix.arrivalUnknown == true { return nil }
        guard let arrived = fix.receivedAt else {
            let age = now.subtractingClamped(fix.timestamp)
            return age >= 0 ? age : nil
        }
        if let boot, let id = fix.receivedBoot, id == boot.id, let uptime = fix.receivedUptime {
            return max(0, boot.uptimeMilliseconds.subtractingClamped(uptime))
        }
        let age = now.subtractingClamped(arrived)
        return age >= 0 ? age : nil
    }
}

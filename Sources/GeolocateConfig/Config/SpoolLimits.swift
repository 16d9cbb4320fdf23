import GeolocateModel

/// Limits on what the spool keeps (config `spool.*`).
package struct SpoolLimits: Sendable, Equatable {
    /// Records older than this by both their times, when they were spooled and (unless it is
    /// in the future) their fix's, are expired, never sent.
    package var maxRetentionMilliseconds: Int64
    /// At most this many records are kept; the oldest beyond it are expired.
    package var maxRecords: Int
    /// Delivered records stay this long in the `delivered` table, for export; 0 keeps none.
    package var keepDeliveredMilliseconds: Int64

    package init(maxRetentionMilliseconds: Int64 = ConfigKey.spoolMaxRetention.builtInValue,
                 maxRecords: Int = ConfigKey.spoolMaxRecords.builtInValue,
                 keepDeliveredMilliseconds: Int64 = ConfigKey.spoolKeepDelivered.builtInValue) {
        self.maxRetentionMilliseconds = maxRetentionMilliseconds
        self.maxRecords = maxRecords
        self.keepDeliveredMilliseconds = keepDeliveredMilliseconds
    }
}

extension SpoolLimits {
    /// The warning for `count` records expired unsent, the one loss the spool allows: said
    /// by whichever command expired them (flush, track), never as a mere note.
    package func expiryWarning(count: Int) -> String {
        "\(count) record\(count == 1 ? "" : "s") expired unsent: older than spool.maxRetention "
            + "(\(DurationText.format(maxRetentionMilliseconds))) both since they were spooled and by their fix, "
            + "or beyond spool.maxRecords (\(maxRecords))"
    }
}

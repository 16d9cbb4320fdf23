#if canImport(Glibc)
import Glibc
#endif

/// One risk-event record (SPEC §3.1), the unit geolocate prints, spools and sends.
package struct Record: Sendable, Equatable {
    /// A UUID that never changes, so receivers can drop duplicates.
    package var id: String
    /// The action of the records `track` makes; any other is an event (a trigger's).
    package static let trackAction = "track"
    package var action: String
    /// Milliseconds since 1970 when the event was decided ("now").
    package var triggeredAt: Int64
    /// The mode asked for (`default` or an explicit mode).
    package var requestedMode: String
    /// The mode that was applied after resolving `default`.
    package var collectionMode: String
    package var fix: Fix?
    /// The permissions in force for this record.
    package var permissions: [Permission]
    package var origin: LocationOrigin?
    package var fallbackReason: FallbackReason?
    package var errorCode: LocationErrorCode
    /// A track record's `location_context`; `nil` on trigger records.
    package var context: LocationContext?
    /// The device that collected a track record, as far as `fields.*` allow.
    package var device: DeviceInfo?
    /// Where the fix is in words, as far as `privacy.precision` allows; `nil` when not looked up.
    package var address: Address?
    /// Risk signals (SPEC §10.1), on records with a location unless `signals.enabled` is false.
    package var signals: Signals?
    /// The location policy's decision (SPEC §10.2), on trigger records when a policy applies.
    package var policy: PolicyResult?
    /// Who the login hook ran for (`trigger --pam`, SPEC §14); `nil` on other records.
    package var subject: Subject?
    /// The fields the location object may show: those `privacy.*` and `fields.*` allowed when
    /// the record was made (see `OutputPolicy`). Every output format obeys it.
    package var attributes: LocationAttributes = .all

    package init(id: String = Record.newID(), action: String, triggeredAt: Int64,
                 requestedMode: String, collectionMode: String, fix: Fix?, permissions: [Permission],
                 origin: LocationOrigin?, fallbackReason: FallbackReason?, errorCode: LocationErrorCode,
                 context: LocationContext? = nil, device: DeviceInfo? = nil) {
        self.id = id
        self.action = action
        self.triggeredAt = triggeredAt
        self.requestedMode = requestedMode
        self.collectionMode = collectionMode
        self.fix = fix
        self.permissions = permissions
        self.origin = origin
        self.fallbackReason = fallbackReason
        self.errorCode = errorCode
        self.context = context
        self.device = device
    }

    /// A random (version 4) UUID in lower case, made without Foundation's formatting, which
    /// costs more than the rest of a track record together.
    ///
    /// Its 16 bytes come from one `arc4random_buf` (one `getrandom` system call in glibc): the
    /// standard generator makes one call per 8 bytes, and those calls were a twentieth of a track.
    package static func newID() -> String {
        var random: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &random) { arc4random_buf($0.baseAddress!, $0.count) }
        return withUnsafeBytes(of: random) { uuidText($0, version: 4) }
    }

    /// The UUID text of 16 `bytes`, lower case, with `version` and the RFC 9562 variant set.
    package static func uuidText(_ bytes: [UInt8], version: UInt8) -> String {
        bytes.withUnsafeBytes { uuidText($0, version: version) }
    }

    private static func uuidText(_ bytes: UnsafeRawBufferPointer, version: UInt8) -> String {
        let hex: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { text in
            var count = 0
            for index in 0..<16 {
                var byte = bytes[index]
                if index == 6 { byte = (byte & 0x0F) | (version << 4) }
                if index == 8 { byte = (byte & 0x3F) | 0x80 }
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[count] = UInt8(ascii: "-")
                    count += 1
                }
                text[count] = hex.utf8Start[Int(byte >> 4)]
                text[count + 1] = hex.utf8Start[Int(byte & 0x0F)]
                count += 2
            }
            return count
        }
    }

    /// The fix's age when the record was decided, as the resolver measured it (`FixAge`: a
    /// live fix from its arrival, on the monotonic clock); `nil` to take `ageMilliseconds`'
    /// own reckoning.
    package var measuredAge: Int64?

    /// `ageMs`: how old the fix was at `triggeredAt`, when there is a location and its age is
    /// known: the measured age, else from the fix's arrival (live) or its time (replay);
    /// never negative.
    package var ageMilliseconds: Int64? {
        guard let fix, fix.arrivalUnknown != true else { return nil }
        return measuredAge ?? max(0, triggeredAt.subtractingClamped(fix.arrivalOrTime))
    }
}

/// Where a track record was taken relative to a stay (OpenLocate's `location_context`).
package enum LocationContext: String, Sendable, Codable {
    case regular
    /// The device has stayed within the visit radius for the visit duration.
    case visitEntry = "visit_entry"
    /// The device has left a visit.
    case visitExit = "visit_exit"
}

/// Every file geolocate keeps in its state directory, each name written once.
///
/// The list decides whether a state directory is plainly ours and may be made private
/// (`Paths.secureStateDirectory`): a name built elsewhere and missing here made a directory
/// holding it look shared, so it was never tightened again.
package enum StateFile: String, CaseIterable, Sendable {
    case spool = "spool.sqlite"
    case spoolLock = "spool.lock"
    case flushLock = "flush.lock"
    case lastKnown = "last-known.json"
    case lastKnownReplay = "last-known-replay.json"
    case previousReport = "previous-report.json"
    case previousReportReplay = "previous-report-replay.json"
    case previousReportLock = "previous-report.lock"
    case deviceID = "device-id"
    /// The signing key where no `signing.keyFile` names one outside system mode (SPEC §15).
    case deviceKey = "device-key"
    /// The lock `key` commands take while they change the key (`DeviceKey.changing`).
    case deviceKeyLock = "device-key.lock"
    /// What a monitoring user may read: counts and ages, no locations (`StatusSummary`).
    case statusSummary = "status.json"
    case geocoderCache = "geocoder-cache.sqlite"
    /// The MQTT brokers found to refuse MQTT 5, per endpoint (`MQTTVersionMemory`).
    case mqttVersions = "mqtt-versions.json"
    /// Kept by versions before the SQLite geocoder cache.
    case legacyGeocoderCache = "geocoder-cache.json"
    /// Kept by versions before the SQLite geocoder cache.
    case legacyGeocoderLock = "geocoder.lock"

    /// The subdirectory (0700) where root keeps its decision state (previous report and its
    /// lock) in a state directory of another user's (SPEC §14): that user may replace any
    /// file of the directory itself, but cannot enter this one.
    package static let gateDirectory = "gate"

    /// The file's path in the state directory `directory`.
    package func path(in directory: String) -> String { directory + "/" + rawValue }

    /// The files SQLite keeps beside a database (write-ahead log, shared memory, rollback
    /// journal), which are ours as much as the database is.
    package var companionNames: [String] {
        switch self {
        case .spool, .geocoderCache: return ["-wal", "-shm", "-journal"].map { rawValue + $0 }
        default: return []
        }
    }

    /// Every name geolocate may leave in its state directory, SQLite's companions included.
    package static let allNames: Set<String> = Set(allCases.flatMap { [$0.rawValue] + $0.companionNames })
}

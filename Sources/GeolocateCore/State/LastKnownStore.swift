import Foundation
import Logging

/// The last fix geolocate itself saw, kept in the state directory across commands.
///
/// Only a fresher fix replaces the stored one, so replaying an old log never makes the
/// last known location older.
public struct LastKnownStore {
    public let path: String
    private let logger: Logger

    public init(stateDirectory: String, logger: Logger) {
        path = stateDirectory + "/last-known.json"
        self.logger = logger
    }

    /// The stored fix; `nil` when there is none or the file cannot be decoded (with a warning).
    public func load() -> Fix? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(Fix.self, from: data)
        } catch {
            logger.warning("ignoring unreadable last known location in \(path)")
            return nil
        }
    }

    /// Stores `fix` if it is fresher than the stored one.
    public func update(with fix: Fix) throws {
        if let stored = load(), stored.timestamp >= fix.timestamp { return }
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            try AtomicFile.write(try encoder.encode(fix), to: path, permissions: 0o600)
        } catch {
            throw GeolocateError.stateNotWritable(path: path, reason: "\(error)")
        }
    }
}

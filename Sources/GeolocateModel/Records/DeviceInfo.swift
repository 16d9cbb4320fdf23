import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The device a track record was collected on: a per-install random id, never an advertising id.
package struct DeviceInfo: Sendable, Equatable {
    /// A random UUID made once per state directory (`device-id`).
    package var id: String?
    /// The hardware model (DMI product name or device-tree model), when the system tells it.
    package var model: String?
    /// The operating system (`PRETTY_NAME` of /etc/os-release, else the kernel release).
    package var osVersion: String?
    /// Charging, Wi-Fi and carrier, read for each record (`DeviceContextReader`).
    package var context = DeviceContext()

    package init(id: String?, model: String?, osVersion: String?) {
        self.id = id
        self.model = model
        self.osVersion = osVersion
    }

    /// Reads the device id from `stateDirectory`, making it on first use, and the model and
    /// OS version from the system.
    /// - Throws: `GeolocateError.stateNotWritable` when the id cannot be stored.
    package static func current(stateDirectory: String) throws -> DeviceInfo {
        DeviceInfo(id: try deviceID(stateDirectory: stateDirectory), model: hardwareModel(), osVersion: operatingSystem())
    }

    /// The install's id; two processes making it at once agree on one (the first link wins).
    /// - Throws: `GeolocateError.stateNotWritable` when it cannot be stored;
    ///   `.stateFileRefused` when a link, FIFO or another user's file is in its place.
    package static func deviceID(stateDirectory: String) throws -> String {
        let path = StateFile.deviceID.path(in: stateDirectory)
        let name = StateFile.deviceID.rawValue
        let directory = try OpenDirectory.state(stateDirectory)
        if let id = try read(name, in: directory) { return id }
        do {
            _ = try directory.writeIfAbsent(Data((UUID().uuidString.lowercased() + "\n").utf8), to: name, permissions: 0o600)
        } catch {
            throw GeolocateError.stateNotWritable(path: path, reason: ErrorText.plain(error))
        }
        guard let id = try read(name, in: directory) else {
            throw GeolocateError.stateNotWritable(path: path, reason: "unreadable after writing")
        }
        return id
    }

    /// The device id of `stateDirectory` when it has one that this user may read; made never.
    package static func existingDeviceID(stateDirectory: String) -> String? {
        guard let (directory, name) = try? OpenDirectory.parent(of: StateFile.deviceID.path(in: stateDirectory), create: false) else { return nil }
        return try? read(name, in: directory)
    }

    /// The id in the file `name`, or `nil` when there is none or it holds no UUID.
    private static func read(_ name: String, in directory: OpenDirectory) throws -> String? {
        let data: Data?
        do { data = try directory.read(name, limit: 4096) } catch let error as GeolocateError where !error.isRefusedStateFile {
            data = nil
        }
        guard let data else { return nil }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return UUID(uuidString: text) == nil ? nil : text
    }

    package static func hardwareModel() -> String? {
        for path in ["/sys/class/dmi/id/product_name", "/proc/device-tree/model"] {
            if let data = BoundedFile.contents(path, limit: 4096) {
                let text = String(decoding: data.filter { $0 != 0 }, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                if !text.isEmpty { return text }
            }
        }
        return nil
    }

    package static func operatingSystem() -> String? {
        if let data = BoundedFile.contents("/etc/os-release", limit: 64 * 1024) {
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where line.hasPrefix("PRETTY_NAME=") {
                return String(line.dropFirst("PRETTY_NAME=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\"'"))
            }
        }
        var names = utsname()
        guard uname(&names) == 0 else { return nil }
        func text<T>(_ field: T) -> String {
            withUnsafeBytes(of: field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        return "\(text(names.sysname)) \(text(names.release))"
    }
}

import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What OpenLocate collects about a phone's surroundings, read the Linux way (SPEC §10.3):
/// whether it is charging, the Wi-Fi it is connected to, and its mobile carrier.
///
/// Each is `nil` when the device has no such thing (no battery or mains supply, no Wi-Fi
/// connection, no modem) or `fields.*` switched it off; reading never fails a record.
public struct DeviceContext: Sendable, Equatable {
    public var isCharging: Bool?
    public var wifiSsid: String?
    public var wifiBssid: String?
    public var carrierName: String?

    public init(isCharging: Bool? = nil, wifiSsid: String? = nil, wifiBssid: String? = nil, carrierName: String? = nil) {
        self.isCharging = isCharging
        self.wifiSsid = wifiSsid
        self.wifiBssid = wifiBssid
        self.carrierName = carrierName
    }

    var isEmpty: Bool { self == DeviceContext() }
}

/// Reads `DeviceContext` from sysfs and from NetworkManager's `nmcli` and ModemManager's
/// `mmcli`, when they are installed.
///
/// `$GEOLOCATE_DEVICE_ROOT` points the reader at a fake system for tests: sysfs under
/// `ROOT/sys`, and the commands in `ROOT/bin` only.
public struct DeviceContextReader: Sendable {
    /// The directory `sys/class/power_supply` is read under: `/` on a real system.
    let root: String
    /// Where commands are looked for: `PATH`, or `ROOT/bin` under a fake root.
    let searchPath: [String]
    let fields: RecordFields

    /// The longest a command may take before its answer is given up (it is then killed).
    static let commandTimeoutMilliseconds = 500

    public init(environment: [String: String], fields: RecordFields) {
        if let root = environment["GEOLOCATE_DEVICE_ROOT"], !root.isEmpty {
            self.root = root
            searchPath = [root + "/bin"]
        } else {
            root = ""
            searchPath = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        }
        self.fields = fields
    }

    /// Whether records ask for any of the context.
    public var wantsAny: Bool { fields.isCharging || fields.wifiSsid || fields.wifiBssid || fields.carrierName }

    /// The context now, as far as `fields.*` ask for it.
    public func read() -> DeviceContext {
        var context = DeviceContext()
        if fields.isCharging { context.isCharging = isCharging() }
        if fields.wifiSsid || fields.wifiBssid {
            let wifi = connectedWifi()
            if fields.wifiSsid { context.wifiSsid = wifi?.ssid }
            if fields.wifiBssid { context.wifiBssid = wifi?.bssid }
        }
        if fields.carrierName { context.carrierName = carrierName() }
        return context
    }

    /// Charging: a battery whose status is `Charging` or `Full`, or a mains or USB supply
    /// online; `nil` when the system has no power supply at all (a desktop without ACPI).
    func isCharging() -> Bool? {
        let directory = root + "/sys/class/power_supply"
        guard let supplies = try? FileManager.default.contentsOfDirectory(atPath: directory), !supplies.isEmpty else { return nil }
        var known = false
        for supply in supplies.sorted() {
            let path = directory + "/" + supply
            switch Self.firstLine(path + "/type") {
            case "Battery":
                guard let status = Self.firstLine(path + "/status") else { continue }
                known = true
                if status == "Charging" || status == "Full" { return true }
            case "Mains", "USB", "USB_C", "USB_PD":
                guard let online = Self.firstLine(path + "/online") else { continue }
                known = true
                if online == "1" { return true }
            default:
                continue
            }
        }
        return known ? false : nil
    }

    /// The SSID and BSSID of the active Wi-Fi connection, from `nmcli`; `nil` without one.
    func connectedWifi() -> (ssid: String?, bssid: String?)? {
        guard let output = run("nmcli", ["-t", "-f", "ACTIVE,SSID,BSSID", "device", "wifi", "list", "--rescan", "no"]) else { return nil }
        for line in output.split(separator: "\n") where line.hasPrefix("yes:") {
            // Terse mode escapes ':' inside values as '\:'.
            var fields: [String] = [], current = "", escaped = false
            for character in line.dropFirst(4) {
                if escaped { current.append(character); escaped = false } else if character == "\\" { escaped = true } else if character == ":" {
                    fields.append(current)
                    current = ""
                } else { current.append(character) }
            }
            fields.append(current)
            guard fields.count == 2 else { continue }
            let ssid = Self.printable(fields[0])
            let bssid = fields[1].uppercased()
            let isBSSID = bssid.utf8.count == 17 && bssid.split(separator: ":").count == 6
            return (ssid, isBSSID ? bssid : nil)
        }
        return nil
    }

    /// The operator name of the first modem, from `mmcli`; `nil` without a modem.
    func carrierName() -> String? {
        guard let output = run("mmcli", ["-m", "any", "-K"]) else { return nil }
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == "modem.3gpp.operator-name" else { continue }
            let name = parts[1].trimmingCharacters(in: .whitespaces)
            return name.isEmpty || name == "--" ? nil : Self.printable(name)
        }
        return nil
    }

    /// The standard output of `command` with `arguments`, when it is installed, exits 0 in
    /// time and prints at most 64 KiB; else `nil`.
    private func run(_ command: String, _ arguments: [String]) -> String? {
        guard let executable = searchPath.map({ $0 + "/" + command }).first(where: { access($0, X_OK) == 0 }) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let finished = DispatchSemaphore(value: 0)
        let collected = OutputBox()
        DispatchQueue.global().async {
            collected.data = output.fileHandleForReading.readDataToEndOfFile()
            finished.signal()
        }
        if finished.wait(timeout: .now() + .milliseconds(Self.commandTimeoutMilliseconds)) == .timedOut {
            process.terminate()
            process.waitUntilExit()
            return nil
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0, collected.data.count <= 65_536 else { return nil }
        return String(decoding: collected.data, as: UTF8.self)
    }

    private final class OutputBox: @unchecked Sendable {
        // @unchecked: written once by the reading thread before the semaphore it waits on is signalled.
        var data = Data()
    }

    private static func firstLine(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path), data.count < 4096 else { return nil }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) }
        return line?.isEmpty == false ? line : nil
    }

    /// `text` without control characters, at most 64 characters (an SSID is at most 32 bytes).
    private static func printable(_ text: String) -> String? {
        let kept = String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(64))
        return kept.isEmpty ? nil : kept
    }
}

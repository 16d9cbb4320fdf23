import Foundation
import GeolocateConfig
import GeolocateDelivery
import GeolocateModel

#if canImport(Glibc)
import Glibc
#endif

/// Reads `DeviceContext` from sysfs and from NetworkManager's `nmcli` and ModemManager's
/// `mmcli`, when they are installed.
///
/// `$GEOLOCATE_DEVICE_ROOT` points the reader at a fake system for tests: sysfs under
/// `ROOT/sys`, and the commands in `ROOT/bin` only.
package struct DeviceContextReader: Sendable {
    /// The directory `sys/class/power_supply` is read under: `/` on a real system.
    let root: String
    /// Where commands are looked for: `PATH`, or `ROOT/bin` under a fake root.
    let searchPath: [String]
    let fields: RecordFields
    /// The clock a command's time limit is read from.
    let clock: MonotonicClock
    /// The environment the commands run with: the command's (under `--pam` the system `PATH`
    /// only, never the caller's `LD_PRELOAD` or the like), with `LC_ALL=C`.
    let commandEnvironment: [String: String]

    /// The longest a command may take before its answer is given up (it is then killed).
    static let commandTimeoutMilliseconds = 500

    package init(environment: [String: String], fields: RecordFields, clock: MonotonicClock) {
        self.clock = clock
        if let root = environment["GEOLOCATE_DEVICE_ROOT"], !root.isEmpty {
            self.root = root
            searchPath = [root + "/bin"]
        } else {
            root = ""
            searchPath = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        }
        self.fields = fields
        var commandEnvironment = environment
        commandEnvironment["LC_ALL"] = "C"
        self.commandEnvironment = commandEnvironment
    }

    /// Whether records ask for any of the context.
    package var wantsAny: Bool { fields.isCharging || fields.wifiSsid || fields.wifiBssid || fields.carrierName }

    /// The context now, as far as `fields.*` ask for it.
    package func read() -> DeviceContext {
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
        for line in output.split(whereSeparator: \.isNewline) where line.hasPrefix("yes:") {
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
        for line in output.split(whereSeparator: \.isNewline) {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == "modem.3gpp.operator-name" else { continue }
            let name = parts[1].trimmingCharacters(in: .whitespaces)
            return name.isEmpty || name == "--" ? nil : Self.printable(name)
        }
        return nil
    }

    /// The standard output of `command` with `arguments`, when it is installed, exits 0
    /// within `commandTimeoutMilliseconds` and prints at most 64 KiB; else `nil`.
    ///
    /// The command runs in a process group of its own, which is killed when its answer is in
    /// or the deadline passes (SIGKILL: a stuck command may ignore SIGTERM), so a child it
    /// leaves behind never holds its pipe, or geolocate's output, open.
    private func run(_ command: String, _ arguments: [String]) -> String? {
        guard let executable = searchPath.map({ $0 + "/" + command }).first(where: { access($0, X_OK) == 0 }) else { return nil }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { return nil }
        defer { close(pipeEnds[0]) }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = commandEnvironment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        close(pipeEnds[1])
        guard spawned == 0 else { return nil }

        let fd = pipeEnds[0]
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let deadline = clock.nowSeconds + Double(Self.commandTimeoutMilliseconds) / 1000
        var collected: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        var status: Int32 = 0
        var exited = false
        while clock.nowSeconds < deadline, collected.count <= Self.maximumOutput {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                collected.append(contentsOf: chunk[..<count])
                continue
            }
            guard count == 0 || errno == EAGAIN || errno == EINTR else { break }
            // Exited with nothing more in the pipe: what a child of it may still hold open
            // is not its answer.
            if !exited, waitpid(pid, &status, WNOHANG) == pid { exited = true }
            if exited && count <= 0 { break }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, 10)
        }
        kill(-pid, SIGKILL)
        if !exited { _ = waitpid(pid, &status, 0) }
        // Exit status 0: WIFEXITED and WEXITSTATUS both say 0 only for a status word of 0.
        guard exited, status == 0, collected.count <= Self.maximumOutput else { return nil }
        return String(decoding: collected, as: UTF8.self)
    }

    /// The most a command may print: `nmcli` lists a few dozen networks in far less.
    static let maximumOutput = 64 * 1024

    private static func firstLine(_ path: String) -> String? {
        guard let data = BoundedFile.contents(path, limit: 4096) else { return nil }
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").first.map { $0.trimmingCharacters(in: .whitespaces) }
        return line?.isEmpty == false ? line : nil
    }

    /// `text` without control or format characters (a right-to-left override would reorder
    /// what a log shows), at most 64 characters (an SSID is at most 32 bytes).
    private static func printable(_ text: String) -> String? {
        let kept = String(String.UnicodeScalarView(text.unicodeScalars.filter {
            $0.value >= 0x20 && $0.value != 0x7F && !(0x80..<0xA0).contains($0.value) && $0.properties.generalCategory != .format
        }.prefix(64)))
        return kept.isEmpty ? nil : kept
    }
}

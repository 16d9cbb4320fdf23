import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Under systemd, stderr is the journal (SPEC §14, issue 27 item 9): each line then starts
/// with its sd-daemon priority, so `journalctl -p warning` finds the warnings and errors.
/// systemd says so with `JOURNAL_STREAM=DEVICE:INODE`, which must match stderr itself.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct JournalEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    /// Runs the binary with stderr to a file, and `JOURNAL_STREAM` that file's device and
    /// inode (`matching`) or a stream it is not; returns the exit status and stderr's lines.
    func run(_ arguments: [String], matching: Bool) throws -> (status: Int32, lines: [String]) {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let path = geolocate.home.appendingPathComponent("stderr-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        var info = stat()
        #expect(stat(path, &info) == 0)
        // The same device with another inode: a stream systemd gave a parent, not this stderr.
        let stream = matching ? "\(info.st_dev):\(info.st_ino)" : "\(info.st_dev):\(info.st_ino + 1)"
        let errors = open(path, O_WRONLY | O_CLOEXEC)
        try #require(errors >= 0, "cannot open \(path)")
        defer { close(errors) }
        var environment = ProcessInfo.processInfo.environment
        environment["GEOLOCATE_CONFIG"] = geolocate.configPath
        environment["GEOLOCATE_STATE_DIR"] = geolocate.stateDirectory
        environment["JOURNAL_STREAM"] = stream
        let outcome = try Spawn.run([GeolocateProcess.binary.path] + arguments, environment: environment,
                                    directory: GeolocateProcess.projectRoot.path, stderrDescriptor: errors)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return (outcome.status, text.split(separator: "\n").map(String.init))
    }

    @Test func eachLineCarriesItsPriorityWhenStderrIsTheJournal() throws {
        // A warning (an --interval out of range falls back to its default), then an error.
        let warning = ["track", "--replay", drive, "--stdout", "--no-spool", "--permission", "fine", "--count", "1", "--interval", "10s"]
        let track = try run(warning, matching: true)
        #expect(track.status == 0 && !track.lines.isEmpty, "\(track.lines)")
        #expect(track.lines.allSatisfy { $0.hasPrefix("<4>geolocate: warning: ") }, "\(track.lines)")

        let unknownKey = try run(["config", "get", "no.such.key"], matching: true)
        #expect(unknownKey.status == 64 && unknownKey.lines.count == 1, "\(unknownKey.lines)")
        #expect(unknownKey.lines.allSatisfy { $0.hasPrefix("<3>geolocate: ") }, "\(unknownKey.lines)")

        let usage = try run(["trigger", "login", "--timeout", "soon"], matching: true)
        #expect(usage.status == 64 && usage.lines.allSatisfy { $0.hasPrefix("<3>geolocate: ") }, "\(usage.lines)")

        // A notice, with a file to keep aside.
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try Data("{}\n".utf8).write(to: URL(fileURLWithPath: geolocate.configPath))
        let reset = try run(["config", "reset"], matching: true)
        #expect(reset.status == 0 && reset.lines.count == 1 && reset.lines[0].hasPrefix("<5>geolocate: "), "\(reset.lines)")
    }

    @Test func noPrefixWhenStderrIsNotTheJournalNamed() throws {
        let warning = ["track", "--replay", drive, "--stdout", "--no-spool", "--permission", "fine", "--count", "1", "--interval", "10s"]
        let track = try run(warning, matching: false)
        #expect(track.status == 0 && !track.lines.isEmpty && track.lines.allSatisfy { $0.hasPrefix("geolocate: warning: ") }, "\(track.lines)")
        let unknownKey = try run(["config", "get", "no.such.key"], matching: false)
        #expect(unknownKey.lines.count == 1 && unknownKey.lines[0].hasPrefix("geolocate: "), "\(unknownKey.lines)")
    }
}

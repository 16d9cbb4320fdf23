import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Errors read as one line in our words: the path or URL, and the cause as a person says it
/// ("not a directory", "connection refused"), never a library's dump (`Error Domain=…`,
/// `(errno: 111)`) and never the same words twice (SPEC §8).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct ErrorMessageEndToEndTests {
    let geolocate = GeolocateProcess()
    let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")
    static let libraryText = ["Error Domain", "NSCocoaErrorDomain", "NSPOSIXErrorDomain", "UserInfo", "errno:",
                              "error set", "HTTPClientError", "NIO", "SQLite error"]

    func expectPlain(_ stderr: String, naming cause: String, oneLinePerMessage: Bool = true,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        for text in Self.libraryText {
            #expect(!stderr.contains(text), "library text '\(text)' in: \(stderr)", sourceLocation: sourceLocation)
        }
        #expect(stderr.lowercased().contains(cause), "expected '\(cause)' in: \(stderr)", sourceLocation: sourceLocation)
        for line in stderr.split(separator: "\n") where oneLinePerMessage {
            let words = line.split(separator: ":").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.count > 8 }
            #expect(Set(words).count == words.count, "a part said twice: \(line)", sourceLocation: sourceLocation)
        }
    }

    /// A state directory under a regular file: Foundation's NSError used to reach stderr whole.
    @Test func aStateDirectoryThatCannotBeMadeIsNamedWithItsCause() throws {
        try FileManager.default.createDirectory(atPath: geolocate.home.path, withIntermediateDirectories: true)
        let file = geolocate.home.appendingPathComponent("a-file").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let result = try geolocate.run(["track", "--replay", kiosk, "--permission", "fine", "--count", "1"],
                                       environment: ["GEOLOCATE_STATE_DIR": file + "/state"])
        #expect(result.status == 73)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(file + "/state"))
        expectPlain(result.stderr, naming: "not a directory")
    }

    /// Standard output on a full disk: each command that prints says so and exits 74, where it
    /// used to exit 0 with its output lost. A trigger's record is still spooled.
    @Test func aFullStandardOutputIsAnError() throws {
        var shell = geolocate
        shell.executable = URL(fileURLWithPath: "/bin/sh")
        func toFull(_ arguments: [String]) throws -> GeolocateProcess.Result {
            try shell.run(["-c", "exec \"$0\" \"$@\" > /dev/full", GeolocateProcess.binary.path] + arguments)
        }
        let runs = [
            ["trigger", "login", "--replay", kiosk, "--permission", "fine", "--post", "http://127.0.0.1:1/refused"],
            ["track", "--replay", kiosk, "--permission", "fine", "--stdout", "--no-spool", "--every-fix"],
            ["config", "keys"],
            ["flush", "--dead-letters", "--json"],
        ]
        for arguments in runs {
            let result = try toFull(arguments)
            #expect(result.status == 74, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr.split(separator: "\n").last.map(String.init)
                        == "geolocate: cannot write to standard output: no space left on device", "\(result.stderr)")
        }
        // The trigger's record went to the spool, as a refused --post sends it there.
        let pending = try geolocate.run(["flush", "--dry-run", "--json"])
        #expect(pending.status == 0 || pending.status == 75, "\(pending.stderr)")
        #expect(pending.stdout.contains("\"pending\":1") || pending.stdout.contains("\"pending\" : 1"), "\(pending.stdout)")
        // Found by a hostile pass: status said "Error: …" and exited 1 (WARNING to a monitor);
        // key init said its note before the error.
        for (arguments, status) in [(["status"], Int32(74)), (["status", "--json"], 74), (["status", "--check"], 3), (["key", "init"], 74)] {
            let result = try toFull(arguments)
            #expect(result.status == status, "\(arguments): \(result.status) \(result.stderr)")
            #expect(result.stderr == "geolocate: cannot write to standard output: no space left on device\n", "\(arguments): \(result.stderr)")
        }
    }

    /// A reader that went away before trigger printed: exit 74 with one line, and the record
    /// still goes where --post sends it (here, refused, into the spool), where SIGPIPE used
    /// to end the process before it was sent or spooled.
    @Test func aClosedStdoutStillSpoolsTheTriggerRecord() throws {
        let pipe = try Spawn.pipe()
        close(pipe.read)
        defer { close(pipe.write) }
        let outcome = try Spawn.run([GeolocateProcess.binary.path, "trigger", "login", "--replay", kiosk, "--permission", "fine",
                                     "--post", "http://127.0.0.1:1/refused"],
                                    environment: ProcessInfo.processInfo.environment.merging(
                                        ["GEOLOCATE_STATE_DIR": geolocate.stateDirectory, "GEOLOCATE_CONFIG": geolocate.configPath]) { $1 },
                                    directory: GeolocateProcess.projectRoot.path, stdoutDescriptor: pipe.write)
        let stderr = String(decoding: outcome.stderr, as: UTF8.self)
        #expect(outcome.signal == nil && outcome.status == 74, "\(outcome.status) \(stderr)")
        #expect(stderr.split(separator: "\n").last == "geolocate: cannot write to standard output: broken pipe", "\(stderr)")
        let pending = try geolocate.run(["flush", "--dry-run", "--json"])
        #expect(pending.stdout.contains("\"pending\":1") || pending.stdout.contains("\"pending\" : 1"), "\(pending.stdout)")
    }

    /// A config file that cannot be written or read: the path and the cause.
    @Test func aConfigFileThatCannotBeWrittenOrReadIsNamedWithItsCause() throws {
        try FileManager.default.createDirectory(atPath: geolocate.home.path, withIntermediateDirectories: true)
        let file = geolocate.home.appendingPathComponent("a-file").path
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        let unwritable = try geolocate.run(["config", "set", "permissions", "fine", "--config", file + "/config.json"])
        #expect(unwritable.status == 78)
        expectPlain(unwritable.stderr, naming: "not a directory")

        let directory = geolocate.home.appendingPathComponent("config-dir").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let unreadable = try geolocate.run(["trigger", "login", "--replay", kiosk, "--config", directory])
        #expect(unreadable.status == 78)
        #expect(unreadable.stdout.isEmpty)
        expectPlain(unreadable.stderr, naming: "is a directory")

        // A FIFO would block the read: refused as what it is, not as "permission denied".
        let fifo = geolocate.home.appendingPathComponent("config-fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let piped = try geolocate.start(["config", "show", "--config", fifo])
        let shown = try #require(piped.finish(within: .seconds(20)), "config show blocked on a FIFO")
        #expect(shown.status == 78)
        expectPlain(shown.stderr, naming: "not a regular file")
    }

    /// A refused connection is "cannot connect to HOST:PORT: connection refused", in `--post` warnings, flush's lines and
    /// `flush --json`.
    @Test func aRefusedConnectionIsSaidPlainly() throws {
        let (port, held) = try Loopback.refusingPort()
        defer { close(held) }
        let url = "http://127.0.0.1:\(port)/in"
        let post = try geolocate.run(["trigger", "login", "--replay", kiosk, "--permission", "fine", "--post", url])
        #expect(post.status == 0)
        expectPlain(post.stderr, naming: "connection refused")

        #expect(try geolocate.run(["config", "set", "endpoints.a.url", url]).status == 0)
        let flush = try geolocate.run(["flush"])
        #expect(flush.status == 75)
        expectPlain(flush.stderr, naming: "connection refused")
        #expect(flush.stderr.contains("cannot connect to 127.0.0.1:\(port): connection refused"), "\(flush.stderr)")
        let json = try geolocate.run(["flush", "--json"])
        expectPlain(json.stdout, naming: "connection refused", oneLinePerMessage: false)
    }

    /// Input that never ends and never holds a sentence (`/dev/zero`) is refused once 64 MiB
    /// pass without an epoch; before, trigger read it forever, its log clock never moving.
    @Test func endlessInputWithoutNMEAIsRefused() throws {
        for command in [["trigger", "login"], ["track", "--count", "1"]] {
            let running = try geolocate.start(command + ["--replay", "/dev/zero", "--permission", "fine"])
            let result = try #require(running.finish(within: .seconds(60)), "\(command[0]) read /dev/zero forever")
            #expect(result.status == 65, "\(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.contains("/dev/zero: 64 MiB without a timed NMEA sentence"), "\(result.stderr)")
            expectPlain(result.stderr, naming: "nmea log")
        }
    }

    /// A log followed by garbage (`cat drive.nmea /dev/zero |`) keeps every fix before the
    /// garbage: before, the epoch in progress when the 64 MiB limit struck was lost. The same
    /// bytes in a regular file are read to their end (SPEC §2: a file ends), exit 0.
    @Test func fixesBeforeEndlessGarbageAreKept() throws {
        let drive = GeolocateProcess.example("maynooth-drive.nmea")
        let track = ["track", "--every-fix", "--stdout", "--no-spool", "--permission", "fine", "--replay"]
        let clean = try geolocate.run(track + [drive])
        #expect(clean.status == 0)
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let spoiled = geolocate.home.appendingPathComponent("drive-then-zeros.nmea")
        var bytes = try Data(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent(drive))
        bytes.append(Data(count: 65 << 20))
        try bytes.write(to: spoiled)
        let expected = clean.stdout.split(separator: "\n").count
        #expect(expected == 120)
        let file = try geolocate.run(track + [spoiled.path])
        #expect(file.status == 0, "\(file.stderr)")
        #expect(file.stdout.split(separator: "\n").count == expected, "\(file.stdout.split(separator: "\n").count) records")
        let result = try geolocate.run(track + ["-"], stdin: bytes)
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == expected, "\(result.stdout.split(separator: "\n").count) records")
    }

    /// A name or path with a newline or an escape sequence stays on its one line, escaped:
    /// before, `trigger $'log\nin'` printed a second line the user never wrote.
    @Test func controlCharactersInMessagesAreEscaped() throws {
        let action = try geolocate.run(["trigger", "log\nin \u{1B}[31m", "--replay", kiosk, "--permission", "fine"])
        #expect(action.status == 64, "\(action.stderr)")
        // The message is one line (the argument parser's usage lines follow it), and no ESC reaches the terminal.
        let first = action.stderr.split(separator: "\n").first ?? ""
        #expect(first.contains(#"invalid action name 'log\nin \u{1B}[31m'"#), "\(action.stderr)")
        #expect(!action.stderr.contains("\u{1B}"), "\(action.stderr)")

        let replay = try geolocate.run(["trigger", "login", "--replay", "/nonexistent/a\nb.nmea", "--permission", "fine"])
        #expect(replay.status == 66)
        #expect(replay.stderr.split(separator: "\n").count == 1 && replay.stderr.contains(#"a\nb.nmea"#), "\(replay.stderr)")
    }
}

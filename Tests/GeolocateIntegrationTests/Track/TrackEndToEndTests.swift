import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `geolocate track` as a process: signals, concurrent processes on one spool, gpsd outages.
/// What a replay alone shows runs in process (TrackReplayTests).
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct TrackEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    /// A stdout the caller closed is refused (74) by track as by trigger. Its number used to
    /// go to the first epoll instance the process opened, which track then waited on for ever
    /// to become writable (hostile pass), and trigger wrote its record into.
    @Test(arguments: [["track", "--every-fix", "--stdout", "--no-spool"], ["track", "--stdout", "--count", "1"], ["trigger", "login"]])
    func aClosedStdoutIsRefusedNotWaitedOn(_ command: [String]) throws {
        let result = try geolocate.run(command + ["--replay", drive, "--permission", "fine"], timeLimit: .seconds(60), closingStdout: true)
        #expect(result.status == 74, "\(result.stderr)")
        #expect(result.stderr == "geolocate: cannot write to standard output: bad file descriptor\n")
    }

    func ids(_ lines: [String]) -> [String] {
        lines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String }
    }

    func spooledIDs() throws -> [String] {
        ids(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).mosaicLines())
    }

    /// SIGTERM, SIGINT and SIGHUP (the terminal or ssh session closed) alike: every record
    /// printed is in the spool.
    @Test(arguments: [SIGTERM, SIGINT, SIGHUP])
    func aStopSignalCommitsEverythingAndExitsZero(signal: Int32) throws {
        let running = try geolocate.start(["track", "--replay", drive, "--replay-speed", "20x", "--every-fix", "--stdout",
                                           "--permission", "fine"])
        #expect(waitUntil(.seconds(20)) { running.stdoutLines.count >= 20 })
        #expect(running.isRunning)
        kill(running.pid, signal)
        let result = try #require(running.finish(within: .seconds(10)))
        #expect(result.signal == nil)
        #expect(result.status == 0, "\(result.stderr)")
        let printed = ids(result.stdout.split(separator: "\n").map(String.init))
        #expect(printed.count >= 20 && printed.count < 120)
        #expect(try spooledIDs() == printed)
    }

    @Test func sigkillLosesAtMostTheLastSecond() throws {
        let running = try geolocate.start(["track", "--replay", drive, "--replay-speed", "20x", "--every-fix", "--stdout",
                                           "--permission", "fine"])
        #expect(waitUntil(.seconds(20)) { running.stdoutLines.count >= 40 })
        #expect(kill(running.pid, SIGKILL) == 0)
        // Killed by the signal, so it was still tracking when it landed, not already done.
        #expect(running.finish(within: .seconds(10))?.signal == SIGKILL)
        let printed = running.stdoutLines
        let spool = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock())
        #expect(try spool.isIntact())
        let spooled = Set(try spooledIDs())
        #expect(spooled.isSubset(of: Set(ids(printed.map(\.text)))))
        // Timed by geolocate, not by this test: at 20x the replay paces 20 s of the log's time
        // into each second of its own clock, so the last second is the last 20 s of fix time
        // printed (one epoch more for the one being made). A loaded machine delaying this
        // test's kill or its reading of stdout changes neither.
        func fixTime(_ line: String) -> Int? {
            let record = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
            return (record?["location"] as? [String: Any])?["recordTimestamp"] as? Int
        }
        let lost = printed.map(\.text).filter { line in ids([line]).first.map { !spooled.contains($0) } ?? false }
        let newest = try #require(printed.compactMap { fixTime($0.text) }.max())
        #expect(lost.allSatisfy { (fixTime($0) ?? 0) >= newest - 21_000 }, "\(lost.count) records lost from before the last second")
        #expect(spooled.count >= 30)
    }

    @Test func concurrentProcessesShareOneSpool() throws {
        let collector = try Collector()
        defer { collector.stop() }
        _ = try geolocate.run(["config", "set", "endpoints.a.url", collector.url("/a")])
        let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")
        let tracks = try [drive, kiosk, drive].map { log in
            try geolocate.start(["track", "--replay", log, "--replay-speed", "100x", "--every-fix", "--stdout", "--permission", "fine"])
        }
        let trigger = try geolocate.run(["trigger", "login", "--replay", kiosk, "--permission", "fine"])
        #expect(trigger.status == 0)
        let flush = try geolocate.run(["flush"])  // while the tracks write
        #expect(flush.status == 0, "\(flush.stderr)")
        var printed: [String] = []
        for running in tracks {
            let result = try #require(running.finish(within: .seconds(60)))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(!result.stderr.contains("locked"))
            printed += ids(result.stdout.split(separator: "\n").map(String.init))
        }
        #expect(printed.count == 120 + 60 + 120)
        let spooled = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).count()
        #expect(spooled + collector.acceptedIDs("/a").count == printed.count)
        #expect(try geolocate.run(["flush"]).status == 0)
        #expect(Set(collector.acceptedIDs("/a")) == Set(printed))
        #expect(collector.acceptedIDs("/a").count == printed.count)
    }

    @Test func trackSurvivesGpsdGoingAwayAndComingBack() throws {
        let first = try GPSDFake(log: GeolocateProcess.fixture("gpsd-fixes.nmea"))
        defer { first.stop() }
        let running = try geolocate.start(["track", "--source", first.source, "--every-fix", "--stdout", "--no-spool",
                                           "--permission", "fine"])
        defer { _ = running.finish(within: .seconds(1)) }
        #expect(waitUntil(.seconds(20)) { running.stdoutLines.count >= 2 }, "\(running.stderr)")
        first.stop()
        #expect(waitUntil(.seconds(10)) { running.stderr.contains("retrying with backoff") }, "\(running.stderr)")
        let beforeRestart = running.stdoutLines.count

        let second = try GPSDFake(log: GeolocateProcess.fixture("gpsd-fixes.nmea"), port: first.port)
        defer { second.stop() }
        #expect(waitUntil(.seconds(40)) { running.stdoutLines.count >= beforeRestart + 2 }, "\(running.stderr)")
        kill(running.pid, SIGTERM)
        let result = try #require(running.finish(within: .seconds(10)))
        #expect(result.status == 0)
        let stderr = result.stderr.split(separator: "\n")
        #expect(stderr.filter { $0.contains("retrying with backoff") }.count == 1, "\(result.stderr)")
        #expect(stderr.filter { $0.contains("reconnected after") }.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains(first.source))
    }

    /// A gpsd that sends a fix and hangs up, again and again: track reconnects with a growing
    /// backoff and says so in three lines, not two per cycle (before: the backoff went back to
    /// 0.5 s and a warning and a "reconnected" notice were printed on every cycle).
    @Test func aFlappingGpsdIsRetriedWithGrowingBackoffAndFewLines() throws {
        // Dated now: a receiver days off the clock would add its own line (once) to those counted.
        let gpsd = try ScriptedGPSD(["poll": [], "stream": [ScriptedGPSD.tpv(time: ISO8601DateFormatter().string(from: Date()))],
                                     "closeAfterStream": true])
        defer { gpsd.stop() }
        let running = try geolocate.start(["track", "--source", gpsd.source, "--every-fix", "--stdout", "--no-spool",
                                           "--permission", "fine"])
        defer { _ = running.finish(within: .seconds(1)) }
        #expect(waitUntil(.seconds(40)) { gpsd.connectionTimes.count >= 5 }, "\(running.stderr)")
        kill(running.pid, SIGTERM)
        let result = try #require(running.finish(within: .seconds(10)))
        let times = gpsd.connectionTimes
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.count >= 4 && gaps[3] > 2 * gaps[0], "gaps between connections: \(gaps)")
        let lines = result.stderr.split(separator: "\n").filter { $0.contains(gpsd.source) }
        #expect(lines.count <= 3, "\(result.stderr)")
        #expect(result.stderr.contains("keeps dropping"), "\(result.stderr)")
    }

    @Test func flagsOutOfRangeAndMisuse() throws {
        let warned = try geolocate.run(["track", "--replay", drive, "--interval", "10s", "--stdout", "--no-spool", "--permission", "fine"])
        #expect(warned.status == 0)
        #expect(warned.stderr.contains("--interval 10s is outside 1m-30m; using the default 5m"))

        let nothingKept = try geolocate.run(["track", "--replay", drive, "--no-spool"])
        #expect(nothingKept.status == 64)
        #expect(nothingKept.stderr.contains("--no-spool without --stdout"))

        let badWindow = try geolocate.run(["track", "--replay", drive, "--window", "25:00-26:00"])
        #expect(badWindow.status == 64)

        let noPermission = try geolocate.run(["track", "--replay", drive, "--stdout"])
        #expect(noPermission.status == 78)
        #expect(noPermission.stdout.isEmpty)
        #expect(noPermission.stderr.split(separator: "\n").count == 1)
        #expect(noPermission.stderr.contains("geolocate config set permissions fine"))

        let missing = try geolocate.run(["track", "--replay", "no-such.nmea", "--permission", "fine"])
        #expect(missing.status == 66)
    }

    /// The first `bytes` of the drive log: about 30 s of it, cut at a line end.
    func driveStart(bytes: Int = 20_000) throws -> Data {
        let log = try Data(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent(drive))
        let cut = log.prefix(bytes).lastIndex(of: UInt8(ascii: "\n"))!
        return log.prefix(through: cut)
    }

    /// Records made from a burst on stdin are committed while stdin stays open and silent
    /// (SPEC §4): the spool holds every printed record while track still waits for input.
    @Test func recordsFromAnIdleStdinAreCommittedWhileItWaits() throws {
        let running = try geolocate.start(["track", "--replay", "-", "--every-fix", "--stdout", "--permission", "fine"], stdin: true)
        running.write(try driveStart())
        #expect(waitUntil(.seconds(20)) { running.stdoutLines.count >= 20 }, "\(running.stderr)")
        let committed = waitUntil(.seconds(10)) {
            let printed = Set(ids(running.stdoutLines.map(\.text)))
            return (try? Set(spooledIDs())).map { $0 == printed } ?? false
        }
        #expect(committed, "printed records were not committed while stdin was idle")
        #expect(running.isRunning, "track must still be waiting on stdin")
        #expect(kill(running.pid, SIGKILL) == 0)
        #expect(running.finish(within: .seconds(10))?.signal == SIGKILL)
        #expect(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).isIntact())
    }

    /// SIGTERM to a track still running in the state `what` names: it stops within 3 s,
    /// exit 0 by itself (not killed), with every printed record in the spool.
    func expectCleanStopOnSIGTERM(_ running: GeolocateProcess.Running, while what: String,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(running.isRunning, sourceLocation: sourceLocation)
        kill(running.pid, SIGTERM)
        let result = try #require(running.finish(within: .seconds(3)), "track ignored SIGTERM while \(what)",
                                  sourceLocation: sourceLocation)
        #expect(result.status == 0 && result.signal == nil, "\(result.stderr)", sourceLocation: sourceLocation)
        #expect(try spooledIDs() == ids(result.stdout.split(separator: "\n").map(String.init)), sourceLocation: sourceLocation)
    }

    /// SIGTERM while track blocks on an idle stdin: it stops, commits and exits 0.
    @Test func sigtermWhileStdinIsIdleStopsCleanly() throws {
        let running = try geolocate.start(["track", "--replay", "-", "--every-fix", "--stdout", "--permission", "fine"], stdin: true)
        running.write(try driveStart())
        #expect(waitUntil(.seconds(20)) { running.stdoutLines.count >= 20 }, "\(running.stderr)")
        try expectCleanStopOnSIGTERM(running, while: "stdin was idle")
    }

    /// SIGTERM after a whole log came on a stdin that stays open: the last epoch, which only
    /// the next sentence would have closed, is kept too. The count comes from the same log
    /// read to its end, where the reader closes the last epoch itself.
    @Test func sigtermOnAnIdleStdinKeepsTheLastFix() throws {
        let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")
        let whole = try geolocate.run(["track", "--replay", kiosk, "--every-fix", "--stdout", "--no-spool", "--permission", "fine"])
        let expected = whole.stdout.split(separator: "\n").count
        #expect(whole.status == 0 && expected > 1, "\(whole.stderr)")
        let running = try geolocate.start(["track", "--replay", "-", "--every-fix", "--stdout", "--permission", "fine"], stdin: true)
        running.write(try Data(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent(kiosk)))
        #expect(waitUntil(.seconds(20)) { running.stdoutLines.count >= expected - 1 }, "\(running.stderr)")
        #expect(running.stdoutLines.count == expected - 1, "the last epoch closed before the stop")
        try expectCleanStopOnSIGTERM(running, while: "stdin was idle after a whole log")
        #expect(try spooledIDs().count == expected)
    }

    /// SIGTERM while stdout's reader has stopped reading (a full pipe): track stops within the
    /// limit, exit 0, and commits what it made, instead of blocking in write(2).
    @Test func sigtermWhileStdoutIsFullStopsCleanly() throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let fifo = geolocate.home.appendingPathComponent("stdout.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        #expect(reader >= 0)
        defer { close(reader) }
        // A one-page pipe (F_SETPIPE_SZ) fills after a few records.
        let capacity = fcntl(reader, 1031, 4096)
        #expect(capacity == 4096)
        var shell = geolocate
        shell.executable = URL(fileURLWithPath: "/bin/sh")
        let running = try shell.start(["-c", "exec \"$0\" \"$@\" > \"$GEOLOCATE_STDOUT\"", GeolocateProcess.binary.path,
                                       "track", "--replay", drive, "--every-fix", "--stdout", "--permission", "fine"],
                                      environment: ["GEOLOCATE_STDOUT": fifo])
        func buffered() -> Int32 {
            var count: Int32 = 0
            return ioctl(reader, UInt(FIONREAD), &count) == 0 ? count : -1
        }
        // Blocked on stdout: records in the pipe, and track's main thread (its loop) waiting in
        // write(2) on fd 1 or in poll(2), where it waits for room; a regular file is read
        // without poll, so nothing else puts it there.
        // Any of its threads: track's loop runs on a thread of its own.
        func waitsOnStdout() -> Bool {
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(running.pid)/task")) ?? []
            return threads.contains { thread in
                guard let text = try? String(contentsOfFile: "/proc/\(running.pid)/task/\(thread)/syscall", encoding: .utf8) else { return false }
                let fields = text.split(separator: " ")
                return fields.first == "7" || (fields.first == "1" && fields.dropFirst().first == "0x1")
            }
        }
        #expect(waitUntil(.seconds(20)) { buffered() > 0 && waitsOnStdout() },
                "track never blocked on stdout: \(buffered()) bytes, running \(running.isRunning): \(running.stderr)")
        #expect(running.isRunning, "track must be blocked on its full stdout")
        kill(running.pid, SIGTERM)
        let result = try #require(running.finish(within: .seconds(3)), "track ignored SIGTERM while stdout was full")
        #expect(result.status == 0 && result.signal == nil, "\(result.stderr)")
        var printed = Data()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = read(reader, &chunk, chunk.count)
            if n <= 0 { break }
            printed.append(contentsOf: chunk[0..<n])
        }
        let lines = String(decoding: printed, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(Set(ids(lines)).isSubset(of: Set(try spooledIDs())), "a printed record was not committed")
    }

    /// A FIFO with no writer yet: track has it open (not stuck in open(2), where SIGTERM went
    /// unheard) and stops on SIGTERM; a FIFO whose writer comes is replayed whole.
    @Test func aFIFOWithoutAWriterStopsOnSIGTERMAndOneWithAWriterIsReplayed() throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let fifo = geolocate.home.appendingPathComponent("receiver.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let hasOpened = { (pid: Int32) in
            ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).contains {
                (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)")) == fifo
            }
        }
        let idle = try geolocate.start(["track", "--replay", fifo, "--every-fix", "--stdout", "--permission", "fine"])
        #expect(waitUntil(.seconds(20)) { hasOpened(idle.pid) }, "track never opened the FIFO: \(idle.stderr)")
        try expectCleanStopOnSIGTERM(idle, while: "the FIFO had no writer")

        let fed = try geolocate.start(["track", "--replay", fifo, "--every-fix", "--stdout", "--no-spool", "--permission", "fine"])
        #expect(waitUntil(.seconds(20)) { hasOpened(fed.pid) }, "\(fed.stderr)")
        let writer = try #require(FileHandle(forWritingAtPath: fifo))
        writer.write(try Data(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent(drive)))
        try writer.close()
        let result = try #require(fed.finish(within: .seconds(30)), "track did not end with its writer")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == 120)
    }

    /// SIGTERM while replay pacing waits for the next epoch (an hour away at 0.001x).
    @Test func sigtermWhilePacingStopsCleanly() throws {
        let running = try geolocate.start(["track", "--replay", GeolocateProcess.example("kiosk-gnss.nmea"), "--replay-speed", "0.001x",
                                           "--every-fix", "--stdout", "--permission", "fine"])
        #expect(waitUntil(.seconds(20)) { running.stdoutLines.count >= 1 }, "\(running.stderr)")
        try expectCleanStopOnSIGTERM(running, while: "pacing")

        let absurd = try geolocate.run(["track", "--replay", drive, "--replay-speed", "1e-300x", "--stdout", "--permission", "fine"])
        #expect(absurd.status == 64 && absurd.stderr.contains("0.001x"), "\(absurd.stderr)")
    }

    /// Another process holding the spool's write lock: track keeps the records in memory, waits
    /// for the lock, and commits them when it goes; on SIGTERM it says what it could not commit
    /// and exits 73.
    @Test func aLockedSpoolKeepsRecordsUntilItIsFree() throws {
        _ = try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock())
        let arguments = ["track", "--replay", drive, "--every-fix", "--count", "5", "--stdout", "--permission", "fine"]

        let holder = try SpoolLockHolder(spool: geolocate.stateDirectory + "/spool.sqlite")
        defer { holder.release() }
        let waiting = try geolocate.start(arguments)
        #expect(waitUntil(.seconds(20)) { waiting.stdoutLines.count == 5 && waiting.stderr.contains("is locked by another process") },
                "\(waiting.stderr)")
        #expect(waiting.isRunning, "track must wait for the lock, not give up")
        holder.release()
        let result = try #require(waiting.finish(within: .seconds(10)))
        #expect(result.status == 0, "\(result.stderr)")
        let printed = ids(result.stdout.split(separator: "\n").map(String.init))
        #expect(try spooledIDs() == printed)

        let second = try SpoolLockHolder(spool: geolocate.stateDirectory + "/spool.sqlite")
        defer { second.release() }
        let stopped = try geolocate.start(arguments)
        #expect(waitUntil(.seconds(20)) { stopped.stdoutLines.count == 5 && stopped.stderr.contains("is locked by another process") })
        #expect(stopped.isRunning)
        kill(stopped.pid, SIGTERM)
        let interrupted = try #require(stopped.finish(within: .seconds(3)), "track ignored SIGTERM while the spool was locked")
        #expect(interrupted.status == 73, "\(interrupted.stderr)")
        #expect(interrupted.stderr.contains("5 records could not be committed"), "\(interrupted.stderr)")
        second.release()
        #expect(try spooledIDs() == printed)
    }

}

/// A separate process (python3's sqlite3) holding `BEGIN EXCLUSIVE` on a spool until released.
struct SpoolLockHolder {
    private let pid: pid_t
    private let releaseFile: String

    init(spool: String) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lock-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let held = directory + "/held", release = directory + "/release"
        releaseFile = release
        let script = """
            import os, sqlite3, sys, time
            db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
            db.execute("BEGIN EXCLUSIVE")
            open(sys.argv[2], "w").close()
            while not os.path.exists(sys.argv[3]):
                time.sleep(0.02)
            db.execute("ROLLBACK")
            """
        pid = try ProcessGroup.spawn(["python3", "-c", script, spool, held, release], outputPath: directory + "/output")
        guard waitUntil(.seconds(10), { FileManager.default.fileExists(atPath: held) }) else {
            ProcessGroup.stop(pid)
            throw GPSDFakeError(message: "could not lock \(spool)")
        }
    }

    /// Ends the transaction and the process.
    func release() {
        #expect(FileManager.default.createFile(atPath: releaseFile, contents: nil))
        ProcessGroup.stop(pid)
    }
}

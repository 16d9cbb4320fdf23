import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The harness itself: what every test's processes rely on, each checked against the failure
/// it prevents (a pipe held open by a parallel test's child, a child deaf to SIGTERM, a read
/// with no end, a port taken between its pick and the server's bind).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct HarnessTests {
    /// The descriptors a child has open, as its own shell lists them (less the one its glob
    /// opened to read the directory, closed by the time the loop tests it).
    static let listDescriptors = ["/bin/sh", "-c", #"for f in /proc/$$/fd/*; do [ -e "$f" ] && echo "${f##*/}"; done; true"#]

    /// A pipe this process holds without close-on-exec (as Foundation's `Pipe` makes them) is
    /// not inherited by a child started meanwhile: only stdin, stdout and stderr are.
    @Test func aChildInheritsOnlyItsThreeStandardDescriptors() throws {
        var ends: [Int32] = [-1, -1]
        try #require(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let run = try Spawn.run(Self.listDescriptors)
        #expect(String(decoding: run.stdout, as: UTF8.self).split(separator: "\n") == ["0", "1", "2"], "\(run)")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("harness-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let output = directory.appendingPathComponent("fds").path
        let pid = try ProcessGroup.spawn(Self.listDescriptors, outputPath: output)
        defer { ProcessGroup.stop(pid) }
        #expect(Spawn.Registry.reap(pid, within: .seconds(10))?.code == 0)
        #expect(try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n") == ["0", "1", "2"])
    }

    /// A child started from a thread that blocks SIGTERM (as Dispatch's workers block
    /// signals), by a process that ignores SIGPIPE (as the Swift runtime does), starts with
    /// nothing blocked or ignored, and SIGTERM ends it.
    @Test func aChildStartedWhileSIGTERMIsBlockedStillDiesOfSIGTERM() throws {
        var blocked = sigset_t(), previous = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &blocked, &previous)
        let started = Result { try ProcessGroup.spawn(["sleep", "60"], outputPath: "/dev/null") }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        let pid = try started.get()
        defer { ProcessGroup.stop(pid) }

        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func mask(_ field: String) -> UInt64? {
            status.split(separator: "\n").first { $0.hasPrefix(field + ":") }
                .flatMap { UInt64($0.split(separator: "\t").last ?? "", radix: 16) }
        }
        // Signals 1 to 31: glibc keeps its own two real-time signals (32, 33) to itself.
        let standard: UInt64 = (1 << 31) - 1
        #expect(mask("SigBlk").map { $0 & standard } == 0, "\(status)")
        #expect(mask("SigIgn").map { $0 & standard } == 0, "\(status)")
        kill(pid, SIGTERM)
        let ended = Spawn.Registry.reap(pid, within: .seconds(5))
        #expect(ended?.signal == SIGTERM, "sleep did not end on SIGTERM: \(String(describing: ended))")
    }

    /// A child that never ends fails its run at the time limit, and is killed.
    @Test func aRunPastItsTimeLimitIsKilledAndFails() throws {
        let started = ContinuousClock.now
        #expect(throws: Spawn.Overrun.self) { try Spawn.run(["sleep", "60"], timeLimit: .seconds(1)) }
        #expect(started.duration(to: .now) < .seconds(15))
    }

    /// A child that exits while a descendant keeps its stdout open (a daemon it left) fails
    /// the run at the time limit instead of waiting for an end of file that never comes; the
    /// descendant, in the child's process group, is killed with it.
    @Test func aDescendantHoldingTheOutputFailsTheRunAndIsKilled() throws {
        var descendant: pid_t?
        #expect {
            try Spawn.run(["/bin/sh", "-c", "sleep 60 & echo $!; exit 0"], timeLimit: .seconds(2))
        } throws: { error in
            guard let overrun = error as? Spawn.Overrun else { return false }
            descendant = pid_t(String(decoding: overrun.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
            return overrun.reason.contains("a descendant holds it")
        }
        let pid = try #require(descendant)
        // Gone, or a zombie its new parent (init, or make test's reaper) has yet to collect.
        #expect(waitUntil(.seconds(5)) {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            return stat.split(separator: ")").last?.split(separator: " ").first == "Z"
        })
    }

    /// A child that prints without end fails its run at the output limit.
    @Test func aRunPastItsOutputLimitIsKilledAndFails() throws {
        #expect {
            try Spawn.run(["yes"], outputLimit: 1 << 20)
        } throws: { error in
            (error as? Spawn.Overrun)?.reason.contains("more than 1048576 bytes") == true
        }
    }

    /// A reserved port is refused to any other bind (the kernel's ephemeral pick included),
    /// while a server that sets SO_REUSEADDR, as gpsd and mosquitto do, takes it.
    @Test func aReservedPortIsKeptForTheServerTheTestStarts() throws {
        let reservation = try Loopback.Reservation()
        let other = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(other) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(reservation.port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(other, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound == -1 && errno == EADDRINUSE)

        let broker = try MosquittoBroker()
        #expect(Loopback.isListening(broker.port))
    }

    /// A started binary whose test ends without `finish` (a failed expectation that threw)
    /// is killed when its `Running` goes away.
    @Test func aRunningBinaryDroppedByItsTestIsKilled() throws {
        let (port, held) = try Loopback.refusingPort()
        defer { close(held) }
        var pid: pid_t = 0
        do {
            // A gpsd that refuses: track retries with backoff for ever.
            let running = try GeolocateProcess().start(["track", "--source", "gpsd://127.0.0.1:\(port)", "--stdout", "--no-spool"])
            pid = running.pid
            #expect(running.isRunning)
        }
        #expect(Spawn.Registry.reapIfExited(pid)?.signal == SIGKILL)
    }
}

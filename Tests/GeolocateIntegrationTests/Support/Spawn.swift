import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// How the tests start every process: `posix_spawn` with nothing inherited but the three
/// standard descriptors, an empty signal mask and every signal at its default action, as the
/// leader of a process group of its own, and remembered until it is reaped.
///
/// Without this, a child inherits any pipe a parallel test holds open (a collector.py kept
/// the write end of an export's stdin, which then waited 600 s for its end of input), and one
/// started from a Dispatch worker (which blocks SIGTERM) or after the Swift runtime ignored
/// SIGPIPE keeps that mask and ignores the SIGTERM meant to stop it.
enum Spawn {
    struct Failure: Error, CustomStringConvertible {
        var command: String
        var code: Int32
        var description: String { "cannot start \(command): \(String(cString: strerror(code)))" }
    }

    /// A child that did not finish as `run` requires: past its time limit, or more output than
    /// allowed. It has been killed (its whole group) and reaped; what it printed is kept.
    struct Overrun: Error, CustomStringConvertible {
        var arguments: [String]
        var reason: String
        var stdout: Data
        var stderr: Data
        var description: String {
            "\(arguments.joined(separator: " ")): \(reason); stdout: \(String(decoding: stdout.suffix(2000), as: UTF8.self)); "
                + "stderr: \(String(decoding: stderr.suffix(2000), as: UTF8.self))"
        }
    }

    /// What a child left: its exit status (the signal's number if a signal ended it) and output.
    struct Outcome {
        var status: Int32
        var signal: Int32?
        var stdout: Data
        var stderr: Data
    }

    /// The longest a test waits for a child run to its end, unless it says otherwise.
    static let defaultTimeLimit: Duration = .seconds(120)
    /// The most output (stdout and stderr together) read from one child run to its end.
    static let defaultOutputLimit = 64 << 20

    /// Starts `arguments` (the first looked up on `PATH` unless it has a slash) with the given
    /// descriptors of this process as its stdin, stdout and stderr, in `directory` if given,
    /// with `environment` (else this process's), and returns its pid, which leads its group.
    static func start(_ arguments: [String], stdin: Int32, stdout: Int32, stderr: Int32,
                      environment: [String: String]? = nil, directory: String? = nil) throws -> pid_t {
        precondition(!arguments.isEmpty)
        Registry.prepare()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, source) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            try check(posix_spawn_file_actions_adddup2(&actions, source, target), arguments)
        }
        if let directory {
            guard let addChangeDirectory = CFunctions.addChangeDirectory else {
                throw Failure(command: "\(arguments[0]) in \(directory) (no posix_spawn_file_actions_addchdir_np)", code: ENOSYS)
            }
            try check(addChangeDirectory(&actions, directory), arguments)
        }
        if let addCloseFrom = CFunctions.addCloseFrom {
            try check(addCloseFrom(&actions, 3), arguments)
        } else {
            CFunctions.markEveryDescriptorCloseOnExec()
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t(), everySignal = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&everySignal)
        try check(posix_spawnattr_setsigmask(&attributes, &noSignals), arguments)
        try check(posix_spawnattr_setsigdefault(&attributes, &everySignal), arguments)
        try check(posix_spawnattr_setpgroup(&attributes, 0), arguments)
        try check(posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)),
                  arguments)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid = pid_t()
        let status = envp.map { posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, $0) }
            ?? posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        try check(status, arguments)
        Registry.add(pid)
        return pid
    }

    /// Runs `arguments` to its end and returns its output, writing `input` to its stdin (else
    /// stdin is /dev/null); stderr goes into stdout when `mergingStderr`, and stdout or stderr
    /// to a descriptor of the caller's (then not read here) when given one.
    ///
    /// Bounded, because a test must fail rather than hang: past `timeLimit`, or beyond
    /// `outputLimit` bytes, or when a descendant keeps its output open after it exits, the
    /// group is killed and `Overrun` thrown.
    static func run(_ arguments: [String], input: Data? = nil, environment: [String: String]? = nil, directory: String? = nil,
                    mergingStderr: Bool = false, stdoutDescriptor: Int32? = nil, stderrDescriptor: Int32? = nil, timeLimit: Duration = defaultTimeLimit,
                    outputLimit: Int = defaultOutputLimit) throws -> Outcome {
        let deadline = ContinuousClock.now + timeLimit
        let stdinPipe = try input.map { _ in try pipe() }
        let nullDevice = input == nil ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1
        defer { if nullDevice >= 0 { close(nullDevice) } }
        let outPipe = stdoutDescriptor == nil ? try pipe() : nil
        let errPipe = mergingStderr || stderrDescriptor != nil ? nil : try pipe()
        let childStdout = stdoutDescriptor ?? outPipe?.write ?? -1
        let childStderr = stderrDescriptor ?? (mergingStderr ? childStdout : errPipe?.write ?? -1)
        let pid: pid_t
        do {
            pid = try start(arguments, stdin: stdinPipe?.read ?? nullDevice, stdout: childStdout, stderr: childStderr,
                            environment: environment, directory: directory)
        } catch {
            for fd in [stdinPipe?.read, stdinPipe?.write, outPipe?.read, outPipe?.write, errPipe?.read, errPipe?.write] {
                if let fd { close(fd) }
            }
            throw error
        }
        for fd in [stdinPipe?.read, outPipe?.write, errPipe?.write] { if let fd { close(fd) } }
        var collected = [Data(), Data()]
        var reading: [(fd: Int32, index: Int)] = (outPipe.map { [($0.read, 0)] } ?? []) + (errPipe.map { [($0.read, 1)] } ?? [])
        var writing = stdinPipe?.write
        var pending = ArraySlice(input.map { [UInt8]($0) } ?? [])
        if let writing { _ = fcntl(writing, F_SETFL, fcntl(writing, F_GETFL) | O_NONBLOCK) }
        defer {
            for entry in reading { close(entry.fd) }
            if let writing { close(writing) }
        }
        func overrun(_ reason: String) -> Overrun {
            kill(-pid, SIGKILL)
            _ = Registry.reap(pid, within: .seconds(10))
            return Overrun(arguments: arguments, reason: reason, stdout: collected[0], stderr: collected[1])
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while !reading.isEmpty || writing != nil {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                throw overrun(Registry.hasExited(pid) ? "exited, but its output stayed open past \(timeLimit) (a descendant holds it)"
                                                      : "still running after \(timeLimit)")
            }
            var descriptors = reading.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            if let writing { descriptors.append(pollfd(fd: writing, events: Int16(POLLOUT), revents: 0)) }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            guard poll(&descriptors, nfds_t(descriptors.count), milliseconds) >= 0 || errno == EINTR else {
                throw overrun("poll failed: \(String(cString: strerror(errno)))")
            }
            for (position, entry) in reading.enumerated().reversed() where descriptors[position].revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count > 0 {
                    collected[entry.index].append(contentsOf: buffer[..<count])
                    if collected[0].count + collected[1].count > outputLimit {
                        throw overrun("printed more than \(outputLimit) bytes")
                    }
                } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                    close(entry.fd)
                    reading.remove(at: position)
                }
            }
            if let fd = writing, let last = descriptors.last, last.revents != 0 {
                let written = pending.isEmpty ? 0 : pending.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if written > 0 { pending = pending.dropFirst(written) }
                if pending.isEmpty || (written < 0 && errno != EAGAIN && errno != EINTR) || last.revents & Int16(POLLERR | POLLHUP) != 0 {
                    close(fd)
                    writing = nil
                }
            }
        }
        guard let status = Registry.reap(pid, within: deadline - ContinuousClock.now) else {
            throw overrun("closed its output but was still running after \(timeLimit)")
        }
        return Outcome(status: status.code, signal: status.signal, stdout: collected[0], stderr: collected[1])
    }

    /// Ends the group led by `pid`: SIGTERM, SIGKILL after `grace` if the leader is still
    /// running, then SIGKILL for any member that outlived the leader.
    static func stop(_ pid: pid_t, grace: Duration = .seconds(2)) {
        kill(-pid, SIGTERM)
        if Registry.reap(pid, within: grace) == nil {
            kill(-pid, SIGKILL)
            _ = Registry.reap(pid, within: .seconds(10))
        }
        kill(-pid, SIGKILL)
    }

    /// A pipe whose two ends are closed on exec, so only the child it is meant for (by dup2,
    /// which clears the flag on the copy) ever holds either end.
    static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard CFunctions.pipe2(&ends, O_CLOEXEC) == 0 else { throw Failure(command: "pipe2", code: errno) }
        return (ends[0], ends[1])
    }

    private static func check(_ result: Int32, _ arguments: [String]) throws {
        guard result == 0 else { throw Failure(command: arguments[0], code: result) }
    }

    /// The glibc functions Swift's Glibc module does not show (its headers declare them for
    /// `_GNU_SOURCE` only), found by name; nil on a glibc without them.
    private enum CFunctions {
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        typealias AddChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
        typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32

        /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34).
        static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np").map {
            unsafeBitCast($0, to: AddCloseFrom.self)
        }
        /// `posix_spawn_file_actions_addchdir_np` (glibc 2.29).
        static let addChangeDirectory: AddChangeDirectory? = dlsym(nil, "posix_spawn_file_actions_addchdir_np").map {
            unsafeBitCast($0, to: AddChangeDirectory.self)
        }

        /// `pipe2` (glibc 2.9, so always there).
        static let pipe2: Pipe2 = unsafeBitCast(dlsym(nil, "pipe2")!, to: Pipe2.self)

        /// Without closefrom: every descriptor above stderr open now is marked close-on-exec,
        /// which changes nothing for this process (the tests exec only through spawns that
        /// dup2 what the child needs, and dup2 clears the flag on the copy).
        static func markEveryDescriptorCloseOnExec() {
            let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            for fd in open.compactMap({ Int32($0) }) where fd > 2 {
                let flags = fcntl(fd, F_GETFD)
                if flags >= 0 { _ = fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
            }
        }
    }

    /// The children started and not yet reaped, so that whatever a failed test left running
    /// is killed when the test process exits, and a child is reaped by one waiter only.
    enum Registry {
        private static let lock = NSLock()
        nonisolated(unsafe) private static var running: Set<pid_t> = []
        nonisolated(unsafe) private static var exited: [pid_t: (code: Int32, signal: Int32?)] = [:]
        private static let prepared: Void = {
            // A write to a pipe whose reader is gone must fail with EPIPE, not end the test
            // process; children get SIGPIPE back at its default (POSIX_SPAWN_SETSIGDEF).
            signal(SIGPIPE, SIG_IGN)
            atexit { Registry.killEveryGroupLeft() }
        }()

        static func prepare() { _ = prepared }

        static func add(_ pid: pid_t) {
            lock.lock()
            running.insert(pid)
            // A pid the kernel gives again: what ended under it before is not this child.
            exited[pid] = nil
            lock.unlock()
        }

        /// Whether `pid` has exited (and is reaped now if it had not been).
        static func hasExited(_ pid: pid_t) -> Bool { reapIfExited(pid) != nil }

        /// Waits up to `limit` for `pid` to exit and returns how it ended; nil if still running.
        static func reap(_ pid: pid_t, within limit: Duration) -> (code: Int32, signal: Int32?)? {
            var status: (code: Int32, signal: Int32?)?
            _ = waitUntil(max(limit, .zero)) {
                status = reapIfExited(pid)
                return status != nil
            }
            return status
        }

        /// How `pid` ended, collecting it if it just did; nil while it runs.
        static func reapIfExited(_ pid: pid_t) -> (code: Int32, signal: Int32?)? {
            lock.lock()
            defer { lock.unlock() }
            if let known = exited[pid] { return known }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            guard result == pid || (result < 0 && errno == ECHILD) else { return nil }
            let signal = status & 0x7f
            let ended: (code: Int32, signal: Int32?) = result < 0 ? (-1, nil) : signal == 0 ? ((status >> 8) & 0xff, nil) : (signal, signal)
            running.remove(pid)
            exited[pid] = ended
            return ended
        }

        /// Kills the group of every child still running: the last line of defence when a test
        /// failed before stopping what it started (`make test` then reports any survivor).
        static func killEveryGroupLeft() {
            lock.lock()
            let left = running
            lock.unlock()
            for pid in left { kill(-pid, SIGKILL) }
        }
    }
}

/// Polls `condition` until it holds or `limit` passes; returns whether it held.
func waitUntil(_ limit: Duration, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = ContinuousClock.now + limit
    while true {
        if try condition() { return true }
        if ContinuousClock.now >= deadline { return false }
        usleep(10_000)
    }
}

import GeolocateConfig
import GeolocateDelivery
import GeolocateModel
import Logging
import NMEA

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How fast a replay plays: as fast as possible, or paced against the wall clock.
package enum ReplaySpeed: Sendable, Equatable, CustomStringConvertible {
    /// No pacing; virtual time still advances by the NMEA timestamps.
    case asap
    /// `factor` seconds of log per wall-clock second (`realtime` is 1).
    case factor(Double)

    /// The slowest and fastest paced factors accepted: beyond them a replay would take
    /// centuries, or pacing would be indistinguishable from `asap`.
    package static let factorRange = 0.001...1_000_000.0

    /// Parses `asap`, `realtime` or `Nx` (such as `10x` or `0.5x`).
    package init(parsing text: String) throws {
        switch text.lowercased() {
        case "asap": self = .asap
        case "realtime": self = .factor(1)
        default:
            guard text.lowercased().hasSuffix("x"), NumberText.isDecimal(text.dropLast()), let value = Double(text.dropLast()),
                  ReplaySpeed.factorRange.contains(value)
            else {
                throw GeolocateError.usage(
                    "invalid replay speed '\(text)' (use asap, realtime or a factor from 0.001x to 1000000x, such as 10x)")
            }
            self = .factor(value)
        }
    }

    package var description: String {
        switch self {
        case .asap: return "asap"
        case .factor(let value): return value == 1 ? "realtime" : "\(value)x"
        }
    }
}

/// Replays an NMEA-0183 log (or stdin) as a location source running on virtual time.
///
/// Virtual time starts at the log's first epoch and advances by the differences between the
/// receiver's UTC times of successive epochs: it crosses midnight, and a step backwards
/// (out-of-order receivers, logs joined together) does not rewind it. Its date comes from the
/// first dated epoch (RMC or ZDA), so `currentTime` is the log's time once one was read.
package final class NMEAReplaySource: LocationSource {
    package let provider = Fix.Provider.nmeaReplay
    package let name: String
    private let path: String
    private let stream: NMEAEpochStream
    private let fd: Int32
    private let speed: ReplaySpeed
    private let idleMilliseconds: Int32?
    private let pacingClock: MonotonicClock
    /// Virtual milliseconds since the first epoch of the last epoch read from the input.
    private var readElapsed = 0
    /// Virtual milliseconds since the first epoch: where the replay stands now.
    private var elapsed = 0
    private var lastTimeOfDay: Int?
    /// The log's time at its first epoch, known from the first dated epoch.
    private var startTimestamp: Int64?
    private var wallStart: Double?
    /// Epochs read but not yet played (past the end of a wait, or read to find the date),
    /// each with its virtual time.
    private var lookahead: [(epoch: Epoch, elapsed: Int)] = []
    private let readAheadDeadline: Deadline?
    /// For a receiver on a terminal (SPEC §3: live input), the system clock its fixes arrive
    /// on; `nil` for a replay, whose clock is the log's.
    private let arrivalClock: WallClock?
    /// Whether a fix dated far from the system clock was said on stderr already.
    private var notedFarDate = false
    private let logger: Logger?

    /// Whether `path` is a terminal (`/dev/ttyUSB0`, a pseudo-terminal): a receiver read
    /// without gpsd, whose fixes are live fixes (SPEC §3), not a replay's.
    package static func isTerminal(_ path: String) -> Bool {
        var info = stat()
        guard (path == "-" ? fstat(0, &info) : stat(path, &info)) == 0, (info.st_mode & S_IFMT) == S_IFCHR else { return false }
        if path == "-" { return isatty(0) == 1 }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return isatty(fd) == 1
    }

    /// Whether `path` is live input, read as it comes: a pipe, FIFO, tty or other device, or
    /// standard input that is not a regular file. A query's timeout bounds its wall time too.
    package static func isLiveInput(_ path: String) -> Bool {
        var info = stat()
        let found = path == "-" ? fstat(0, &info) == 0 : stat(path, &info) == 0
        return found && (info.st_mode & S_IFMT) != S_IFREG
    }

    /// Opens `path` (`-` for standard input).
    ///
    /// - Parameter idleMilliseconds: with a value, a wait returns after at most this much wall
    ///   time of silent input or pacing (see `waitForFix`); `nil` waits as long as needed.
    /// - Throws: `GeolocateError.inputMissing` (66) or `.unreadableInput` (65).
    /// - Parameter pacingClock: what paced replays measure and wait on.
    /// - Parameter readAheadMilliseconds: with a value, `startTime()` reads silent input for
    ///   its date at most this long (wall time, from opening) before it answers `nil`.
    /// - Parameter arrivalClock: the system clock, to date the arrivals of a receiver's fixes
    ///   when `path` is a terminal; a file, pipe or FIFO stays a replay on the log's clock.
    package init(path: String, speed: ReplaySpeed = .asap, idleMilliseconds: Int32? = nil,
                 readAheadMilliseconds: Int64? = nil, pacingClock: MonotonicClock, arrivalClock: WallClock? = nil,
                 logger: Logger? = nil) throws {
        self.pacingClock = pacingClock
        self.logger = logger
        readAheadDeadline = readAheadMilliseconds.map { Deadline(milliseconds: $0, clock: pacingClock) }
        self.path = path == "-" ? "standard input" : path
        if path == "-" {
            fd = 0
            name = "nmea:-"
        } else {
            // Opening a FIFO blocks until a writer comes, deaf to SIGTERM; with an idle limit
            // (track) it is opened at once and waited on by polling, which a stop interrupts.
            var info = stat()
            let isFIFO = stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFIFO
            let opened = open(path, O_RDONLY | (isFIFO && idleMilliseconds != nil ? O_NONBLOCK : 0))
            if opened < 0 {
                let code = errno
                if code == ENOENT { throw GeolocateError.inputMissing(path: path) }
                throw GeolocateError.unreadableInput(reason: "\(path): \(ErrorText.posix(code))")
            }
            if fstat(opened, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR {
                close(opened)
                throw GeolocateError.unreadableInput(reason: "\(path) is a directory, not an NMEA log")
            }
            fd = opened
            name = "nmea:\(path)"
        }
        self.speed = speed
        self.idleMilliseconds = idleMilliseconds
        self.arrivalClock = isatty(fd) == 1 ? arrivalClock : nil
        stream = NMEAEpochStream(fileDescriptor: fd, idleMilliseconds: idleMilliseconds,
                                 monotonicMilliseconds: { Int64(pacingClock.nowSeconds * 1000) })
    }

    deinit { if fd != 0 { close(fd) } }

    /// What the replay contained so far (accepted, rejected and unknown sentences).
    package var statistics: NMEAStatistics { stream.statistics }

    package var readSummary: String? {
        let read = statistics
        let rejected = read.skipped == 0 ? "no line rejected" : "\(read.skipped) \(read.skipped == 1 ? "line" : "lines") rejected (\(read.rejectedKinds))"
        let frames = read.ubxFrames == 0 ? "" : ", \(read.ubxFrames) UBX \(read.ubxFrames == 1 ? "frame" : "frames")"
        return "\(name): \(read.accepted - read.unknown) sentences read, \(read.unknown) of other types\(frames), \(rejected)"
    }

    /// The log's time where the replay stands: its start plus the virtual time played, once
    /// a dated epoch was read; `nil` before.
    package var currentTime: Int64? { arrivalClock == nil ? startTimestamp.map { $0 + Int64(elapsed) } : nil }

    /// Whether the input is a receiver on a terminal, read as a live source.
    package var isLive: Bool { arrivalClock != nil }

    /// Why the login gate may not trust what was opened, or `nil` (SPEC §14): a terminal must
    /// be a character device owned by root (a serial port; a pseudo-terminal is its opener's),
    /// and a file, FIFO or pipe root's and writable by no one else, judged on the descriptor
    /// opened; and the directories on the way to it (as written and as linked) root's alone,
    /// since whoever may change one chooses what the name opens.
    package func gateProblem() -> String? {
        if let problem = openedProblem() { return problem }
        guard fd != 0 else { return nil }  // pam_exec's standard input has no path to judge
        // Relative to the caller's working directory, which `su` lets the caller choose.
        guard path.hasPrefix("/") else { return "\(path) is a relative path, which the caller's working directory would resolve" }
        if !isLive { return TrustedPath.problem(path) }
        // A serial port is root's and its group's (dialout): only the directories are judged.
        func directory(of path: String) -> String {
            guard let slash = path.lastIndex(of: "/") else { return "." }
            return slash == path.startIndex ? "/" : String(path[..<slash])
        }
        var directories = [directory(of: path)]
        if let real = realpath(path, nil) {
            directories.append(directory(of: String(cString: real)))
            free(real)
        }
        return directories.lazy.compactMap { TrustedPath.problem($0) }.first
    }

    /// `gateProblem`'s judgement of the descriptor itself.
    private func openedProblem() -> String? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return "\(path) cannot be examined (\(ErrorText.posix(errno)))" }
        if isLive {
            guard info.st_uid == 0 else {
                return "\(path) is a terminal of uid \(info.st_uid), not a serial port owned by root, so another user controls what it says"
            }
            return nil
        }
        guard info.st_uid == 0, info.st_mode & 0o022 == 0 else {
            return "\(path) belongs to uid \(info.st_uid) (mode \(String(info.st_mode & 0o7777, radix: 8))), not to root alone, so another user controls what it says"
        }
        return nil
    }

    /// The log's time at its first epoch, reading ahead (without playing) to the first dated
    /// epoch when none was read yet; `nil` when the log has no date at all.
    /// - Throws: `GeolocateError.unreadableInput` when the input cannot be read or holds no NMEA.
    package func startTime() throws -> Int64? {
        guard arrivalClock == nil else { return nil }
        while startTimestamp == nil, !hasEnded {
            do {
                guard let next = try readEpoch() else { break }
                lookahead.append(next)
            } catch is NMEAReader.Idle {
                if readAheadDeadline?.hasPassed ?? false { break }
            }
        }
        return startTimestamp
    }

    /// A replay holds nothing before it is read: last known comes from geolocate's own store.
    package func heldFix() throws -> Fix? { nil }

    /// Whether the whole log has been read.
    package private(set) var hasEnded = false

    /// Whether the last read found the input silent for the idle limit (a pipe, FIFO or tty).
    private var inputIsIdle = false

    package private(set) var lastWaitWasIdle = false

    /// The epoch in progress, when the input has gone silent: everything the receiver sent
    /// for it has come. Reading a file, or pacing, it has none: the rest of that epoch, and
    /// the next ones, are still to be read, not late.
    package func finishPending() -> Fix? {
        guard case .asap = speed, inputIsIdle, lookahead.isEmpty else { return nil }
        return stream.finishEpoch()?.fix.map { Fix($0, provider: .nmeaReplay) }
    }

    /// Waits up to `timeoutMilliseconds` of log time for the next fix.
    ///
    /// An epoch past the wait's end is kept for the next wait. With an idle limit
    /// (`SourceOpening.idleMilliseconds`) it also returns `.timedOut`, with no log time passed,
    /// when the input stayed silent that long or pacing holds the next epoch back: the caller
    /// (track) then commits and checks for a stop before waiting again.
    package func waitForFix(timeoutMilliseconds: Int) throws -> SourceWait {
        lastWaitWasIdle = false
        if let arrivalClock { return try waitForLiveFix(timeoutMilliseconds: timeoutMilliseconds, clock: arrivalClock) }
        let limit = elapsed + timeoutMilliseconds
        while true {
            let next: (epoch: Epoch, elapsed: Int)
            if !lookahead.isEmpty {
                next = lookahead.removeFirst()
            } else {
                do {
                    guard let read = try readEpoch() else { return .timedOut }
                    next = read
                    inputIsIdle = false
                } catch is NMEAReader.Idle {
                    inputIsIdle = true
                    lastWaitWasIdle = true
                    return .timedOut
                }
            }
            if next.elapsed > limit {
                // Nothing happens before that epoch, so the replay moves on to it: track's
                // short waits would otherwise step through the gap one slice at a time.
                lookahead.insert(next, at: 0)
                elapsed = next.elapsed
                return .timedOut
            }
            if !waitUntilDue(next.elapsed) {
                lookahead.insert(next, at: 0)
                lastWaitWasIdle = true
                return .timedOut
            }
            elapsed = max(elapsed, next.elapsed)
            if let fix = next.epoch.fix { return .fix(Fix(fix, provider: .nmeaReplay)) }
        }
    }

    /// Waits up to `timeoutMilliseconds` of wall time for a receiver's next fix, dated by its
    /// arrival as gpsd's are: the receiver's own time says nothing about when it came.
    /// - Throws: `SourceError.unavailable` when the receiver hangs up or sends what is no NMEA:
    ///   a receiver gone, as gpsd gone is, not a log that cannot be read.
    private func waitForLiveFix(timeoutMilliseconds: Int, clock: WallClock) throws -> SourceWait {
        let deadline = Deadline(milliseconds: Int64(timeoutMilliseconds), clock: pacingClock)
        while !deadline.hasPassed {
            let read: (epoch: Epoch, elapsed: Int)?
            do {
                read = try readEpoch()
            } catch is NMEAReader.Idle {
                inputIsIdle = true
                lastWaitWasIdle = true
                return .timedOut
            } catch let error as GeolocateError {
                throw SourceError.unavailable("\(name): the receiver sends no NMEA (\(error))")
            }
            guard let read else { throw SourceError.unavailable("\(name): the receiver hung up (end of input)") }
            inputIsIdle = false
            elapsed = read.elapsed
            if let fix = read.epoch.fix { return .fix(arrived(Fix(fix, provider: .nmeaReplay), clock: clock)) }
        }
        return .timedOut
    }

    /// `fix` as it arrived now on `clock`: its arrival, this boot and the skew of its time.
    private func arrived(_ fix: Fix, clock: WallClock) -> Fix {
        var fix = fix
        let now = clock.nowMilliseconds
        let boot = clock.boot
        fix.receivedAt = now
        fix.receivedBoot = boot?.id
        fix.receivedUptime = boot?.uptimeMilliseconds
        let skew = now.subtractingClamped(fix.timestamp)
        fix.clockSkewMilliseconds = skew
        if !notedFarDate, skew.magnitude > UInt64(FixLimits.maxFutureSkewMilliseconds) {
            notedFarDate = true
            logger?.warning("\(SignalText.farDate(source: name, timestamp: fix.timestamp, skew: skew))")
        }
        return fix
    }

    /// The next epoch of the input with its virtual time, or `nil` at its end.
    /// - Throws: `GeolocateError.unreadableInput` naming the file when it cannot be read, or
    ///   when it ends without one sentence geolocate reads (a file that is not NMEA).
    private func readEpoch() throws -> (epoch: Epoch, elapsed: Int)? {
        let next: Epoch?
        do {
            next = try stream.next()
        } catch let error as NMEAReadError {
            throw GeolocateError.unreadableInput(reason: "\(path): \(error.reason)")
        }
        guard let epoch = next else {
            hasEnded = true
            let read = stream.statistics
            if read.accepted == read.unknown { throw GeolocateError.unreadableInput(reason: NMEAReplaySource.notNMEA(path, read)) }
            return nil
        }
        if let previous = lastTimeOfDay {
            var delta = epoch.timeOfDay - previous
            if delta < -43_200_000 { delta += 86_400_000 }  // crossed midnight
            // A step back (out-of-order receiver, or logs joined together) does not rewind time.
            if delta > 0 { readElapsed += delta }
        }
        lastTimeOfDay = epoch.timeOfDay
        if let timestamp = epoch.timestamp {
            if let start = startTimestamp {
                // A date that moves on (a log joined to the next day's) moves time with it.
                if timestamp - start > Int64(readElapsed) { readElapsed = Int(clamping: timestamp - start) }
            } else {
                startTimestamp = timestamp - Int64(readElapsed)
            }
        }
        return (epoch, readElapsed)
    }

    /// Why a log holding no sentence geolocate reads is refused, with what it held instead.
    static func notNMEA(_ path: String, _ read: NMEAStatistics) -> String {
        var held: [String] = []
        if read.skipped > 0 { held.append("\(read.skipped) \(read.skipped == 1 ? "line" : "lines") rejected: \(read.rejectedKinds)") }
        if read.unknown > 0 { held.append("\(read.unknown) \(read.unknown == 1 ? "sentence" : "sentences") of types geolocate does not read") }
        if read.ubxFrames > 0 {
            held.append("\(read.ubxFrames) UBX \(read.ubxFrames == 1 ? "frame" : "frames"): the fixes come from the receiver's NMEA, which it must send too")
        }
        return "\(path): no NMEA sentence geolocate reads (\(held.isEmpty ? "no lines" : held.joined(separator: "; ")))"
    }

    /// Sleeps until the wall clock reaches the current virtual time under the replay speed;
    /// with an idle limit, sleeps at most that long and returns whether the time was reached.
    private func waitUntilDue(_ virtualTime: Int) -> Bool {
        guard case .factor(let factor) = speed else { return true }
        let now = pacingClock.nowSeconds
        let start = wallStart ?? now
        wallStart = start
        let due = start + Double(virtualTime) / 1000 / factor
        guard due > now else { return true }
        let slice = idleMilliseconds.map { Double($0) / 1000 } ?? .infinity
        let wait = min(due - now, slice)
        pacingClock.sleep(seconds: wait)
        return wait >= due - now
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts of what an NMEA stream contained, for diagnostics and tests.
public struct NMEAStatistics: Sendable, Equatable {
    /// Sentences that passed framing and checksum checks.
    public var accepted = 0
    /// Lines of text that are not NMEA sentences (no `$` where one starts), such as a
    /// configuration file replayed by mistake, or junk before a sentence.
    public var notNMEA = 0
    /// Sentences whose checksum does not match their bytes.
    public var badChecksum = 0
    /// Sentences holding bytes outside printable ASCII: binary data or line noise.
    public var binary = 0
    /// Sentences cut short: no checksum in a stream that has them, cut by the next `$`, or
    /// shorter than an address field.
    public var truncated = 0
    /// Lines longer than `NMEAReader.maximumLineLength`.
    public var tooLong = 0
    /// Accepted sentences of a type geolocate does not use (proprietary, navigation, …).
    public var unknown = 0
    /// Bytes read from the input.
    public var bytes = 0
    /// UBX frames whose length and checksum were right (SPEC §15), of any message.
    public var ubxFrames = 0
    /// UBX frames skipped: a wrong checksum, a length past `UBXFrame.maximumPayloadLength`, or
    /// cut off by the end of the input.
    public var badUBX = 0

    public init() {}

    /// Lines and sentences that were rejected, of every kind.
    public var skipped: Int { notNMEA + badChecksum + binary + truncated + tooLong + badUBX }

    /// The rejected ones by kind, such as "10 not NMEA, 2 bad checksum"; empty when none.
    public var rejectedKinds: String {
        [(notNMEA, "not NMEA"), (badChecksum, "bad checksum"), (binary, "binary"), (truncated, "truncated"),
         (tooLong, "too long"), (badUBX, "bad UBX frame")].filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
    }
}

/// Splits a byte stream into checksummed NMEA-0183 sentences and UBX frames, skipping and
/// counting broken lines and frames.
///
/// It reads large blocks straight from a file descriptor and hands each sentence body
/// (the bytes between `$` and `*`) to the caller without copying, so memory stays constant
/// whatever the file size. Every `$` starts a sentence, which is how a receiver's spliced output
/// (`$GPGGA,12$GPRMC,...`) keeps its second sentence; every `B5 62` starts a UBX frame, read by
/// its length (its bytes may hold newlines and `$`), checked by its checksum and handed to
/// the caller's `frames`, so a u-blox port's mix of both loses neither.
public final class NMEAReader {
    /// The longest line accepted, in bytes; SPEC §2 rejects anything longer.
    public static let maximumLineLength = 1024

    public private(set) var statistics = NMEAStatistics()

    private let fd: Int32
    private let base: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private var filled = 0
    private var lineStart = 0
    private var scanIndex = 0
    private var discardingLongLine = false
    /// The first `B5` at or after `syncSearchedTo` is at `nextSync`; none lies in
    /// `[lineStart, syncSearchedTo)` but there. One `memchr` per block finds them, so a stream
    /// without UBX pays a comparison per line.
    private var nextSync: Int?
    private var syncSearchedTo = 0
    /// A UBX frame starts at `lineStart` and is not all in the buffer yet.
    private var awaitingFrame = false
    /// The text at `lineStart` follows a frame that failed its checks: its bytes are that frame's,
    /// counted once as `badUBX`, not again as a line that is not NMEA.
    private var restOfBadFrame = false

    private var endOfInput = false
    /// Set once a sentence with a checksum was seen: from then on a missing checksum means a
    /// truncated line. Streams that never send checksums (some timing receivers) stay accepted.
    private var streamUsesChecksums = false

    /// With a value, a read that gets no byte within this many milliseconds of wall time throws
    /// `Idle` instead of blocking on.
    private let idleMilliseconds: Int32?

    /// With a value, reading this many bytes without `body` asking to stop (across calls that
    /// `Idle` cut short) throws `unreadableInput`: input such as `/dev/zero` never ends and never
    /// holds a sentence, and would otherwise be read forever.
    private let maximumBytesPerCall: Int?

    /// Thrown by `forEachSentence` when the input stayed silent for the idle limit, or kept
    /// coming that long without `body` asking to stop; calling it again continues where it
    /// stopped.
    public struct Idle: Error {}

    /// `statistics.bytes` when `body` last asked to stop: `maximumBytesPerCall` counts from
    /// there, across calls that `Idle` cut short.
    private var bytesAtLastStop = 0

    /// The caller's monotonic clock in milliseconds, which bounds how long input may keep
    /// coming without `body` asking to stop; `nil` leaves that unbounded.
    private let monotonicMilliseconds: (() -> Int64)?

    /// Creates a reader over an open file descriptor; the caller keeps ownership of `fd`.
    ///
    /// - Parameter idleMilliseconds: how long a read may wait for bytes before `Idle` is
    ///   thrown, so a caller reading an idle pipe, FIFO or tty can commit and check for a
    ///   stop meanwhile; `nil` blocks as long as the input does.
    /// - Parameter maximumBytesPerCall: the most a `forEachSentence` call may read before its
    ///   body asks to stop; `nil` reads any amount, as a regular file always may.
    /// - Parameter monotonicMilliseconds: with `idleMilliseconds`, the clock on which a call
    ///   that keeps reading without `body` asking to stop throws `Idle` after that long.
    public init(fileDescriptor fd: Int32, blockSize: Int = 1 << 20, idleMilliseconds: Int32? = nil,
                maximumBytesPerCall: Int? = nil, monotonicMilliseconds: (() -> Int64)? = nil) {
        self.fd = fd
        self.monotonicMilliseconds = monotonicMilliseconds
        capacity = blockSize + max(NMEAReader.maximumLineLength + 2, UBXFrame.maximumPayloadLength + 8)
        base = .allocate(capacity: capacity)
        self.idleMilliseconds = idleMilliseconds
        // A regular file ends: whatever garbage it holds is read past (SPEC §2), and only
        // input without an end (`/dev/zero`, a pipe) is bounded.
        var info = stat()
        let isRegularFile = fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        self.maximumBytesPerCall = isRegularFile ? nil : maximumBytesPerCall
    }

    deinit { base.deallocate() }

    /// Calls `body` with each valid sentence body until the input ends or `body` returns false.
    ///
    /// Calling it again after `body` returned false continues with the next sentence.
    /// - Throws: `NMEAReadError` when the descriptor cannot be read, or when
    ///   `maximumBytesPerCall` bytes pass without `body` asking to stop.
    /// Each UBX frame whose checksum is right goes to `frames` (a closure that does not escape
    /// costs no reference counting per frame); a frame without is skipped and counted.
    public func forEachSentence(_ body: (UnsafeBufferPointer<UInt8>) throws -> Bool,
                                frames: (UBXFrame) -> Void = { _ in }) throws {
        let started = monotonicMilliseconds?()
        while true {
            awaitingFrame = false
            scanning: while scanIndex < filled {
                let newline = memchr(base + scanIndex, 0x0A, filled - scanIndex)
                let end = newline.map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) } ?? filled
                if discardingLongLine {
                    // An over-long run ends at its newline, at the next `$` or at the next UBX
                    // frame, whichever comes first: a sentence glued to the end of garbage is read.
                    let dollar = memchr(base + scanIndex, 0x24, end - scanIndex)
                        .map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) }
                    if let sync = frameStart(from: scanIndex, before: dollar ?? end) {
                        discardingLongLine = false
                        lineStart = sync
                        scanIndex = sync
                        continue
                    }
                    if let dollar {
                        discardingLongLine = false
                        lineStart = dollar
                        scanIndex = lineStart
                        continue
                    }
                    guard newline != nil else {
                        lineStart = filled
                        scanIndex = filled
                        break
                    }
                    discardingLongLine = false
                    lineStart = end + 1
                    scanIndex = lineStart
                    continue
                }
                // The frames before the line's end, each read by its length; the line end found
                // stays the line end unless a frame reached past it (binary holds newlines).
                while let sync = frameStart(from: lineStart, before: end) {
                    switch try readFrame(at: sync, body, frames) {
                    case .read: if lineStart > end { continue scanning }
                    case .stop:
                        bytesAtLastStop = statistics.bytes
                        return
                    case .incomplete:
                        awaitingFrame = true
                        break scanning
                    }
                }
                guard newline != nil else {
                    scanIndex = filled
                    break
                }
                let start = lineStart
                lineStart = end + 1
                scanIndex = lineStart
                if try !handleLine(base + start, count: end - start, body) {
                    bytesAtLastStop = statistics.bytes
                    return
                }
            }
            // A line longer than the limit: counted once, and dropped up to the first `$`
            // past its limit, or else up to its end (SPEC §2: constant memory, and what
            // follows is read).
            while !discardingLongLine, !awaitingFrame, filled - lineStart > NMEAReader.maximumLineLength + 2 {
                statistics.tooLong += 1
                let resume = lineStart + NMEAReader.maximumLineLength + 1
                if let dollar = memchr(base + resume, 0x24, filled - resume) {
                    lineStart = base.distance(to: dollar.assumingMemoryBound(to: UInt8.self))
                } else {
                    discardingLongLine = true
                    lineStart = filled
                }
            }
            if endOfInput {
                if awaitingFrame {
                    // A frame the input ended inside of: skipped, and the bytes after its
                    // sync read as text, which may still hold a sentence.
                    statistics.badUBX += 1
                    restOfBadFrame = true
                    lineStart = min(lineStart + 2, filled)
                    scanIndex = lineStart
                    awaitingFrame = false
                    if lineStart < filled { continue }
                }
                if filled > lineStart && !discardingLongLine {
                    let start = lineStart
                    lineStart = filled
                    _ = try handleLine(base + start, count: filled - start, body)
                }
                return
            }
            if let limit = maximumBytesPerCall, statistics.bytes - bytesAtLastStop >= limit {
                throw NMEAReadError(reason: "\(limit >> 20) MiB without a timed NMEA sentence (is it an NMEA log?)")
            }
            // Input that keeps coming without ever completing what `body` waits for (garbage at
            // the wrong baud rate, one epoch time repeated) returns control as silence does.
            if let idleMilliseconds, let started, let now = monotonicMilliseconds?(), now - started >= Int64(idleMilliseconds) {
                throw Idle()
            }
            try refill()
        }
    }

    private func refill() throws {
        if lineStart > 0 {
            let rest = filled - lineStart
            if rest > 0 { memmove(base, base + lineStart, rest) }
            filled = rest
            scanIndex -= lineStart
            nextSync = nextSync.flatMap { $0 >= lineStart ? $0 - lineStart : nil }
            syncSearchedTo = max(0, syncSearchedTo - lineStart)
            lineStart = 0
        }
        if let idleMilliseconds {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, idleMilliseconds)
            if ready == 0 || (ready < 0 && errno == EINTR) { throw Idle() }
        }
        while true {
            let n = read(fd, base + filled, capacity - filled)
            if n < 0 {
                if errno == EINTR { continue }
                // A FIFO opened without blocking (track) whose writer has nothing yet.
                if errno == EAGAIN, idleMilliseconds != nil { throw Idle() }
                throw NMEAReadError(errno: errno)
            }
            if n == 0 { endOfInput = true }
            filled += n
            statistics.bytes += n
            return
        }
    }

    /// Where a UBX frame may start in `[from, end)`: a `B5` followed by `62`, or by nothing yet.
    @inline(__always)
    private func frameStart(from: Int, before end: Int) -> Int? {
        while true {
            if let sync = nextSync, sync >= from {
                guard sync < end else { return nil }
                if sync + 1 >= filled || base[sync + 1] == UBXFrame.sync2 { return sync }
                nextSync = nil  // a lone `B5`: text (or noise) that is no frame
                syncSearchedTo = sync + 1
                continue
            }
            let start = max(from, syncSearchedTo)
            guard start < filled else { return nil }
            if let found = memchr(base + start, Int32(UBXFrame.sync1), filled - start) {
                let sync = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                nextSync = sync
                syncSearchedTo = sync + 1
            } else {
                nextSync = nil
                syncSearchedTo = filled
                return nil
            }
        }
    }

    private enum FrameRead { case read, stop, incomplete }

    /// Reads the frame at `sync` after the text before it; `.incomplete` leaves `lineStart` at
    /// `sync` for the next block. A frame that fails its checks is counted and its sync skipped,
    /// and what follows is read as text.
    private func readFrame(at sync: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> Bool,
                           _ frames: (UBXFrame) -> Void) throws -> FrameRead {
        if sync > lineStart {
            let start = lineStart
            lineStart = sync
            scanIndex = sync
            if try !handleLine(base + start, count: sync - start, body) { return .stop }
        }
        lineStart = sync
        scanIndex = sync
        let available = filled - sync
        guard available >= UBXFrame.headerLength + 2 else { return .incomplete }
        let length = Int(base[sync + 4]) | Int(base[sync + 5]) << 8
        guard length <= UBXFrame.maximumPayloadLength else {
            statistics.badUBX += 1
            restOfBadFrame = true
            lineStart = sync + 2
            scanIndex = lineStart
            return .read
        }
        let total = UBXFrame.headerLength + length + 2
        guard available >= total else { return .incomplete }
        let checksum = UBXFrame.checksum(base + sync + 2, count: length + 4)
        let sent = UInt16(base[sync + total - 2]) | UInt16(base[sync + total - 1]) << 8
        guard checksum == sent else {
            statistics.badUBX += 1
            restOfBadFrame = true
            lineStart = sync + 2
            scanIndex = lineStart
            return .read
        }
        statistics.ubxFrames += 1
        lineStart = sync + total
        scanIndex = lineStart
        frames(UBXFrame(messageClass: base[sync + 2], messageID: base[sync + 3],
                        payload: UnsafeBufferPointer(start: base + sync + UBXFrame.headerLength, count: length)))
        return .read
    }

    /// Validates one physical line and passes its sentences on; returns false to stop.
    ///
    /// Each `$` starts a sentence, so two sentences run together on one line are both read
    /// and an unterminated one cut short by the next is skipped alone.
    @inline(__always)
    private func handleLine(
        _ line: UnsafeMutablePointer<UInt8>, count rawCount: Int,
        _ body: (UnsafeBufferPointer<UInt8>) throws -> Bool
    ) throws -> Bool {
        var count = rawCount
        while count > 0 && line[count - 1] == 0x0D { count -= 1 }
        if count == 0 || line[0] == 0x23 { return true }  // blank, or a '#' comment as in gpsd's logs
        if count > NMEAReader.maximumLineLength {
            statistics.tooLong += 1
            // Read again from the first `$` past the limit, as a line that never ends is.
            let resume = NMEAReader.maximumLineLength + 1
            guard let dollar = memchr(line + resume, 0x24, count - resume) else { return true }
            let start = line.distance(to: dollar.assumingMemoryBound(to: UInt8.self))
            return try handleLine(line + start, count: count - start, body)
        }
        if line[0] != 0x24, !restOfBadFrame {
            // Junk before the first sentence; the sentence (if any) after it is still read.
            statistics.notNMEA += 1
        }
        restOfBadFrame = false
        var start = 0
        while start < count {
            if line[start] != 0x24 { start += 1; continue }
            var end = start + 1
            while end < count && line[end] != 0x24 { end += 1 }
            if try !handleSentence(line + start, count: end - start, cutShort: end < count, body) {
                return false
            }
            start = end
        }
        return true
    }

    /// Checks one `$…` sentence: printable ASCII, checksum, minimum length.
    @inline(__always)
    private func handleSentence(
        _ sentence: UnsafeMutablePointer<UInt8>, count: Int, cutShort: Bool,
        _ body: (UnsafeBufferPointer<UInt8>) throws -> Bool
    ) throws -> Bool {
        let star: Int
        if let found = memchr(sentence + 1, 0x2A, count - 1) {
            star = sentence.distance(to: found.assumingMemoryBound(to: UInt8.self))
        } else {
            star = -1
        }
        guard let checksum = NMEAReader.checksum(sentence + 1, count: (star >= 0 ? star : count) - 1) else {
            statistics.binary += 1
            return true
        }
        if star < 0 {
            // Without a checksum, a sentence cut off by the next `$` cannot be trusted.
            if streamUsesChecksums || cutShort {
                statistics.truncated += 1
                return true
            }
        } else {
            streamUsesChecksums = true
            guard count - star == 3,
                  let high = NMEAReader.hexValue(sentence[star + 1]),
                  let low = NMEAReader.hexValue(sentence[star + 2]),
                  high << 4 | low == checksum
            else {
                statistics.badChecksum += 1
                return true
            }
        }
        let bodyEnd = star >= 0 ? star : count
        // A body shorter than an address field ("GPGGA") is a truncated line.
        if bodyEnd < 6 {
            statistics.truncated += 1
            return true
        }
        statistics.accepted += 1
        return try body(UnsafeBufferPointer(start: sentence + 1, count: bodyEnd - 1))
    }

    /// XOR of `count` bytes, or `nil` if any is outside printable ASCII (0x20…0x7E).
    ///
    /// Eight bytes at a time: a sentence is mostly digits and commas, and this loop is where a
    /// replay spends a third of its time.
    @inline(__always)
    private static func checksum(_ bytes: UnsafeMutablePointer<UInt8>, count: Int) -> UInt8? {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var folded: UInt64 = 0
        var bad: UInt64 = 0
        var i = 0
        let raw = UnsafeRawPointer(bytes)
        while i + 8 <= count {
            let word = raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            folded ^= word
            // High bit set in a byte where: byte < 0x20, byte >= 0x80, or byte == 0x7F.
            bad |= (word &- ones &* 0x20) & ~word & highs
            bad |= word & highs
            let del = word ^ (ones &* 0x7F)
            bad |= (del &- ones) & ~del & highs
            i += 8
        }
        if bad != 0 { return nil }
        var result = UInt8(truncatingIfNeeded: folded)
        for shift in stride(from: 8, to: 64, by: 8) { result ^= UInt8(truncatingIfNeeded: folded >> UInt64(shift)) }
        while i < count {
            let byte = bytes[i]
            if byte < 0x20 || byte > 0x7E { return nil }
            result ^= byte
            i += 1
        }
        return result
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }

    /// Records that an accepted sentence had a type geolocate does not use.
    func countUnknown() { statistics.unknown += 1 }
}

/// Input that cannot be read, or that holds no NMEA for too long.
public struct NMEAReadError: Error, Equatable, CustomStringConvertible {
    /// What went wrong, in a few words: "input/output error".
    public let reason: String

    public init(reason: String) { self.reason = reason }

    init(errno code: Int32) {
        let text = String(cString: strerror(code))
        reason = text.prefix(1).lowercased() + text.dropFirst()
    }

    public var description: String { reason }
}

/// Reads sentences from a descriptor and assembles them into epochs, one at a time.
public final class NMEAEpochStream {
    private let reader: NMEAReader
    /// Not checked for exclusive access: it is only touched by `next()` and `finishEpoch()`,
    /// which a stream's one reader calls in turn, and a check on every sentence cost more than
    /// the sentence.
    @exclusivity(unchecked) private var assembler: EpochAssembler
    /// The UBX verdicts read so far, matched to each epoch as it closes. Unchecked for the
    /// same reason as `assembler`: one reader, and a check at every frame.
    @exclusivity(unchecked) private var verdicts = ReceiverVerdictTracker()
    private var finished = false
    /// A read failure to report after the epoch that was in progress when it happened.
    private var pendingFailure: NMEAReadError?

    /// The most input read for one epoch: real logs have one every second or so, in a few
    /// KiB, so this much without one is no NMEA log.
    public static let maximumBytesPerEpoch = 64 << 20

    /// - Parameter idleMilliseconds: see `NMEAReader.init`: `next()` throws `NMEAReader.Idle`
    ///   after this long without input (or, on `monotonicMilliseconds`, without an epoch), and
    ///   can be called again.
    public init(fileDescriptor fd: Int32, idleMilliseconds: Int32? = nil,
                monotonicMilliseconds: (() -> Int64)? = nil, readsVerdicts: Bool = true) {
        reader = NMEAReader(fileDescriptor: fd, idleMilliseconds: idleMilliseconds,
                            maximumBytesPerCall: NMEAEpochStream.maximumBytesPerEpoch, monotonicMilliseconds: monotonicMilliseconds)
        assembler = EpochAssembler()
        self.readsVerdicts = readsVerdicts
    }

    /// Whether UBX frames are decoded for their verdicts; without, they are only checked and
    /// skipped (the benchmark's measure of what decoding costs).
    private let readsVerdicts: Bool

    /// The UBX messages with a verdict read so far (NAV-PVT, NAV-STATUS, NAV-SIG, SEC-SIG, SEC-OSNMA).
    public var verdictMessagesRead: Int { verdicts.messagesRead }
    /// Their names.
    public var verdictMessageNames: Set<String> { verdicts.messageNames }

    /// The receiver's verdict for the epoch at `timeOfDay` from what was read so far: for a fix
    /// another reader took (gpsd's), whose epoch may have been read here or only its neighbours.
    public func verdict(forTimeOfDay timeOfDay: Int) -> ReceiverVerdict? {
        verdicts.verdict(forTimeOfDay: timeOfDay)
    }

    /// Gives `epoch`'s fix the receiver's verdicts of its time, in place: an epoch is some
    /// hundreds of bytes, and copying it was most of what UBX cost a replay.
    private func judge(_ epoch: inout Epoch?) {
        guard verdicts.messagesRead > 0, let time = epoch?.timeOfDay else { return }
        let verdict = verdicts.judge(epochAt: time)
        epoch?.fix?.receiverVerdict = verdict
    }

    /// What the stream contained so far.
    public var statistics: NMEAStatistics { reader.statistics }

    /// Ends the input here: the epoch in progress, if any; `next()` then returns `nil`.
    public func finishEpoch() -> Epoch? {
        guard !finished else { return nil }
        finished = true
        var last = assembler.finish()
        judge(&last)
        return last
    }

    /// The next epoch, or `nil` at the end of the input.
    ///
    /// - Throws: `NMEAReadError` when the input cannot be read or holds no
    ///   NMEA for `maximumBytesPerEpoch`: after the epoch in progress, which is not lost.
    public func next() throws -> Epoch? {
        if let failure = pendingFailure.take() { throw failure }
        if finished { return nil }
        var produced: Epoch?
        let reader = self.reader
        do {
            let readsVerdicts = self.readsVerdicts
            try reader.forEachSentence({ body in
                guard let sentence = NMEASentence.parse(body) else {
                    reader.countUnknown()
                    return true
                }
                return !self.assembler.add(sentence, completing: &produced)
            }, frames: { frame in
                guard readsVerdicts, let message = UBXMessage(frame) else { return }
                self.verdicts.add(message, openEpochTime: self.assembler.openEpochTime)
            })
        } catch let failure as NMEAReadError {
            finished = true
            var last = assembler.finish()
            guard last != nil else { throw failure }
            pendingFailure = failure
            judge(&last)
            return last
        }
        if produced == nil {
            finished = true
            produced = assembler.finish()
        }
        judge(&produced)
        return produced
    }
}

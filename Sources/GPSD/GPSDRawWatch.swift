import Foundation
import GeolocateModel
import Logging
import NMEA

#if canImport(Glibc)
import Glibc
#endif

/// A second connection to gpsd that watches the receiver's own packets
/// (`?WATCH={"enable":true,"raw":2}`), read for the verdicts a u-blox receiver sends in UBX
/// (SPEC §15): gpsd 3.22 decodes none of them, and on the JSON connection binary packets mixed
/// into the JSON could not be told apart by libgps.
///
/// The packets go through the same `NMEAEpochStream` as a receiver on a terminal, so the
/// receiver's NMEA epochs carry their verdicts, matched by time exactly as there; a TPV from
/// gpsd takes the verdict of the epoch of its time. A plain socket, no libgps: it is the one
/// thing libgps cannot do.
final class GPSDRawWatch {
    private let fd: Int32
    private let stream: NMEAEpochStream
    /// The UTC times of day of the receiver's epochs read so far: the last few.
    private var epochs: [Int] = []
    /// The connection closed or failed (gpsd drops a client that does not read for long, as
    /// during a long time without a fix): no more verdicts from it; the source opens another.
    private(set) var lost = false

    /// Connects to gpsd and starts a raw watch; `nil` (said at debug) when that fails within
    /// `deadline`, since verdicts are extra evidence and never a reason to lose the fix.
    init?(host: String, port: Int, deadline: Deadline, elapsed: MonotonicClock, logger: Logger) {
        guard let fd = GPSDRawWatch.connect(host: host, port: port, deadline: deadline) else {
            logger.debug("gpsd://\(host):\(port): no raw watch for the receiver's UBX verdicts (could not connect)")
            return nil
        }
        let watch = Array("?WATCH={\"enable\":true,\"raw\":2};".utf8)
        guard watch.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == watch.count else {
            close(fd)
            return nil
        }
        self.fd = fd
        // Reads wait at most a millisecond, and give control back after a millisecond of input
        // that completes no epoch (a flood of noise), so the caller's deadline is checked:
        // a fix's path pays nothing when the receiver sends no UBX, and waits are `poll`s here.
        stream = NMEAEpochStream(fileDescriptor: fd, idleMilliseconds: 1,
                                 monotonicMilliseconds: { Int64(elapsed.nowSeconds * 1000) })
    }

    deinit { close(fd) }

    /// Whether the receiver sends UBX verdict messages at all: only then is a fix worth a wait.
    var receiverSendsVerdicts: Bool { stream.verdictMessagesRead > 0 }

    /// The names of the verdict messages read so far.
    var messageNames: Set<String> { stream.verdictMessageNames }

    /// Whether any UBX frame came: the receiver speaks UBX.
    var receiverSendsUBX: Bool { stream.statistics.ubxFrames > 0 }

    /// Whether a whole epoch of the receiver came without a UBX frame: it sends no verdicts.
    var showedNoUBX: Bool { !epochs.isEmpty && !receiverSendsUBX }

    /// Reads what comes until `deadline`, for `status`'s look at what the receiver sends; stops
    /// early once two NMEA epochs came without a UBX frame (no u-blox, or one sending NMEA only).
    func listen(until deadline: Deadline) {
        while !lost, !deadline.hasPassed {
            read(until: nil, past: -1)
            if !receiverSendsUBX, epochs.count >= 2 { return }
            waitReadable(before: deadline)
        }
    }

    /// The receiver's verdict for the fix at `timeOfDay` (UTC ms of the day). With `deadline`,
    /// waits until the receiver's epoch of that time is complete (a later one has begun, so every
    /// packet of the epoch was read, in whichever order it sent them) or the deadline passes;
    /// without, takes what has come. A fix gpsd held from before this watch began has no NAV-PVT
    /// here, but the state messages of the epochs after it still reach it (within 2 s).
    ///
    /// When the wait ends before the epoch is complete, the verdict is unknown (`nil`): what was
    /// read of the epoch may be its "none" before its alarm.
    func verdict(forTimeOfDay timeOfDay: Int, waitingUntil deadline: Deadline?) -> ReceiverVerdict? {
        read(until: deadline, past: timeOfDay)
        if deadline != nil, !isComplete(timeOfDay) { return nil }
        return stream.verdict(forTimeOfDay: timeOfDay)
    }

    /// Reads what has come; with `deadline`, on until an epoch after `timeOfDay` has closed.
    private func read(until deadline: Deadline?, past timeOfDay: Int) {
        guard !lost else { return }
        while true {
            do {
                guard let epoch = try stream.next() else {
                    lost = true
                    return
                }
                epochs.append(epoch.timeOfDay)
                if epochs.count > 16 { epochs.removeFirst() }
                if deadline != nil, isComplete(timeOfDay) { return }
            } catch is NMEAReader.Idle {
                guard let deadline, !deadline.hasPassed, !isComplete(timeOfDay) else { return }
                waitReadable(before: deadline)
            } catch {
                lost = true
                return
            }
        }
    }

    /// Whether the receiver's epoch at `timeOfDay` is complete: the stream closes an epoch only
    /// when the next one begins, so it is once it was read, or once a later one was (times
    /// compared on the circle of a day, so midnight is no edge).
    private func isComplete(_ timeOfDay: Int) -> Bool {
        guard let last = epochs.last else { return false }
        if epochs.contains(timeOfDay) { return true }
        let ahead = ((last - timeOfDay) % 86_400_000 + 86_400_000) % 86_400_000
        return ahead > 0 && ahead < 43_200_000
    }

    /// Waits until bytes come or `deadline` passes.
    private func waitReadable(before deadline: Deadline) {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        _ = poll(&descriptor, 1, Int32(clamping: max(deadline.remainingMilliseconds, 1)))
    }

    /// A TCP connection to `host`:`port` within `deadline`, non-blocking; `nil` when none.
    private static func connect(host: String, port: Int, deadline: Deadline) -> Int32? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { return nil }
        defer { freeaddrinfo(list) }
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family, address.pointee.ai_socktype | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                            address.pointee.ai_protocol)
            guard fd >= 0 else { continue }
            if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return fd }
            if errno == EINPROGRESS {
                var descriptor = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                if poll(&descriptor, 1, Int32(clamping: deadline.remainingMilliseconds)) == 1,
                   getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 {
                    return fd
                }
            }
            close(fd)
        }
        return nil
    }
}

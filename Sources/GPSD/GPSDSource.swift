import CGPS
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateModel
import Logging
import Synchronization
import NMEA

#if canImport(Glibc)
import Glibc
#endif

/// gpsd as a live location source, through libgps: the only file that touches C types.
///
/// It opens a JSON watch (`gps_stream(WATCH_ENABLE|WATCH_JSON)`), asks for the fix gpsd holds
/// with `?POLL;` and otherwise waits for the next TPV report. Only reports with `MODE_SET` (2D
/// or 3D) and `TIME_SET` and finite coordinates become fixes; the altitude is `altHAE`, never the
/// deprecated `altitude`. Every wait has a deadline, so a gpsd that is gone, refuses, stalls or
/// dies mid-read gives `SourceError.unavailable` promptly.
///
/// Lines are read from the socket here, not with `gps_read`, and libgps's decoder (`gps_unpack`)
/// is only given TPV objects rewritten by `GPSDReport`: libgps 3.22 loops forever on lines
/// such as `{s"class":"TPV"}` or a TPV nested in another object (found by `make fuzz`), and
/// `gps_read` would hand it every line.
package final class GPSDSource: LocationSource {
    package let provider = Fix.Provider.gpsd
    package let name: String
    /// Live: the system clock is the time.
    package var currentTime: Int64? { nil }

    private let data: UnsafeMutablePointer<gps_data_t>
    private let responseTimeoutMilliseconds: Int
    private let logger: Logger
    /// The system clock: fixes are dated by their arrival on it.
    private let clock: WallClock
    /// Deadlines are measured on it.
    private let elapsed: MonotonicClock
    /// Connecting and the first `?POLL;` share one `responseTimeoutMilliseconds`, so a gpsd
    /// that accepts but never answers costs the caller that long once, not twice.
    private var firstPollDeadline: Deadline?
    /// Complete lines read from gpsd so far: its VERSION greeting is the first.
    private var linesRead = 0
    /// The satellites of gpsd's last SKY report, when it came (system time, ms), and whether it
    /// came in a `?POLL;` answer (`isWhole`).
    private var sky: (summary: SatelliteSummary?, at: Int64, polled: Bool)?
    /// A SKY report older than this no longer describes the fixes that follow.
    private static let skyMaximumAge: Int64 = 30_000
    /// The device of the first TPV in gpsd's last `?POLL;` answer, and whether one came.
    private var polledDevice: (answered: Bool, device: String?) = (false, nil)
    /// Whether a fix dated far from the system clock was said on stderr already, in this
    /// process: once, not again at each of a track's reconnections.
    private static let notedFarDate = OnceFlag()
    /// Bytes read from the socket and not yet a whole line.
    private var received: [UInt8] = []
    /// Whether the bytes up to the next line end belong to a line too long, already dropped.
    private var discardingLine = false
    /// gpsd keeps its lines under 10 KiB; a longer one is dropped unread, not buffered forever.
    private static let maximumLineLength = 64 * 1024
    /// The receiver's own packets, for its UBX verdicts (SPEC §15); `nil` when gpsd refused it.
    private var rawWatch: GPSDRawWatch?
    private let host: String
    private let port: Int
    /// gpsd's release, from its VERSION greeting (`"release":"3.22"`).
    private var release: String?
    /// gpsd said its device is a u-blox (`"driver":"u-blox"` in a DEVICE or DEVICES report).
    private var deviceIsUBlox = false
    /// gpsd named its device's driver: until it does (a device it has just opened), a fix waits
    /// for the receiver's first epoch on the raw watch to tell whether it sends verdicts.
    private var deviceDriverKnown = false
    /// The longest a fix waits for its epoch's verdicts: one epoch of a 1 Hz receiver, and some.
    private static let verdictWaitMilliseconds = 1_500

    /// Connects to gpsd at `host`:`port` and starts a JSON watch.
    ///
    /// - Parameter responseTimeoutMilliseconds: the longest gpsd may take to accept the
    ///   connection and answer the first `?POLL;`, together, and later to answer each
    ///   `?POLL;`, before it counts as unavailable.
    /// - Parameter clock: the system clock, which dates each fix's arrival.
    /// - Parameter elapsed: what the connection's and each answer's deadlines are measured on.
    /// - Throws: `SourceError.unavailable` naming `gpsd://host:port` and what failed.
    package init(host: String, port: Int, responseTimeoutMilliseconds: Int, logger: Logger,
                 clock: WallClock, elapsed: MonotonicClock) throws {
        name = SourceSpecifier.gpsd(host: host, port: port).description
        (self.host, self.port) = (host, port)
        self.responseTimeoutMilliseconds = max(responseTimeoutMilliseconds, 1)
        self.logger = logger
        self.clock = clock
        self.elapsed = elapsed
        let deadline = Deadline(milliseconds: self.responseTimeoutMilliseconds, clock: elapsed)
        firstPollDeadline = deadline
        // A write to a gpsd that died must be an error return, not a fatal SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        data = try PendingConnection.open(host: host, port: String(port), name: name,
                                          timeoutMilliseconds: self.responseTimeoutMilliseconds,
                                          deadline: deadline)
        // Reads must never block on a half-received line past our deadlines.
        let flags = fcntl(data.pointee.gps_fd, F_GETFL)
        _ = fcntl(data.pointee.gps_fd, F_SETFL, flags | O_NONBLOCK)
        guard gps_stream(data, geolocate_watch_json, nil) == 0 else {
            let reason = ErrorText.posix(errno)
            throw SourceError.unavailable("\(name): could not start a watch (\(reason))")
        }
        rawWatch = GPSDRawWatch(host: host, port: port, deadline: deadline, elapsed: elapsed, logger: logger)
        logger.debug("connected to \(name)")
    }

    deinit {
        if data.pointee.privdata != nil { _ = gps_close(data) }
        free(data)
    }

    /// gpsd as `geolocate status` reports it: reachable when it accepts the connection and
    /// answers `?POLL;` within `timeoutMilliseconds`, with the device and mode of its fix.
    package static func probe(host: String, port: Int, timeoutMilliseconds: Int, logger: Logger,
                              clock: WallClock, elapsed: MonotonicClock) -> GPSDHealth {
        do {
            let source = try GPSDSource(host: host, port: port, responseTimeoutMilliseconds: timeoutMilliseconds, logger: logger,
                                        clock: clock, elapsed: elapsed)
            let fix = try source.heldFix()
            guard source.polledDevice.answered else {
                return GPSDHealth(reachable: false, error: "\(source.name) did not answer ?POLL; within \(timeoutMilliseconds) ms")
            }
            var health = GPSDHealth(reachable: true, device: source.polledDevice.device, fixMode: fix?.mode.rawValue)
            health.release = source.release
            health.receiverHealth = GPSDHealth.receiverHealth(release: source.release)
            // A u-blox sends its verdicts once an epoch: a second's listening tells which it sends
            // (less for a receiver whose first two epochs carry no UBX at all). A device gpsd
            // drives as another receiver sends none: status does not wait for it.
            if let raw = source.rawWatch, source.deviceIsUBlox || !source.deviceDriverKnown || raw.receiverSendsUBX {
                raw.listen(until: Deadline(milliseconds: 1_100, clock: elapsed))
                if source.deviceIsUBlox || raw.receiverSendsUBX {
                    health.receiverVerdicts = GPSDHealth.receiverVerdicts(seen: raw.messageNames)
                }
            }
            return health
        } catch {
            return GPSDHealth(reachable: false, error: ErrorText.plain(error))
        }
    }

    /// The freshest fix gpsd holds, asked with `?POLL;` (answered in about 1 ms).
    package func heldFix() throws -> Fix? {
        guard geolocate_send(data, "?POLL;") == 0 else {
            throw SourceError.unavailable("\(name): gpsd closed the connection (\(ErrorText.posix(errno)))")
        }
        let deadline = firstPollDeadline ?? Deadline(milliseconds: responseTimeoutMilliseconds, clock: elapsed)
        firstPollDeadline = nil
        var freshest: Fix?
        while let report = try nextReport(before: deadline) {
            switch report {
            case .position(let fix):
                freshest = Fix.fresher(freshest, fix)
            case .poll(let fixes):
                let held = fixes.reduce(freshest, Fix.fresher)
                logger.debug("\(name) holds \(held.map { "a fix from \($0.timestamp)" } ?? "no fix")")
                // A held fix's epoch is past, maybe before the raw watch began: the epochs after
                // it still bring the receiver's state (its spoofing, jamming, OSNMA status), but
                // not its NAV-PVT. A receiver that authenticates its fixes is worth the next one,
                // whose NAV-PVT the watch reads, rather than a fix whose word on it is lost.
                // The next fix is waited for only within this answer's deadline: a login's time
                // bound holds, and a held fix whose epoch could not be judged in time has no
                // verdict (unknown), never a partial one.
                guard let held = held.map({ judged($0, before: deadline) }) else { return nil }
                if held.receiverVerdict?.fixAuthenticated == nil, let rawWatch, mayHaveVerdicts(rawWatch), !deadline.hasPassed,
                   case .fix(let next) = try waitForFix(timeoutMilliseconds: Int(clamping: deadline.remainingMilliseconds)) {
                    return next
                }
                return held
            }
        }
        // gpsd answers late while it opens a device for its first watcher: that is slow, not gone.
        guard linesRead > 0 else {
            throw SourceError.unavailable("\(name): connected, but nothing came back within \(responseTimeoutMilliseconds) ms (is it gpsd?)")
        }
        logger.debug("\(name) has not answered ?POLL; within \(responseTimeoutMilliseconds) ms (opening its device?)")
        return freshest
    }

    package func waitForFix(timeoutMilliseconds: Int) throws -> SourceWait {
        logger.debug("waiting up to \(timeoutMilliseconds) ms for a fix from \(name)")
        let deadline = Deadline(milliseconds: timeoutMilliseconds, clock: elapsed)
        while let report = try nextReport(before: deadline) {
            if case .position(let fix?) = report { return .fix(judged(fix, before: deadline)) }
        }
        return .timedOut
    }

    /// `fix` with the receiver's UBX verdict of its epoch: when the receiver sends verdicts, gpsd
    /// says it is a u-blox, or neither is known yet (a device gpsd has just opened), after waiting
    /// for the epoch to be complete, at most `verdictWaitMilliseconds` and never past `deadline`;
    /// a fix without one says nothing of it. Another receiver's fixes never wait.
    /// Whether the receiver sends UBX verdicts, or may: gpsd calls it a u-blox, verdicts came,
    /// or gpsd has named no driver and no epoch without UBX has come yet.
    private func mayHaveVerdicts(_ rawWatch: GPSDRawWatch) -> Bool {
        deviceIsUBlox || rawWatch.receiverSendsVerdicts || (!deviceDriverKnown && !rawWatch.showedNoUBX)
    }

    private func judged(_ fix: Fix, before deadline: Deadline?) -> Fix {
        if rawWatch?.lost == true {
            logger.debug("\(name): the raw watch closed; opening another")
            rawWatch = GPSDRawWatch(host: host, port: port, deadline: Deadline(milliseconds: 200, clock: elapsed),
                                    elapsed: elapsed, logger: logger)
        }
        guard let rawWatch else { return fix }
        let timeOfDay = Int(((fix.timestamp % 86_400_000) + 86_400_000) % 86_400_000)
        _ = rawWatch.verdict(forTimeOfDay: timeOfDay, waitingUntil: nil)
        var wait: Deadline?
        if let deadline, mayHaveVerdicts(rawWatch) {
            let bound = Deadline(milliseconds: GPSDSource.verdictWaitMilliseconds, clock: elapsed)
            wait = bound.remainingMicroseconds < deadline.remainingMicroseconds ? bound : deadline
        }
        var judged = fix
        judged.receiverVerdict = rawWatch.verdict(forTimeOfDay: timeOfDay, waitingUntil: wait)
        return judged
    }

    /// What one JSON line from gpsd said about the position.
    private enum Report {
        /// A TPV: a fix, or `nil` when it had no fix (mode 1) or lacked time or coordinates.
        case position(Fix?)
        /// The answer to `?POLL;`: a fix per device that has one.
        case poll([Fix])
    }

    /// Reads lines until a TPV or POLL arrives; `nil` when the deadline passes first.
    private func nextReport(before deadline: Deadline) throws -> Report? {
        while let line = try nextLine(before: deadline) {
            linesRead += 1
            if let driver = GPSDSource.driver(inDeviceReport: line) {
                deviceDriverKnown = true
                deviceIsUBlox = deviceIsUBlox || driver
            }
            if linesRead == 1 { release = GPSDSource.release(inVersion: line) }
            switch GPSDReport(line: line) {
            case .position(let tpv):
                return .position(decode(tpv, held: false))
            case .poll(let tpvs, let satellites, let device):
                if let satellites { sky = (satellites, clock.nowMilliseconds, true) }
                polledDevice = (true, device)
                return .poll(tpvs.compactMap { decode($0, held: true) })
            case .sky(let satellites):
                sky = (satellites, clock.nowMilliseconds, false)
            case .other:
                continue
            }
        }
        return nil
    }

    /// The next whole line from gpsd, without its line end; `nil` when the deadline passes first.
    /// - Throws: `SourceError.unavailable` when gpsd closes the connection or the read fails.
    private func nextLine(before deadline: Deadline) throws -> [UInt8]? {
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            if let end = received.firstIndex(of: UInt8(ascii: "\n")) {
                // A line too long is dropped whole: the part read before, and the rest up to
                // its end, which is not a line of its own.
                let tooLong = discardingLine || end > GPSDSource.maximumLineLength
                if end > GPSDSource.maximumLineLength { noteLongLine() }
                discardingLine = false
                guard !tooLong else {
                    received.removeSubrange(...end)
                    continue
                }
                var line = Array(received[..<end])
                received.removeSubrange(...end)
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                return line
            }
            if received.count > GPSDSource.maximumLineLength {
                if !discardingLine { noteLongLine() }
                discardingLine = true
                received.removeAll()
            }
            let remaining = deadline.remainingMicroseconds
            guard remaining > 0, waitReadable(microseconds: remaining) else { return nil }
            let count = chunk.withUnsafeMutableBytes { recv(data.pointee.gps_fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received.append(contentsOf: chunk[..<count])
            } else if count == 0 {
                throw SourceError.unavailable("\(name): lost gpsd while reading (gpsd closed the connection)")
            } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                throw SourceError.unavailable("\(name): lost gpsd while reading (\(ErrorText.posix(errno)))")
            }
        }
    }

    /// The `release` of gpsd's VERSION greeting, if `line` is one.
    private static func release(inVersion line: [UInt8]) -> String? {
        guard line.first == UInt8(ascii: "{"), let object = try? JSONScanner.parse(line), object.member("class")?.string == "VERSION",
              let release = object.member("release")?.string, release.utf8.count <= 32 else { return nil }
        return release
    }

    /// Whether a DEVICE or DEVICES report names gpsd's u-blox driver; `nil` when it is no such
    /// report or names no driver.
    private static func driver(inDeviceReport line: [UInt8]) -> Bool? {
        guard line.starts(with: Array("{\"class\":\"DEVICE".utf8)) else { return nil }
        func contains(_ text: String) -> Bool {
            let needle = Array(text.utf8)
            guard line.count >= needle.count else { return false }
            return (0...(line.count - needle.count)).contains { line[$0..<($0 + needle.count)].elementsEqual(needle) }
        }
        guard contains("\"driver\":\"") else { return nil }
        return contains("\"driver\":\"u-blox\"")
    }

    private func noteLongLine() {
        logger.debug("\(name) sent a line longer than \(GPSDSource.maximumLineLength) bytes; dropped")
    }

    private func waitReadable(microseconds: Int64) -> Bool {
        var descriptor = pollfd(fd: data.pointee.gps_fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, Int32(clamping: (microseconds + 999) / 1000)) > 0
    }

    /// The fix in a TPV object that `GPSDReport` wrote, decoded by libgps, with the receiver's
    /// health that libgps 3.22 does not decode.
    private func decode(_ tpv: TPVReport, held: Bool) -> Fix? {
        var buffer = tpv.flat
        data.pointee.set = 0
        _ = gps_unpack(&buffer, data)
        guard data.pointee.set & geolocate_mode_set != 0, var fix = currentFix(held: held) else { return nil }
        tpv.addHealth(to: &fix)
        return fix
    }

    /// Whether a `?POLL;` answer's skyview can be the one behind `fix`: gpsd answers with the
    /// view it is still filling, one GSV sentence at a time (3 of 12 satellites used, seen with
    /// gpsfake), which would make a spoofing rule weigh a few satellites. A streamed SKY comes
    /// when the view is complete; a polled one counts only with the satellites the fix needs
    /// (4 for 3D, 3 for 2D), else the fix has no satellites rather than a part of them.
    static func isWhole(_ summary: SatelliteSummary?, for fix: Fix) -> Bool {
        guard let used = summary?.used else { return false }
        return used >= (fix.mode == .threeD ? 4 : 3)
    }

    /// The fix in `data` after a TPV, with the time it arrived and the satellites of the last
    /// SKY, or `nil` when it is not a usable fix (logged at debug).
    ///
    /// A fix streamed now arrived now, whatever its time says (SPEC §3); one dated more than
    /// `FixLimits.maxFutureSkewMilliseconds` from the system clock (a week-rollover date, a
    /// clock without an RTC) is said once on stderr. A fix gpsd held (`held`, from `?POLL;`)
    /// came some time before, at most at its own time: its arrival is unknown
    /// (`Fix.arrivalUnknown`) until the resolver knows better.
    private func currentFix(held: Bool) -> Fix? {
        let now = clock.nowMilliseconds
        switch GPSDSource.decodedFix(data, now: now) {
        case .fix(var fix):
            let skew = now.subtractingClamped(fix.timestamp)
            let far = skew.magnitude > UInt64(FixLimits.maxFutureSkewMilliseconds)
            if far { noteFarDate(fix.timestamp, skew: skew) }
            // A held fix came at a time geolocate did not see: no later than its date, if that
            // can be believed. Its arrival is unknown until the resolver finds it remembered,
            // or believes the date (a synchronised clock, SPEC §3).
            let arrived = held ? min(now, fix.timestamp) : now
            if held { fix.arrivalUnknown = true }
            let boot = clock.boot
            fix.receivedAt = arrived
            fix.receivedBoot = boot?.id
            fix.receivedUptime = boot.map { $0.uptimeMilliseconds.subtractingClamped(now - arrived) }
            fix.clockSkewMilliseconds = skew
            if let sky, now - sky.at <= GPSDSource.skyMaximumAge, !sky.polled || GPSDSource.isWhole(sky.summary, for: fix) {
                fix.satellites = sky.summary
            }
            return fix
        case .noFix:
            return nil
        case .refused(let reason):
            logger.debug("\(name) reported \(reason); not a fix")
            return nil
        }
    }

    /// Says once per connection that the receiver's dates are far from the system clock.
    private func noteFarDate(_ timestamp: Int64, skew: Int64) {
        guard GPSDSource.notedFarDate.claim() else { return }
        logger.warning("\(SignalText.farDate(source: name, timestamp: timestamp, skew: skew))")
    }

    /// What a decoded TPV says.
    private enum DecodedFix {
        case fix(Fix)
        /// No 2D/3D mode, or no time.
        case noFix
        /// A fix whose values are out of range, with what was wrong.
        case refused(String)
    }

    /// The fix in a decoded report, judged against the system time `now`: a usable fix needs
    /// a 2D/3D mode and a time, has coordinates in range (`Fix.checked`) and
    /// is dated from the GPS epoch to at most `FixLimits.maxFutureSkewMilliseconds` ahead of `now`.
    private static func decodedFix(_ data: UnsafePointer<gps_data_t>, now: Int64) -> DecodedFix {
        let fix = data.pointee.fix
        guard data.pointee.set & geolocate_time_set != 0,
              fix.mode == geolocate_mode_2d || fix.mode == geolocate_mode_3d
        else { return .noFix }
        // gpsd's date parser takes any year, so the seconds can be beyond what milliseconds hold.
        let (secondsAsMilliseconds, overflow) = Int64(fix.time.tv_sec).multipliedReportingOverflow(by: 1000)
        let timestamp = secondsAsMilliseconds.addingClamped(Int64(fix.time.tv_nsec) / 1_000_000)
        guard !overflow, timestamp >= 0, timestamp <= TimeText.latestMilliseconds else {
            return .refused("a fix dated \(fix.time.tv_sec) s after 1970, which no clock can mean")
        }
        let threeD = fix.mode == geolocate_mode_3d
        var horizontal: Double?
        if let eph = FixLimits.errorFigure(finite(fix.eph)) {
            horizontal = Accuracy.horizontal(eph95: eph)
        } else if let epx = FixLimits.errorFigure(finite(fix.epx)), let epy = FixLimits.errorFigure(finite(fix.epy)) {
            horizontal = Accuracy.horizontal(epx95: epx, epy95: epy)
        }
        let checked = Fix.checked(
            timestamp: timestamp,
            latitude: fix.latitude, longitude: fix.longitude,
            mode: threeD ? .threeD : .twoD,
            altitudeHAE: threeD ? finite(fix.altHAE) : nil,
            altitudeMSL: threeD ? finite(fix.altMSL) : nil,
            speed: finite(fix.speed), course: finite(fix.track),
            horizontalAccuracy: horizontal,
            verticalAccuracy: threeD ? FixLimits.errorFigure(finite(fix.epv)).map(Accuracy.vertical(epv95:)) : nil,
            provider: .gpsd)
        guard var checked else { return .refused("coordinates out of range (\(fix.latitude), \(fix.longitude))") }
        switch fix.status {
        case geolocate_status_dead_reckoning, geolocate_status_gnss_dead_reckoning: checked.quality = .estimated
        case geolocate_status_manual: checked.quality = .manual
        case geolocate_status_simulated: checked.quality = .simulator
        case geolocate_status_dgps: checked.quality = .dgps
        case geolocate_status_rtk_fixed: checked.quality = .rtkFixed
        case geolocate_status_rtk_float: checked.quality = .rtkFloat
        // A TPV without `status` is a plain fix (gpsd writes it only when it is not 1); 9 is a
        // fix with a PPS-disciplined clock.
        default: checked.quality = .gps
        }
        return .fix(checked)
    }

    /// The fixes in one JSON line from gpsd (a TPV, or a POLL answer's TPVs), decoded by
    /// libgps as a live connection decodes them: the entry point of the `gpsd` fuzz target.
    package static func fixes(inReport line: [UInt8], now: Int64) -> [Fix] {
        let data = UnsafeMutablePointer<gps_data_t>.allocate(capacity: 1)
        defer { data.deallocate() }
        func decode(_ tpv: TPVReport) -> Fix? {
            memset(data, 0, MemoryLayout<gps_data_t>.size)
            var buffer = tpv.flat
            _ = gps_unpack(&buffer, data)
            guard data.pointee.set & geolocate_mode_set != 0,
                  case .fix(var fix) = decodedFix(data, now: now) else { return nil }
            tpv.addHealth(to: &fix)
            return fix
        }
        switch GPSDReport(line: line) {
        case .position(let tpv): return decode(tpv).map { [$0] } ?? []
        case .poll(let tpvs, _, _): return tpvs.compactMap(decode)
        case .sky, .other: return []
        }
    }

    private static func finite(_ value: Double) -> Double? { value.isFinite ? value : nil }
}

/// A flag the first caller claims, once per process.
private final class OnceFlag: Sendable {
    private let claimed = Atomic(false)

    /// `true` for the first call only.
    func claim() -> Bool {
        !claimed.exchange(true, ordering: .acquiringAndReleasing)
    }
}

/// A `gps_open` with a deadline: it runs on its own thread, because libgps connects with a
/// blocking `connect` that can hang for minutes on an unreachable host.
private final class PendingConnection: @unchecked Sendable {
    // @unchecked: `data` belongs to the connecting thread until `state.result` is set, then to
    // whoever `state.abandoned` names; the rest is a Mutex and a semaphore.
    private struct State {
        /// 0 once connected, else libgps's error code; `nil` while connecting.
        var result: Int32?
        /// Set when the caller stopped waiting: the thread then closes and frees `data` itself.
        var abandoned = false
    }

    private let state = Mutex(State())
    /// Signalled by the connecting thread: the caller's wait is bounded by its deadline.
    private let finished = DispatchSemaphore(value: 0)
    private let data: UnsafeMutablePointer<gps_data_t>

    private init(data: UnsafeMutablePointer<gps_data_t>) { self.data = data }

    static func open(host: String, port: String, name: String, timeoutMilliseconds: Int,
                     deadline: Deadline) throws -> UnsafeMutablePointer<gps_data_t> {
        guard let memory = calloc(1, MemoryLayout<gps_data_t>.size) else {
            throw SourceError.unavailable("\(name): out of memory")
        }
        let pending = PendingConnection(data: memory.bindMemory(to: gps_data_t.self, capacity: 1))
        let thread = Thread { pending.connect(host: host, port: port) }
        thread.start()
        _ = deadline.wait(for: pending.finished)
        let result = pending.state.withLock { state in
            if state.result == nil { state.abandoned = true }
            return state.result
        }
        switch result {
        case 0?:
            return pending.data
        case let code?:
            free(pending.data)
            throw SourceError.unavailable("\(name): \(connectionFailure(code)) (is gpsd running and listening there?)")
        case nil:
            throw SourceError.unavailable("\(name): no connection within \(timeoutMilliseconds) ms (host unreachable?)")
        }
    }

    /// `gps_open`'s failure in our words: libgps's own (`gps_errstr`) read "can't connect to
    /// host/port pair".
    private static func connectionFailure(_ code: Int32) -> String {
        switch code {
        case NL_NOSERVICE: return "unknown port"
        case NL_NOHOST: return "unknown host"
        case NL_NOCONNECT: return "connection refused"
        case NL_NOPROTO, NL_NOSOCK, NL_NOSOCKOPT: return "cannot open a socket"
        case let errnoCode where errnoCode > 0: return ErrorText.posix(errnoCode)
        default: return "cannot connect"
        }
    }

    private func connect(host: String, port: String) {
        let status = gps_open(host, port, data)
        let code = status == 0 ? 0 : (errno == 0 ? -1 : errno)
        let late = state.withLock { state in
            if !state.abandoned { state.result = code }
            return state.abandoned
        }
        if late {
            if status == 0 { _ = gps_close(data) }
            free(data)
        } else {
            finished.signal()
        }
    }
}

/// A line from gpsd as libgps may safely decode it: its TPV objects rewritten flat.
///
/// libgps 3.22's `gps_unpack` loops forever when its parser stops without moving on (an
/// attribute name without its quote, a TPV inside an object of another kind), so it never
/// sees gpsd's text: each line is read here by the core's `JSONScanner` (the reader of zones and
/// the config file, fuzzed) and each TPV written again with only the fields geolocate reads,
/// each of the JSON type gpsd gives it. libgps still does the decoding (time, mode, NaN for
/// what is missing), which keeps gpsd's own reading of its protocol the referee; libgps does
/// not decode POLL answers at all, so their TPVs arrive here the same way.
enum GPSDReport {
    /// A TPV report.
    case position(TPVReport)
    /// The answer to `?POLL;`: its TPVs, one per device that has one, the satellites of its
    /// first SKY, and the device of its first TPV.
    case poll([TPVReport], SatelliteSummary?, device: String?)
    /// A SKY report: the satellites in view, their C/N0 (`ss`) and whether each is `used`.
    case sky(SatelliteSummary?)
    /// Anything else: another class, or not one JSON object.
    case other

    /// TPV fields read as numbers (gpsd's `ep*` are 95 % figures).
    private static let numberFields = ["lat", "lon", "altHAE", "altMSL", "eph", "epx", "epy", "epv", "speed", "track"]
    /// TPV fields read as whole numbers.
    private static let integerFields = ["mode", "status"]

    /// The report `line` holds, read by the core's `JSONScanner` (strict: a repeated name or
    /// anything but one JSON object is `.other`).
    init(line: [UInt8]) {
        guard line.first == UInt8(ascii: "{"), let object = try? JSONScanner.parse(line) else {
            self = .other
            return
        }
        switch object.member("class")?.string {
        case "TPV":
            self = .position(TPVReport(object))
        case "POLL":
            let tpvs = object.member("tpv")?.array ?? []
            let sky = object.member("sky")?.array?.first
            self = .poll(tpvs.compactMap { $0.member("class")?.string == "TPV" ? TPVReport($0) : nil },
                         sky.flatMap(GPSDReport.satellites), device: tpvs.first?.member("device")?.string)
        case "SKY":
            self = .sky(GPSDReport.satellites(object))
        default:
            self = .other
        }
    }

    /// The satellites of a SKY object: those `used`, and the mean and spread of their `ss`
    /// (of every satellite with an `ss` when none is marked used), and which they are (`PRN`
    /// and `gnssid`); `nil` when it lists none.
    static func satellites(_ object: JSONNode) -> SatelliteSummary? {
        guard let list = object.member("satellites")?.array else { return nil }
        var used = 0
        var usedCn0: [Double] = [], visibleCn0: [Double] = []
        var usedSet = SatelliteSet(), visibleSet = SatelliteSet()
        for satellite in list {
            guard case .object = satellite else { continue }
            let isUsed = satellite.member("used")?.bool == true
            if isUsed { used += 1 }
            let prn = satellite.member("PRN")?.number.flatMap { UInt16(exactly: $0) }
            let system = satellite.member("gnssid")?.number.flatMap { UInt8(exactly: $0) } ?? 0
            if isUsed, let prn { usedSet.insert(system: system, prn: prn) }
            guard let ss = satellite.member("ss")?.number, ss.isFinite, ss > 0, ss < 100 else { continue }
            visibleCn0.append(ss)
            if let prn { visibleSet.insert(system: system, prn: prn) }
            if isUsed { usedCn0.append(ss) }
        }
        var summary = SatelliteSummary.of(used: used, cn0: usedCn0.isEmpty ? visibleCn0 : usedCn0)
        let tracked = usedSet.count > 0 ? usedSet : visibleSet
        summary?.tracked = tracked.count > 0 ? tracked : nil
        return summary
    }

    /// `{"class":"TPV",…}` with the fields geolocate reads that have the right type, as a
    /// NUL-terminated line for `gps_unpack`.
    static func flatTPV(_ object: JSONNode) -> [CChar] {
        var text = #"{"class":"TPV""#
        for key in integerFields {
            guard let number = object.member(key)?.number, let value = Int32(exactly: number) else { continue }
            text += #","\#(key)":\#(value)"#
        }
        // libgps reads an impossible date as another one (2026-02-30T25:61:61Z as 2 March):
        // a time that is not a real ISO 8601 instant is left out, and the TPV is no fix.
        if let time = object.member("time")?.string, time.utf8.count <= 40,
           time.utf8.allSatisfy({ (0x21...0x7E).contains($0) && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }),
           TimeText.iso8601Milliseconds(Array(time.utf8)) != nil {
            text += #","time":"\#(time)""#
        }
        for key in numberFields {
            guard let number = object.member(key)?.number, number.isFinite else { continue }
            text += #","\#(key)":\#(number)"#
        }
        return Array((text + "}").utf8CString)
    }
}

/// A TPV as geolocate reads it: flat for libgps (`GPSDReport.flatTPV`), and what libgps 3.22
/// does not decode, the receiver's health that gpsd 3.26 and later report (from u-blox
/// MON-HW/MON-RF, Trimble TSIP alarms, some NMEA receivers' proprietary sentences).
struct TPVReport {
    /// The TPV with the fields libgps decodes, NUL-terminated.
    var flat: [CChar]
    /// `jam`: the receiver's jamming indicator, 0 (none) to 255 (strong); gpsd writes it only
    /// above 0, and -1 means unset.
    var jamming: Int?
    /// `ant`: 1 ok, 2 open, 3 short (gps.h's `ANT_OK`, `ANT_OPEN`, `ANT_SHORT`; gpsd_json(5)
    /// swaps 2 and 3, its code does not); 0 is unknown. gpsd writes it only for 2 and 3.
    var antenna: Fix.Antenna?
    /// `antPwr`: 1 off, 2 on (`ANT_PWR_OFF`, `ANT_PWR_ON`); 0 is unknown.
    var antennaPower: Fix.AntennaPower?

    init(_ object: JSONNode) {
        flat = GPSDReport.flatTPV(object)
        jamming = object.member("jam")?.number.flatMap { Int(exactly: $0) }.flatMap { (0...255).contains($0) ? $0 : nil }
        switch object.member("ant")?.number {
        case 1: antenna = .ok
        case 2: antenna = .open
        case 3: antenna = .short
        default: antenna = nil
        }
        switch object.member("antPwr")?.number {
        case 1: antennaPower = .off
        case 2: antennaPower = .on
        default: antennaPower = nil
        }
    }

    /// Adds what the TPV says of the receiver's health to the fix decoded from it.
    func addHealth(to fix: inout Fix) {
        fix.jamming = jamming
        fix.antenna = antenna
        fix.antennaPower = antennaPower
    }
}

extension SourceOpener {
    /// Replays and gpsd, through this adapter: what the program opens sources with.
    package static let withGPSD = SourceOpener { host, port, opening in
        try GPSDSource(host: host, port: port, responseTimeoutMilliseconds: opening.responseTimeoutMilliseconds, logger: opening.logger,
                       clock: opening.clock, elapsed: opening.elapsed)
    }
}

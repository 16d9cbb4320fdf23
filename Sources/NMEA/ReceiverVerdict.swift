/// What a u-blox receiver said of one fix through UBX (SPEC §15): whether OSNMA authenticated
/// it, and its own jamming and spoofing detection. Every field is `nil` when the receiver did
/// not say, which is never read as "all clear".
public struct ReceiverVerdict: Sendable, Equatable, Codable {
    /// NAV-PVT `flags3.nmaFixStatus` of the fix's epoch.
    public var fixAuthenticated: Bool?
    /// NAV-PVT `flags3.authTime` of the fix's epoch.
    public var timeAuthenticated: Bool?
    /// SEC-OSNMA `osnmaEnabled`.
    public var osnmaEnabled: Bool?
    /// SEC-OSNMA `nmaStatus`, by name.
    public var osnmaStatus: OSNMAStatus?
    /// SEC-OSNMA `timSyncStatus` (4: a replay).
    public var osnmaTimeSyncStatus: Int?
    /// SEC-OSNMA `authSVs`.
    public var authenticatedSatellites: Int?
    /// NAV-SIG: signals tracked, and those with `authStatus` set.
    public var signals: Int?
    public var authenticatedSignals: Int?
    /// SEC-SIG's jamming state, 0 unknown, 1 none, 2 warning, 3 critical.
    public var jammingState: Int?
    /// SEC-SIG's spoofing state, 0 unknown, 1 none, 2 indicated, 3 affirmed.
    public var spoofingState: Int?
    /// NAV-STATUS `spoofDetState`, 0 unknown or off, 1 none, 2 indicated, 3 multiple.
    public var spoofDetectionState: Int?

    /// Galileo OSNMA's status as SEC-OSNMA `nmaStatus` gives it.
    public enum OSNMAStatus: String, Sendable, Codable, CaseIterable {
        case notYet = "not-yet"
        case test
        case operational
        case invalid

        init(_ value: UInt8) {
            switch value & 0x03 {
            case 0: self = .notYet
            case 1: self = .test
            case 2: self = .operational
            default: self = .invalid
            }
        }
    }

    public init() {}

    /// Whether the fix rests on OSNMA-authenticated data: true when NAV-PVT says so and SEC-OSNMA
    /// does not contradict it (OSNMA off, "don't use", a replay); false when it says not while
    /// SEC-OSNMA reports OSNMA enabled (firmware without OSNMA reads 0 too), or when contradicted;
    /// else unknown.
    public var gnssAuthenticated: Bool? {
        guard let fixAuthenticated else { return nil }
        if fixAuthenticated {
            // SEC-OSNMA saying OSNMA is off, its data are not to be used, or they are replayed
            // contradicts the flag: not authenticated.
            let contradicted = osnmaEnabled == false || osnmaStatus == .invalid || osnmaTimeSyncStatus == 4
            return !contradicted
        }
        return osnmaEnabled == true ? false : nil
    }

    /// Whether the receiver says it is spoofed: SEC-SIG indicated or affirmed, or NAV-STATUS 2
    /// or 3; false when one of them says none and neither says spoofed; else unknown.
    public var spoofing: Bool? {
        let states = [spoofingState, spoofDetectionState].compactMap { $0 }
        if states.contains(where: { $0 >= 2 }) { return true }
        return states.contains(1) ? false : nil
    }

    /// Whether the receiver says its jamming is critical; false for none or a warning; else unknown.
    public var jamming: Bool? {
        guard let jammingState, jammingState > 0 else { return nil }
        return jammingState == 3
    }

    /// Whether OSNMA's time synchronisation status says the navigation message is replayed.
    public var osnmaReplay: Bool? { osnmaTimeSyncStatus.map { $0 == 4 } }

    /// Whether the receiver said anything at all.
    public var isEmpty: Bool {
        fixAuthenticated == nil && timeAuthenticated == nil && osnmaEnabled == nil && osnmaStatus == nil
            && osnmaTimeSyncStatus == nil && authenticatedSatellites == nil && signals == nil
            && authenticatedSignals == nil && jammingState == nil && spoofingState == nil && spoofDetectionState == nil
    }
}

/// Gathers the UBX messages of a stream and gives each NMEA epoch the verdicts that belong to it.
///
/// UBX and NMEA of one epoch arrive in either order, so nothing is matched by arrival: NAV-PVT
/// carries the epoch's UTC time and is matched to the NMEA epoch of that time (within 10 ms, the
/// resolution of NMEA's time field); NAV-STATUS, NAV-SIG and SEC-OSNMA carry the GPS time of
/// week, placed in the day by the latest NAV-PVT's pair of both; SEC-SIG carries no time and
/// takes that of the latest NAV-PVT, else of the epoch then open. A state message applies to the
/// epochs within `stateWindow` of its time, so a receiver that falls silent is not believed for long.
public struct ReceiverVerdictTracker: Sendable {
    /// How far in time a state message (SEC-SIG, SEC-OSNMA, NAV-STATUS, NAV-SIG) reaches.
    public static let stateWindow = 2_000
    /// How close NAV-PVT's time must be to the epoch's.
    public static let solutionWindow = 10

    /// How many of each message are kept: some seconds of a 10 Hz receiver (the size of
    /// `Recent`'s storage and of its alarm bits).
    static let historyLimit = 16

    /// The last `historyLimit` messages of one kind with their times of day, a ring: keeping one
    /// more moves nothing. Messages come in time order but for a midnight or a message read
    /// before any time, so while the ring holds them in order the look for the message nearest
    /// an epoch stops once past it, and alarms are kept apart as they come: an epoch visits two
    /// or three messages, not all 16 (a scan of all, once an epoch, was most of what UBX cost).
    /// Its look-ups are `mutating` though they change nothing: called in place, the inline
    /// storage is read where it is, where a non-mutating call copied it first.
    private struct Recent<Value: Sendable>: Sendable {
        /// Inline, not an array: an array's uniqueness check and reference count at every
        /// message cost more than keeping it.
        private var items = InlineArray<16, (time: Int?, value: Value)?>(repeating: nil)
        private var count = 0
        private var oldest = 0
        private var newest = 0
        /// How many more messages must come before the ring holds its messages in time order
        /// again: each message out of order stays for `historyLimit` more.
        private var disorder = 0
        /// The last `historyLimit` alarms, kept apart so that no number of later "none"s
        /// pushes one out before its time has passed (a 10 Hz receiver sends 20 in 2 s).
        private var alarmItems = InlineArray<16, (time: Int?, value: Value)?>(repeating: nil)
        private var alarmCount = 0
        private var nextAlarm = 0

        /// Keeps `value` read at `time` (`nil`: not known yet, see `stamp(_:)`), forgetting the
        /// oldest; an alarm is one that a later "none" must not hide.
        mutating func append(_ value: Value, at time: Int?, isAlarm: Bool = false) {
            if disorder > 0 { disorder -= 1 }
            let inOrder: Bool
            if let time, let last = count == 0 ? time : items[newest]?.time {
                inOrder = time >= last
            } else {
                inOrder = false
            }
            if !inOrder { disorder = ReceiverVerdictTracker.historyLimit }
            if count < ReceiverVerdictTracker.historyLimit {
                newest = count
                count += 1
            } else {
                newest = oldest
                oldest = oldest + 1 == count ? 0 : oldest + 1
            }
            items[newest] = (time, value)
            if isAlarm {
                alarmItems[nextAlarm] = (time, value)
                nextAlarm = nextAlarm + 1 == ReceiverVerdictTracker.historyLimit ? 0 : nextAlarm + 1
                alarmCount = min(alarmCount + 1, ReceiverVerdictTracker.historyLimit)
            }
        }

        /// Gives the messages read before any time was known the time `time`.
        mutating func stamp(_ time: Int) {
            for index in 0..<count where items[index]?.time == nil { items[index]?.time = time }
            for index in 0..<alarmCount where alarmItems[index]?.time == nil { alarmItems[index]?.time = time }
        }

        /// The message nearest `epoch` within `window` ms (on a tie the one read last).
        @inline(__always)
        mutating func nearest(within window: Int, of epoch: Int) -> Value? {
            var best: (distance: Int, value: Value)?
            forEach(within: window, of: epoch) { value, distance in
                if best.map({ distance < $0.distance }) ?? true { best = (distance, value) }
            } stoppingAt: { time in
                // In order, a message at or before the epoch and no nearer than the best has
                // only ones further back behind it.
                time <= epoch && best.map { epoch - time >= $0.distance } ?? false
            }
            return best?.value
        }

        /// Calls `body` with each alarm within `window` ms of `epoch`.
        @inline(__always)
        mutating func forEachAlarm(within window: Int, of epoch: Int, _ body: (Value) -> Void) {
            let alarms = alarmItems.span
            for index in 0..<alarmCount {
                if let item = alarms[index], let time = item.time, distance(time, epoch) <= window { body(item.value) }
            }
        }

        /// Calls `body` with each message within `window` ms of `epoch` and its distance, the
        /// one read last first; while the ring is in time order, stops at a message of which
        /// `stop` says, by its time, that none further back can matter.
        @inline(__always)
        mutating func forEach(within window: Int, of epoch: Int, _ body: (Value, Int) -> Void,
                     stoppingAt stop: (Int) -> Bool = { _ in false }) {
            // In time order, and with the window not across midnight, every message after one
            // too old is older still and further away (across midnight, a message just after it
            // is near an epoch just before it, though its time is smaller).
            let mayStop = disorder == 0 && epoch >= window && epoch + window < 86_400_000
            var index = newest
            let items = items.span
            for _ in 0..<count {
                guard let item = items[index] else { return }
                index = index == 0 ? count - 1 : index - 1
                guard let time = item.time else { continue }
                if mayStop && (time < epoch - window || stop(time)) { return }
                let apart = distance(time, epoch)
                if apart <= window { body(item.value, apart) }
            }
        }
    }

    private var solutions = Recent<UBXMessage.NavigationSolution>()
    /// Time of day minus time of week (mod one day), from the latest NAV-PVT with both.
    private var weekToDay: Int?
    private var latestSolutionTime: Int?
    private var osnmaReports = Recent<UBXMessage.OSNMAReport>()
    private var securityReports = Recent<(jamming: UInt8?, spoofing: UInt8?)>()
    private var statusReports = Recent<UInt8>()
    private var signalReports = Recent<(signals: Int, authenticated: Int)>()
    /// Some message was read before any time was known (a terminal opened mid-epoch).
    private var hasUntimed = false
    /// Messages read, for `status` to tell a UBX receiver that sends none of these apart.
    public private(set) var messagesRead = 0
    /// Which verdict messages were read, a bit each (`UBXMessage.kind`): a set of names,
    /// hashed at every message, cost more than reading the message.
    private var kindsRead: UInt8 = 0

    /// The names of the verdict messages read (`NAV-PVT`, `SEC-SIG`, …).
    public var messageNames: Set<String> {
        Set(UBXMessage.names.enumerated().filter { kindsRead & (1 << $0.offset) != 0 }.map(\.element))
    }

    public init() {}

    /// Takes one message; `openEpochTime` is the time of the NMEA epoch being assembled, if any,
    /// asked for only while no NAV-PVT has given a time (reading it from its owner each
    /// message cost as much as the message).
    public mutating func add(_ message: UBXMessage, openEpochTime: @autoclosure () -> Int?) {
        messagesRead += 1
        kindsRead |= 1 << message.kind
        switch message {
        case .navigationSolution(let solution):
            guard let time = solution.timeOfDay else { return }
            weekToDay = Self.dayTime(time - Int(solution.timeOfWeek % 86_400_000))
            latestSolutionTime = time
            // One that does not say authenticated is kept as an alarm: every NAV-PVT of an
            // epoch must say so, however many more come.
            solutions.append(solution, at: time, isAlarm: !solution.fixAuthenticated || !solution.timeAuthenticated)
            stampUntimed(with: time)
        // The alarms, which stand against a later "none" (see `verdict(forTimeOfDay:)`): spoofing
        // indicated or affirmed, critical jamming, OSNMA's "don't use" or a replay.
        case .navigationStatus(let timeOfWeek, let state):
            let time = noteUntimed(Self.time(ofWeek: timeOfWeek, weekToDay: weekToDay, latestSolutionTime: latestSolutionTime,
                                             openEpochTime: openEpochTime()))
            statusReports.append(state, at: time, isAlarm: state >= 2)
        case .signalInformation(let timeOfWeek, let signals, let authenticated):
            let time = noteUntimed(Self.time(ofWeek: timeOfWeek, weekToDay: weekToDay, latestSolutionTime: latestSolutionTime,
                                             openEpochTime: openEpochTime()))
            signalReports.append((signals: signals, authenticated: authenticated), at: time)
        case .signalSecurity(let jamming, let spoofing):
            securityReports.append((jamming: jamming, spoofing: spoofing), at: noteUntimed(Self.timeOfUntimed(latestSolutionTime: latestSolutionTime, openEpochTime: openEpochTime())),
                                   isAlarm: jamming == 3 || (spoofing ?? 0) >= 2)
        case .osnma(let report):
            // SEC-OSNMA carries no time of week either.
            osnmaReports.append(report, at: noteUntimed(Self.timeOfUntimed(latestSolutionTime: latestSolutionTime, openEpochTime: openEpochTime())),
                                isAlarm: report.status == 3 || report.timeSyncStatus == 4)
        }
    }

    /// The verdict for the epoch at `timeOfDay`, after giving the messages read before any time
    /// was known its time. Mutating so that its owner hands the tracker over in place: a plain
    /// read of it from a class copied its five histories at every epoch.
    public mutating func judge(epochAt timeOfDay: Int) -> ReceiverVerdict? {
        stampUntimed(with: timeOfDay)
        return judged(epochAt: timeOfDay)
    }

    /// Gives the messages read before any time was known the time of `timeOfDay`: the first
    /// NAV-PVT's, or the first epoch's as it closes, so none is lost.
    public mutating func stampUntimed(with timeOfDay: Int) {
        guard hasUntimed else { return }
        hasUntimed = false
        osnmaReports.stamp(timeOfDay)
        securityReports.stamp(timeOfDay)
        statusReports.stamp(timeOfDay)
        signalReports.stamp(timeOfDay)
    }

    private mutating func noteUntimed(_ time: Int?) -> Int? {
        if time == nil { hasUntimed = true }
        return time
    }

    /// The verdict for the epoch at `timeOfDay` (UTC ms of the day), `nil` when no message applies.
    ///
    /// Each state comes from the message nearest the epoch in time, except that an alarm in any
    /// message within `stateWindow` stands (spoofing indicated or affirmed, critical jamming, an
    /// OSNMA replay or "don't use"): messages of one epoch may be read with the next one's, in
    /// whichever order the receiver sent them, and a later "none" must not hide an alarm. Every
    /// NAV-PVT of the epoch must say authenticated for the fix to be.
    public func verdict(forTimeOfDay epoch: Int) -> ReceiverVerdict? {
        var tracker = self
        return tracker.judged(epochAt: epoch)
    }

    /// `verdict(forTimeOfDay:)`, reading the histories in place: they are kept inline, and a
    /// non-mutating read copied each of them (some KiB an epoch, most of what a verdict cost).
    private mutating func judged(epochAt epoch: Int) -> ReceiverVerdict? {
        let window = Self.stateWindow
        var verdict = ReceiverVerdict()
        func take(_ solution: UBXMessage.NavigationSolution) {
            verdict.fixAuthenticated = (verdict.fixAuthenticated ?? true) && solution.fixAuthenticated
            verdict.timeAuthenticated = (verdict.timeAuthenticated ?? true) && solution.timeAuthenticated
        }
        solutions.forEach(within: Self.solutionWindow, of: epoch) { solution, _ in take(solution) }
        solutions.forEachAlarm(within: Self.solutionWindow, of: epoch) { take($0) }
        if let nearest = osnmaReports.nearest(within: window, of: epoch) {
            var invalid = false, replayed = false
            osnmaReports.forEachAlarm(within: window, of: epoch) {
                invalid = invalid || $0.status == 3
                replayed = replayed || $0.timeSyncStatus == 4
            }
            verdict.osnmaEnabled = nearest.enabled
            verdict.osnmaStatus = ReceiverVerdict.OSNMAStatus(invalid ? 3 : nearest.status)
            verdict.osnmaTimeSyncStatus = Int(replayed ? 4 : nearest.timeSyncStatus)
            verdict.authenticatedSatellites = nearest.authenticatedSatellites
        }
        if let nearest = securityReports.nearest(within: window, of: epoch) {
            var criticalJamming = false
            var worstSpoofing: UInt8?
            securityReports.forEachAlarm(within: window, of: epoch) { report in
                criticalJamming = criticalJamming || report.jamming == 3
                if let spoofing = report.spoofing, spoofing >= 2 { worstSpoofing = max(worstSpoofing ?? 0, spoofing) }
            }
            verdict.jammingState = (criticalJamming ? 3 : nearest.jamming).map(Int.init)
            verdict.spoofingState = (worstSpoofing ?? nearest.spoofing).map(Int.init)
        }
        if let nearest = statusReports.nearest(within: window, of: epoch) {
            var worstStatus: UInt8?
            statusReports.forEachAlarm(within: window, of: epoch) { worstStatus = max(worstStatus ?? 0, $0) }
            verdict.spoofDetectionState = Int(worstStatus ?? nearest)
        }
        if let nearest = signalReports.nearest(within: window, of: epoch) {
            verdict.signals = nearest.signals
            verdict.authenticatedSignals = nearest.authenticated
        }
        return verdict.isEmpty ? nil : verdict
    }

    /// The time of a message that carries none (SEC-SIG, SEC-OSNMA): the latest NAV-PVT's when
    /// it is within a second of the NMEA epoch being read (the receiver's own clock, which
    /// dates UBX sent before its epoch's NMEA right), else that epoch's. A NAV-PVT that came
    /// late, or one sent every few epochs, would otherwise date the message seconds away, and
    /// an alarm in it would reach no epoch (found by the hostile pass).
    private static func timeOfUntimed(latestSolutionTime: Int?, openEpochTime: Int?) -> Int? {
        guard let latestSolutionTime else { return openEpochTime }
        guard let openEpochTime else { return latestSolutionTime }
        return distance(latestSolutionTime, openEpochTime) <= 1_000 ? latestSolutionTime : openEpochTime
    }

    /// A time of week's time of day, through the latest NAV-PVT; without one, the open epoch's.
    /// Static, as `timeOfUntimed`: a method of the tracker called from `add` copied the whole
    /// tracker (some KiB of histories) at every message.
    private static func time(ofWeek timeOfWeek: UInt32, weekToDay: Int?, latestSolutionTime: Int?,
                             openEpochTime: @autoclosure () -> Int?) -> Int? {
        guard let weekToDay else { return latestSolutionTime ?? openEpochTime() }
        return dayTime(Int(timeOfWeek % 86_400_000) + weekToDay)
    }

    /// `milliseconds` brought into the day, for a time at most a day before or after it (a
    /// remainder here cost a tenth of what reading UBX did).
    private static func dayTime(_ milliseconds: Int) -> Int {
        milliseconds < 0 ? milliseconds + 86_400_000 : milliseconds >= 86_400_000 ? milliseconds - 86_400_000 : milliseconds
    }
}

/// How far apart two times of day are, in ms, the way round midnight too.
@inline(__always)
private func distance(_ time: Int, _ epoch: Int) -> Int {
    let apart = time > epoch ? time - epoch : epoch - time
    // Both lie within one day: past half a day, the way round midnight is shorter.
    return apart > 43_200_000 ? 86_400_000 - apart : apart
}

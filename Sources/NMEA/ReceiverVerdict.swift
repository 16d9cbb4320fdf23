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
            self = [.notYet, .test, .operational, .invalid][Int(value & 0x03)]
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
    public var isEmpty: Bool { self == ReceiverVerdict() }
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

    /// How many of each state message are kept: some seconds of a 10 Hz receiver.
    static let historyLimit = 16

    /// A message as read: its time of day (`nil` while no time is known: it takes the time of
    /// the first NAV-PVT or epoch that comes), and what it said.
    private struct Stamped<Value: Sendable>: Sendable {
        var time: Int?
        var value: Value
    }

    /// The last `historyLimit` of something, oldest first: a ring, so keeping one more message
    /// moves nothing (an array's `removeFirst` moved the whole history at every message).
    private struct Recent<Element: Sendable>: Sendable {
        private var items: [Element] = []
        private var oldest = 0

        mutating func append(_ element: Element) {
            if items.count < ReceiverVerdictTracker.historyLimit {
                items.append(element)
            } else {
                items[oldest] = element
                oldest = (oldest + 1) % items.count
            }
        }

        mutating func update(_ body: (inout Element) -> Void) {
            for index in items.indices { body(&items[index]) }
        }

        /// Each element, oldest first.
        @inline(__always)
        func forEach(_ body: (Element) -> Void) {
            var index = oldest
            for _ in 0..<items.count {
                body(items[index])
                index = index + 1 == items.count ? 0 : index + 1
            }
        }
    }

    private var solutions = Recent<(timeOfDay: Int, solution: UBXMessage.NavigationSolution)>()
    /// Time of day minus time of week (mod one day), from the latest NAV-PVT with both.
    private var weekToDay: Int?
    private var latestSolutionTime: Int?
    private var osnmaReports = Recent<Stamped<UBXMessage.OSNMAReport>>()
    private var securityReports = Recent<Stamped<(jamming: UInt8?, spoofing: UInt8?)>>()
    private var statusReports = Recent<Stamped<UInt8>>()
    private var signalReports = Recent<Stamped<(signals: Int, authenticated: Int)>>()
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

    /// Takes one message; `openEpochTime` is the time of the NMEA epoch being assembled, if any.
    public mutating func add(_ message: UBXMessage, openEpochTime: Int?) {
        messagesRead += 1
        kindsRead |= 1 << message.kind
        switch message {
        case .navigationSolution(let solution):
            guard let time = solution.timeOfDay else { return }
            weekToDay = Self.dayTime(time - Int(solution.timeOfWeek % 86_400_000))
            latestSolutionTime = time
            solutions.append((time, solution))
            stampUntimed(with: time)
        case .navigationStatus(let timeOfWeek, let state):
            let stamped = stamp(state, at: time(ofWeek: timeOfWeek, openEpochTime: openEpochTime))
            statusReports.append(stamped)
        case .signalInformation(let timeOfWeek, let signals, let authenticated):
            let stamped = stamp((signals: signals, authenticated: authenticated), at: time(ofWeek: timeOfWeek, openEpochTime: openEpochTime))
            signalReports.append(stamped)
        case .signalSecurity(let jamming, let spoofing):
            let stamped = stamp((jamming: jamming, spoofing: spoofing), at: latestSolutionTime ?? openEpochTime)
            securityReports.append(stamped)
        case .osnma(let report):
            // SEC-OSNMA carries no time of week either.
            let stamped = stamp(report, at: latestSolutionTime ?? openEpochTime)
            osnmaReports.append(stamped)
        }
    }

    /// Gives the messages read before any time was known the time of `timeOfDay`: the first
    /// NAV-PVT's, or the first epoch's as it closes, so none is lost.
    public mutating func stampUntimed(with timeOfDay: Int) {
        guard hasUntimed else { return }
        hasUntimed = false
        func stamp<Value: Sendable>(_ reports: inout Recent<Stamped<Value>>) {
            reports.update { if $0.time == nil { $0.time = timeOfDay } }
        }
        stamp(&osnmaReports)
        stamp(&securityReports)
        stamp(&statusReports)
        stamp(&signalReports)
    }

    private mutating func stamp<Value: Sendable>(_ value: Value, at time: Int?) -> Stamped<Value> {
        if time == nil { hasUntimed = true }
        return Stamped(time: time, value: value)
    }

    /// The verdict for the epoch at `timeOfDay` (UTC ms of the day), `nil` when no message applies.
    ///
    /// Each state comes from the message nearest the epoch in time, except that an alarm in any
    /// message within `stateWindow` stands (spoofing indicated or affirmed, critical jamming, an
    /// OSNMA replay or "don't use"): messages of one epoch may be read with the next one's, in
    /// whichever order the receiver sent them, and a later "none" must not hide an alarm. Every
    /// NAV-PVT of the epoch must say authenticated for the fix to be.
    public func verdict(forTimeOfDay epoch: Int) -> ReceiverVerdict? {
        /// Both times are within one day, so no remainder is needed (it was a tenth of a replay).
        @inline(__always)
        func distance(_ time: Int?) -> Int? {
            guard let time else { return nil }
            let apart = abs(time - epoch)
            return apart > 43_200_000 ? 86_400_000 - apart : apart
        }
        /// The report nearest the epoch within the window (on a tie the one read last), and
        /// `body` called with each report within it. Loops, not filters: this runs once an
        /// epoch, and allocating there was most of what reading UBX cost.
        func nearest<Value: Sendable>(_ reports: Recent<Stamped<Value>>, _ body: (Value) -> Void) -> Value? {
            var best: (distance: Int, value: Value)?
            reports.forEach { report in
                guard let distance = distance(report.time), distance <= Self.stateWindow else { return }
                body(report.value)
                if best.map({ distance <= $0.distance }) ?? true { best = (distance, report.value) }
            }
            return best?.value
        }
        var verdict = ReceiverVerdict()
        solutions.forEach { match in
            guard distance(match.timeOfDay).map({ $0 <= Self.solutionWindow }) ?? false else { return }
            verdict.fixAuthenticated = (verdict.fixAuthenticated ?? true) && match.solution.fixAuthenticated
            verdict.timeAuthenticated = (verdict.timeAuthenticated ?? true) && match.solution.timeAuthenticated
        }
        var invalid = false, replayed = false
        if let nearest = nearest(osnmaReports, { invalid = invalid || $0.status == 3; replayed = replayed || $0.timeSyncStatus == 4 }) {
            verdict.osnmaEnabled = nearest.enabled
            verdict.osnmaStatus = ReceiverVerdict.OSNMAStatus(invalid ? 3 : nearest.status)
            verdict.osnmaTimeSyncStatus = Int(replayed ? 4 : nearest.timeSyncStatus)
            verdict.authenticatedSatellites = nearest.authenticatedSatellites
        }
        var criticalJamming = false
        var worstSpoofing: UInt8?
        if let nearest = nearest(securityReports, { report in
            criticalJamming = criticalJamming || report.jamming == 3
            if let spoofing = report.spoofing, spoofing >= 2 { worstSpoofing = max(worstSpoofing ?? 0, spoofing) }
        }) {
            verdict.jammingState = (criticalJamming ? 3 : nearest.jamming).map(Int.init)
            verdict.spoofingState = (worstSpoofing ?? nearest.spoofing).map(Int.init)
        }
        var worstStatus: UInt8?
        if let nearest = nearest(statusReports, { if $0 >= 2 { worstStatus = max(worstStatus ?? 0, $0) } }) {
            verdict.spoofDetectionState = Int(worstStatus ?? nearest)
        }
        if let nearest = nearest(signalReports, { _ in }) {
            verdict.signals = nearest.signals
            verdict.authenticatedSignals = nearest.authenticated
        }
        return verdict.isEmpty ? nil : verdict
    }

    /// A time of week's time of day, through the latest NAV-PVT; without one, the open epoch's.
    private func time(ofWeek timeOfWeek: UInt32, openEpochTime: Int?) -> Int? {
        guard let weekToDay else { return latestSolutionTime ?? openEpochTime }
        return Self.dayTime(Int(timeOfWeek % 86_400_000) + weekToDay)
    }

    private static func dayTime(_ milliseconds: Int) -> Int {
        (milliseconds % 86_400_000 + 86_400_000) % 86_400_000
    }
}

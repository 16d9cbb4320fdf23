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
    static let historyLimit = 24

    /// A message as read: its time of day (`nil` while no time is known: it takes the time of
    /// the first NAV-PVT or epoch that comes), and what it said.
    private struct Stamped<Value: Sendable>: Sendable {
        var time: Int?
        var value: Value
    }

    private var solutions: [(timeOfDay: Int, solution: UBXMessage.NavigationSolution)] = []
    /// Time of day minus time of week (mod one day), from the latest NAV-PVT with both.
    private var weekToDay: Int?
    private var latestSolutionTime: Int?
    private var osnmaReports: [Stamped<UBXMessage.OSNMAReport>] = []
    private var securityReports: [Stamped<(jamming: UInt8?, spoofing: UInt8?)>] = []
    private var statusReports: [Stamped<UInt8>] = []
    private var signalReports: [Stamped<(signals: Int, authenticated: Int)>] = []
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
            Self.keep((time, solution), in: &solutions)
            stampUntimed(with: time)
        case .navigationStatus(let timeOfWeek, let state):
            let stamped = stamp(state, at: time(ofWeek: timeOfWeek, openEpochTime: openEpochTime))
            Self.keep(stamped, in: &statusReports)
        case .signalInformation(let timeOfWeek, let signals, let authenticated):
            let stamped = stamp((signals: signals, authenticated: authenticated), at: time(ofWeek: timeOfWeek, openEpochTime: openEpochTime))
            Self.keep(stamped, in: &signalReports)
        case .signalSecurity(let jamming, let spoofing):
            let stamped = stamp((jamming: jamming, spoofing: spoofing), at: latestSolutionTime ?? openEpochTime)
            Self.keep(stamped, in: &securityReports)
        case .osnma(let report):
            // SEC-OSNMA carries no time of week either.
            let stamped = stamp(report, at: latestSolutionTime ?? openEpochTime)
            Self.keep(stamped, in: &osnmaReports)
        }
    }

    /// Gives the messages read before any time was known the time of `timeOfDay`: the first
    /// NAV-PVT's, or the first epoch's as it closes, so none is lost.
    public mutating func stampUntimed(with timeOfDay: Int) {
        guard hasUntimed else { return }
        hasUntimed = false
        func stamp<Value: Sendable>(_ reports: inout [Stamped<Value>]) {
            for index in reports.indices where reports[index].time == nil { reports[index].time = timeOfDay }
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

    private static func keep<Element>(_ element: Element, in list: inout [Element]) {
        list.append(element)
        if list.count > historyLimit { list.removeFirst() }
    }

    /// The verdict for the epoch at `timeOfDay` (UTC ms of the day), `nil` when no message applies.
    ///
    /// Each state comes from the message nearest the epoch in time, except that an alarm in any
    /// message within `stateWindow` stands (spoofing indicated or affirmed, critical jamming, an
    /// OSNMA replay or "don't use"): messages of one epoch may be read with the next one's, in
    /// whichever order the receiver sent them, and a later "none" must not hide an alarm. Every
    /// NAV-PVT of the epoch must say authenticated for the fix to be.
    public func verdict(forTimeOfDay epoch: Int) -> ReceiverVerdict? {
        func distance(_ time: Int?) -> Int? {
            guard let time else { return nil }
            let ahead = Self.dayTime(time - epoch)
            return min(ahead, 86_400_000 - ahead)
        }
        /// The reports within the window, nearest last (on a tie, the one read last).
        func near<Value: Sendable>(_ reports: [Stamped<Value>]) -> [Value] {
            reports.enumerated()
                .compactMap { entry in distance(entry.element.time).flatMap { $0 <= Self.stateWindow ? ($0, entry.offset, entry.element.value) : nil } }
                .sorted { ($0.0, -$0.1) > ($1.0, -$1.1) }
                .map(\.2)
        }
        var verdict = ReceiverVerdict()
        let matches = solutions.filter { distance($0.timeOfDay).map { $0 <= Self.solutionWindow } ?? false }
        if !matches.isEmpty {
            verdict.fixAuthenticated = matches.allSatisfy(\.solution.fixAuthenticated)
            verdict.timeAuthenticated = matches.allSatisfy(\.solution.timeAuthenticated)
        }
        let osnma = near(osnmaReports)
        if let nearest = osnma.last {
            verdict.osnmaEnabled = nearest.enabled
            let invalid = osnma.contains { $0.status == 3 }
            verdict.osnmaStatus = ReceiverVerdict.OSNMAStatus(invalid ? 3 : nearest.status)
            verdict.osnmaTimeSyncStatus = Int(osnma.contains { $0.timeSyncStatus == 4 } ? 4 : nearest.timeSyncStatus)
            verdict.authenticatedSatellites = nearest.authenticatedSatellites
        }
        let security = near(securityReports)
        if let nearest = security.last {
            let jamming = security.compactMap(\.jamming)
            verdict.jammingState = (jamming.contains(3) ? 3 : nearest.jamming).map(Int.init)
            let spoofing = security.compactMap(\.spoofing).filter { $0 >= 2 }.max() ?? nearest.spoofing
            verdict.spoofingState = spoofing.map(Int.init)
        }
        let status = near(statusReports)
        if let nearest = status.last {
            verdict.spoofDetectionState = Int(status.filter { $0 >= 2 }.max() ?? nearest)
        }
        if let nearest = near(signalReports).last {
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

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

    /// Whether the fix rests on OSNMA-authenticated data: true when NAV-PVT says so; false when
    /// it says not while SEC-OSNMA reports OSNMA enabled (firmware without OSNMA reads 0 too);
    /// else unknown.
    public var gnssAuthenticated: Bool? {
        guard let fixAuthenticated else { return nil }
        if fixAuthenticated { return true }
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

    private var solutions: [(timeOfDay: Int, solution: UBXMessage.NavigationSolution)] = []
    /// Time of day minus time of week (mod one day), from the latest NAV-PVT with both.
    private var weekToDay: Int?
    private var latestSolutionTime: Int?
    private var osnma: (time: Int?, report: UBXMessage.OSNMAReport)?
    private var security: (time: Int?, jamming: UInt8?, spoofing: UInt8?)?
    private var status: (time: Int?, state: UInt8)?
    private var signalInformation: (time: Int?, signals: Int, authenticated: Int)?
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
            if solutions.count > 8 { solutions.removeFirst() }
        case .navigationStatus(let timeOfWeek, let state):
            status = (time(ofWeek: timeOfWeek, openEpochTime: openEpochTime), state)
        case .signalInformation(let timeOfWeek, let signals, let authenticated):
            signalInformation = (time(ofWeek: timeOfWeek, openEpochTime: openEpochTime), signals, authenticated)
        case .signalSecurity(let jamming, let spoofing):
            security = (latestSolutionTime ?? openEpochTime, jamming, spoofing)
        case .osnma(let report):
            osnma = (latestSolutionTime ?? openEpochTime, report)
        }
    }

    /// The verdict for the epoch at `timeOfDay` (UTC ms of the day), `nil` when no message applies.
    public func verdict(forTimeOfDay epoch: Int) -> ReceiverVerdict? {
        func near(_ time: Int?, within window: Int) -> Bool {
            guard let time else { return false }
            let distance = Self.dayTime(time - epoch)
            return min(distance, 86_400_000 - distance) <= window
        }
        var verdict = ReceiverVerdict()
        if let match = solutions.last(where: { near($0.timeOfDay, within: Self.solutionWindow) }) {
            verdict.fixAuthenticated = match.solution.fixAuthenticated
            verdict.timeAuthenticated = match.solution.timeAuthenticated
        }
        if let osnma, near(osnma.time, within: Self.stateWindow) {
            verdict.osnmaEnabled = osnma.report.enabled
            verdict.osnmaStatus = ReceiverVerdict.OSNMAStatus(osnma.report.status)
            verdict.osnmaTimeSyncStatus = Int(osnma.report.timeSyncStatus)
            verdict.authenticatedSatellites = osnma.report.authenticatedSatellites
        }
        if let security, near(security.time, within: Self.stateWindow) {
            verdict.jammingState = security.jamming.map(Int.init)
            verdict.spoofingState = security.spoofing.map(Int.init)
        }
        if let status, near(status.time, within: Self.stateWindow) {
            verdict.spoofDetectionState = Int(status.state)
        }
        if let signalInformation, near(signalInformation.time, within: Self.stateWindow) {
            verdict.signals = signalInformation.signals
            verdict.authenticatedSignals = signalInformation.authenticated
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

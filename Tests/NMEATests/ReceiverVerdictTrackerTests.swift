import NMEA
import Testing
import TestSupport

/// The tracker's histories (issue 42's speed row): it keeps each kind of message in a ring and,
/// while the ring is in time order, looks only at the messages near an epoch. Checked against a
/// plain reference that keeps every message in a list and filters all of them for each epoch,
/// over random receivers: 1 and 10 Hz, across midnight, messages late, early and out of order,
/// alarms among "none"s, messages before any time, epochs asked for out of order (a held fix).
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ReceiverVerdictTrackerTests {
    @Test(arguments: 0..<40) func theRingsAgreeWithAFilterOfEveryMessage(_ seed: Int) {
        var random = SplitMix64(state: UInt64(seed))
        let hertz = seed % 2 == 0 ? 1 : 10
        let step = 1000 / hertz
        // Every fourth run starts a minute before midnight.
        let start = seed % 4 == 0 ? 86_400_000 - 60_000 + Int(random.next() % 1000) : Int(random.next() % 86_000_000)
        let weekOffset = Int(random.next() % 600_000_000)
        var tracker = ReceiverVerdictTracker()
        var reference = Reference()
        var epochs: [Int] = []
        var latestSolution: Int?
        var openEpoch: Int?

        func add(_ payload: [UInt8], _ messageClass: UInt8, _ messageID: UInt8, time: Int?) {
            let message = payload.withUnsafeBufferPointer {
                UBXMessage(UBXFrame(messageClass: messageClass, messageID: messageID, payload: $0))
            }
            guard let message else {
                Issue.record("a message the test built did not decode")
                return
            }
            tracker.add(message, openEpochTime: openEpoch)
            reference.add(message, at: time)
        }

        for index in 0..<200 {
            let epoch = Reference.dayTime(start + index * step)
            openEpoch = random.next() % 3 == 0 ? nil : epoch
            // Some messages sent a little before or after their epoch, some far out of order.
            func jittered() -> Int {
                switch random.next() % 10 {
                case 0: Reference.dayTime(epoch - Int(random.next() % 3000))
                case 1: Reference.dayTime(epoch + Int(random.next() % 3000))
                default: epoch
                }
            }
            if index > 0 || seed % 3 != 0 {
                if random.next() % 8 != 0 {
                    let time = random.next() % 10 == 0 ? jittered() : epoch
                    add(Self.solution(at: time, weekOffset: weekOffset, authenticated: random.next() % 5 != 0), 0x01, 0x07, time: time)
                    latestSolution = time
                    reference.stampUntimed(time)
                }
            }
            // Before any NAV-PVT, time-of-week messages take the open epoch's time like the rest.
            let weekTime = latestSolution == nil ? openEpoch : jittered()
            if random.next() % 4 != 0 {
                let state = UInt8(random.next() % 10 == 0 ? 2 + random.next() % 2 : random.next() % 2)
                add(Self.status(at: weekTime ?? 0, weekOffset: weekOffset, state: state), 0x01, 0x03, time: weekTime)
            }
            if random.next() % 4 != 0 {
                add(Self.signals(at: weekTime ?? 0, weekOffset: weekOffset, count: Int(random.next() % 6), authenticated: Int(random.next() % 3)),
                    0x01, 0x43, time: weekTime)
            }
            // A message without time takes the latest NAV-PVT's when it is within a second of the
            // open epoch's, else the open epoch's.
            var untimedTime = latestSolution ?? openEpoch
            if let solved = latestSolution, let open = openEpoch,
               min(Reference.dayTime(solved - open), Reference.dayTime(open - solved)) > 1000 {
                untimedTime = open
            }
            if random.next() % 4 != 0 {
                let jamming = UInt8(random.next() % 12 == 0 ? 3 : random.next() % 3)
                let spoofing = UInt8(random.next() % 12 == 0 ? 2 + random.next() % 2 : random.next() % 2)
                add(Self.security(jamming: random.next() % 6 == 0 ? nil : jamming, spoofing: random.next() % 6 == 0 ? nil : spoofing),
                    0x27, 0x09, time: untimedTime)
            }
            if random.next() % 4 != 0 {
                add(Self.osnma(status: UInt8(random.next() % 10 == 0 ? 3 : random.next() % 3),
                               timeSync: UInt8(random.next() % 10 == 0 ? 4 : random.next() % 4),
                               enabled: random.next() % 5 != 0, satellites: UInt8(random.next() % 12)),
                    0x27, 0x0A, time: untimedTime)
            }
            epochs.append(epoch)
            // The epoch just read, one asked for again later, and times between epochs.
            var asked = [epoch, Reference.dayTime(epoch + Int(random.next() % 4000) - 2000)]
            if let earlier = epochs.randomElement(using: &random) { asked.append(earlier) }
            for time in asked {
                #expect(tracker.verdict(forTimeOfDay: time) == reference.verdict(at: time),
                        "seed \(seed), message set \(index), epoch \(time)")
            }
        }
        #expect(tracker.messagesRead == reference.count)
    }

    /// An alarm stands against any number of later "none"s within 2 s (a 10 or 20 Hz receiver
    /// sends more than the 16 kept of each kind), and a NAV-PVT not saying authenticated against
    /// any number of ones saying so in its epoch (found by the hostile pass: the 17th pushed it out).
    @Test(arguments: [15, 16, 40]) func anAlarmOutlastsAnyNumberOfNones(_ nones: Int) {
        func message(_ payload: [UInt8], _ messageClass: UInt8, _ messageID: UInt8) -> UBXMessage? {
            payload.withUnsafeBufferPointer { UBXMessage(UBXFrame(messageClass: messageClass, messageID: messageID, payload: $0)) }
        }
        var tracker = ReceiverVerdictTracker()
        let epoch = 43_200_000, week = 100_000
        guard let unauthenticated = message(Self.solution(at: epoch, weekOffset: week, authenticated: false), 0x01, 0x07),
              let authenticated = message(Self.solution(at: epoch, weekOffset: week, authenticated: true), 0x01, 0x07),
              let spoofed = message(Self.security(jamming: 3, spoofing: 3), 0x27, 0x09),
              let clean = message(Self.security(jamming: 1, spoofing: 1), 0x27, 0x09),
              let replay = message(Self.osnma(status: 2, timeSync: 4, enabled: true, satellites: 5), 0x27, 0x0A),
              let synced = message(Self.osnma(status: 2, timeSync: 1, enabled: true, satellites: 5), 0x27, 0x0A),
              let alarmed = message(Self.status(at: epoch, weekOffset: week, state: 3), 0x01, 0x03)
        else {
            Issue.record("a message the test built did not decode")
            return
        }
        for first in [unauthenticated, spoofed, replay, alarmed] { tracker.add(first, openEpochTime: epoch) }
        for index in 0..<nones {
            // 50 ms apart: all within 2 s of the epoch.
            let time = epoch + 50 * (index % 40)
            guard let calm = message(Self.status(at: time, weekOffset: week, state: 1), 0x01, 0x03) else { return }
            for next in [authenticated, clean, synced, calm] { tracker.add(next, openEpochTime: epoch) }
        }
        let verdict = tracker.verdict(forTimeOfDay: epoch)
        #expect(verdict?.fixAuthenticated == false && verdict?.spoofing == true && verdict?.jamming == true
                    && verdict?.osnmaReplay == true && verdict?.spoofDetectionState == 3, "\(String(describing: verdict))")
    }

    // MARK: Payloads, at the offsets UBXReaderTests checks against pyubx2

    static func solution(at time: Int, weekOffset: Int, authenticated: Bool) -> [UInt8] {
        var payload = [UInt8](repeating: 0, count: 92)
        put32(&payload, 0, UInt32((time + weekOffset) % 604_800_000))
        payload[8] = UInt8(time / 3_600_000)
        payload[9] = UInt8(time / 60_000 % 60)
        payload[10] = UInt8(time / 1000 % 60)
        payload[11] = 0x07
        payload[21] = 0x01
        put32(&payload, 16, UInt32(time % 1000 * 1_000_000))
        let flags3: UInt16 = authenticated ? 0x6000 : 0
        payload[78] = UInt8(flags3 & 0xFF)
        payload[79] = UInt8(flags3 >> 8)
        return payload
    }

    static func status(at time: Int, weekOffset: Int, state: UInt8) -> [UInt8] {
        var payload = [UInt8](repeating: 0, count: 16)
        put32(&payload, 0, UInt32((time + weekOffset) % 604_800_000))
        payload[7] = state << 3
        return payload
    }

    static func signals(at time: Int, weekOffset: Int, count: Int, authenticated: Int) -> [UInt8] {
        var payload = [UInt8](repeating: 0, count: 8 + 16 * count)
        put32(&payload, 0, UInt32((time + weekOffset) % 604_800_000))
        payload[5] = UInt8(count)
        for index in 0..<min(count, authenticated) { payload[8 + 16 * index + 11] = 0x02 }
        return payload
    }

    static func security(jamming: UInt8?, spoofing: UInt8?) -> [UInt8] {
        var flags: UInt8 = 0
        if let jamming { flags |= 0x01 | jamming << 1 }
        if let spoofing { flags |= 0x08 | spoofing << 4 }
        return [2, flags, 0, 0]
    }

    static func osnma(status: UInt8, timeSync: UInt8, enabled: Bool, satellites: UInt8) -> [UInt8] {
        var payload = [UInt8](repeating: 0, count: 20)
        payload[1] = status << 1
        payload[2] = enabled ? 1 : 0
        payload[3] = timeSync << 1
        payload[16] = satellites
        return payload
    }

    static func put32(_ payload: inout [UInt8], _ offset: Int, _ value: UInt32) {
        for byte in 0..<4 { payload[offset + byte] = UInt8(value >> (8 * byte) & 0xFF) }
    }
}

/// Every message in one list with the time the test gave it; a verdict filters the last 16 of
/// each kind for those within the window, with distances taken by remainder.
private struct Reference {
    struct Entry {
        var kind: Int
        var time: Int?
        var message: UBXMessage
    }

    private var entries: [Entry] = []
    var count: Int { entries.count }

    static func dayTime(_ time: Int) -> Int { ((time % 86_400_000) + 86_400_000) % 86_400_000 }

    mutating func add(_ message: UBXMessage, at time: Int?) {
        entries.append(Entry(kind: message.kind, time: time, message: message))
    }

    /// What a later "none" must not hide: a NAV-PVT not saying authenticated, spoofing
    /// indicated or affirmed, critical jamming, OSNMA "don't use" or a replay.
    static func isAlarm(_ message: UBXMessage) -> Bool {
        switch message {
        case .navigationSolution(let solution): !solution.fixAuthenticated || !solution.timeAuthenticated
        case .navigationStatus(_, let state): state >= 2
        case .signalInformation: false
        case .signalSecurity(let jamming, let spoofing): jamming == 3 || (spoofing ?? 0) >= 2
        case .osnma(let report): report.status == 3 || report.timeSyncStatus == 4
        }
    }

    mutating func stampUntimed(_ time: Int) {
        for index in entries.indices where entries[index].time == nil { entries[index].time = time }
    }

    func verdict(at epoch: Int) -> ReceiverVerdict? {
        func distance(_ time: Int) -> Int {
            let forward = Self.dayTime(time - epoch), backward = Self.dayTime(epoch - time)
            return Swift.min(forward, backward)
        }
        /// Of `entries` within `window`, newest first, with their distances.
        func near(_ entries: [Entry], _ window: Int) -> [(distance: Int, message: UBXMessage)] {
            entries.reversed().compactMap { entry in
                guard let time = entry.time, distance(time) <= window else { return nil }
                return (distance(time), entry.message)
            }
        }
        /// The kind's last 16, and its last 16 alarms (which later "none"s do not push out).
        func kept(_ kind: Int) -> (recent: [Entry], alarms: [Entry]) {
            let all = entries.filter { $0.kind == kind }
            return (Array(all.suffix(16)), Array(all.filter { Self.isAlarm($0.message) }.suffix(16)))
        }
        /// The nearest of the last 16 within 2 s (of equals the newest), and every message
        /// within 2 s that is kept, alarms included.
        func nearest(_ kind: Int) -> (UBXMessage, [UBXMessage])? {
            let (recent, alarms) = kept(kind)
            let found = near(recent, 2000)
            guard let best = found.min(by: { $0.distance < $1.distance }) else { return nil }
            return (best.message, found.map(\.message) + near(alarms, 2000).map(\.message))
        }
        var verdict = ReceiverVerdict()
        let solutions = kept(0)
        for (_, message) in near(solutions.recent, 10) + near(solutions.alarms, 10) {
            guard case .navigationSolution(let solution) = message else { continue }
            verdict.fixAuthenticated = (verdict.fixAuthenticated ?? true) && solution.fixAuthenticated
            verdict.timeAuthenticated = (verdict.timeAuthenticated ?? true) && solution.timeAuthenticated
        }
        if let (best, all) = nearest(1), case .navigationStatus(_, let state) = best {
            let states = all.compactMap { message -> UInt8? in
                if case .navigationStatus(_, let state) = message { state } else { nil }
            }
            verdict.spoofDetectionState = Int(states.filter { $0 >= 2 }.max() ?? state)
        }
        if let (best, _) = nearest(2), case .signalInformation(_, let signals, let authenticated) = best {
            verdict.signals = signals
            verdict.authenticatedSignals = authenticated
        }
        if let (best, all) = nearest(3), case .signalSecurity(let jamming, let spoofing) = best {
            let states = all.compactMap { message -> (UInt8?, UInt8?)? in
                if case .signalSecurity(let jamming, let spoofing) = message { (jamming, spoofing) } else { nil }
            }
            verdict.jammingState = states.contains { $0.0 == 3 } ? 3 : jamming.map(Int.init)
            verdict.spoofingState = states.compactMap(\.1).filter { $0 >= 2 }.max().map(Int.init) ?? spoofing.map(Int.init)
        }
        if let (best, all) = nearest(4), case .osnma(let report) = best {
            let reports = all.compactMap { message -> UBXMessage.OSNMAReport? in
                if case .osnma(let report) = message { report } else { nil }
            }
            verdict.osnmaEnabled = report.enabled
            verdict.osnmaStatus = reports.contains { $0.status == 3 } ? .invalid
                : ReceiverVerdict.OSNMAStatus.allCases[Int(report.status)]
            verdict.osnmaTimeSyncStatus = reports.contains { $0.timeSyncStatus == 4 } ? 4 : Int(report.timeSyncStatus)
            verdict.authenticatedSatellites = report.authenticatedSatellites
        }
        return verdict == ReceiverVerdict() ? nil : verdict
    }
}

import Foundation
import Testing

/// SPEC §15, "The receiver's own authentication and spoofing verdicts", through the built
/// binary: u-blox UBX frames mixed with NMEA, every packet made by PyPI's pyubx2
/// (`Support/ubx-stream.py`), read from a replay file and from a pseudo-terminal. What each
/// record must say is worked out here from the options the stream was made with (`Stream`'s
/// oracle, SPEC's table), never from geolocate's output.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct ReceiverVerdictEndToEndTests {
    let geolocate = GeolocateProcess()
    static let generator = GeolocateProcess.projectRoot.appendingPathComponent("Tests/GeolocateIntegrationTests/Support/ubx-stream.py").path
    /// Debian's Python, which has PyJWT and cryptography (the generator's pyubx2 is on `PATH`'s `python3`).
    static let jwtPython = "/usr/bin/python3"

    // MARK: The streams and what they must give

    /// What a u-blox receiver sends each epoch: `ubx-stream.py`'s options.
    struct Stream: Sendable, CustomTestStringConvertible {
        var epochs = 3
        /// NAV-PVT `flags3.nmaFixStatus` (and `authTime`); nil: no NAV-PVT.
        var pvt: Int?
        /// NAV-STATUS `spoofDetState`; nil: no NAV-STATUS.
        var status: Int?
        /// NAV-SIG: `authenticated` of `signals` Galileo signals with `authStatus`.
        var navSig: (authenticated: Int, signals: Int)?
        /// SEC-SIG jamming and spoofing states; "-" leaves that detection off.
        var secSig: (jamming: String, spoofing: String)?
        var secSigVersion = 2
        /// SEC-OSNMA osnmaEnabled, nmaStatus, timSyncStatus, authSVs.
        var osnma: (enabled: Int, status: Int, sync: Int, satellites: Int)?
        var ubxFirst = false
        var corrupt = false
        var maskPVTFrom: Int?
        /// The first epoch, UTC ("2026-03-01T12:00:00" when nil).
        var start: String?

        var arguments: [String] {
            var out = ["--epochs", String(epochs)]
            if let pvt { out += ["--pvt", String(pvt)] }
            if let status { out += ["--status", String(status)] }
            if let navSig { out += ["--nav-sig", "\(navSig.authenticated)/\(navSig.signals)"] }
            // "=": argparse would read "-,1" as an option.
            if let secSig { out += ["--sec-sig=\(secSig.jamming),\(secSig.spoofing)", "--sec-sig-version", String(secSigVersion)] }
            if let osnma { out += ["--osnma", "\(osnma.enabled),\(osnma.status),\(osnma.sync),\(osnma.satellites)"] }
            if ubxFirst { out.append("--ubx-first") }
            if corrupt { out.append("--corrupt") }
            if let maskPVTFrom { out += ["--mask-pvt-from", String(maskPVTFrom)] }
            if let start { out += ["--start", start] }
            return out
        }

        var testDescription: String { arguments.dropFirst(2).joined(separator: " ").isEmpty ? "NMEA only" : arguments.dropFirst(2).joined(separator: " ") }

        /// Good UBX packets per epoch.
        var packetsPerEpoch: Int { [pvt != nil, status != nil, navSig != nil, secSig != nil, osnma != nil].filter { $0 }.count }

        /// SPEC: true when NAV-PVT says nmaFixStatus 1, unless SEC-OSNMA contradicts it (OSNMA
        /// disabled, nmaStatus 3 "don't use", timSyncStatus 4 a replay: then false, REFERENCE);
        /// false when it says 0 while SEC-OSNMA reports OSNMA enabled; null otherwise.
        func gnssAuthenticated(epoch: Int = 0) -> Bool? {
            guard let pvt else { return nil }
            let said = maskPVTFrom.map { epoch >= $0 ? 0 : pvt } ?? pvt
            if said == 1 {
                guard let osnma else { return true }
                return !(osnma.enabled == 0 || osnma.status == 3 || osnma.sync == 4)
            }
            return osnma?.enabled == 1 ? false : nil
        }

        /// SEC-SIG spoofing 2 or 3, or NAV-STATUS 2 or 3: true; else one of them 1: false; else null.
        var receiverSpoofing: Bool? {
            let states = [secSig.flatMap { Int($0.spoofing) }, status].compactMap { $0 }
            if states.contains(where: { $0 >= 2 }) { return true }
            return states.contains(1) ? false : nil
        }

        /// SEC-SIG jamming 3: true; 1 or 2: false; 0, off or absent: null.
        var receiverJamming: Bool? {
            guard let state = secSig.flatMap({ Int($0.jamming) }), state > 0 else { return nil }
            return state == 3
        }

        /// SEC-OSNMA timSyncStatus 4: true; any other: false; no SEC-OSNMA: null.
        var osnmaReplay: Bool? { osnma.map { $0.sync == 4 } }

        /// The token's `gnssAuth.osnma`.
        var osnmaName: String? { osnma.map { ["not-yet", "test", "operational", "invalid"][$0.status] } }
    }

    /// `stream` written to a file in this test's home.
    func write(_ stream: Stream) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let log = geolocate.home.appendingPathComponent("ubx-\(UUID().uuidString).log").path
        let made = try Spawn.run(["python3", Self.generator] + stream.arguments)
        try #require(made.status == 0, "ubx-stream.py \(stream.arguments): \(String(decoding: made.stderr, as: UTF8.self))")
        try made.stdout.write(to: URL(fileURLWithPath: log))
        return log
    }

    /// `trigger login` on `log` (fine permission) and the record it printed.
    func trigger(_ log: String, _ extra: [String] = []) throws -> (result: GeolocateProcess.Result, record: [String: Any]) {
        let result = try geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine"] + extra)
        let record = (try? result.json()) ?? [:]
        return (result, record)
    }

    /// `track` over all of `log`, every fix printed and none spooled, and the records.
    func track(_ log: String, _ extra: [String] = []) throws -> (result: GeolocateProcess.Result, records: [[String: Any]]) {
        let result = try geolocate.run(["track", "--replay", log, "--permission", "fine", "--every-fix", "--stdout", "--no-spool"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        let records = result.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        return (result, records)
    }

    static func signals(_ record: [String: Any]) -> [String: Any] { record["signals"] as? [String: Any] ?? [:] }

    /// A member as JSON says it: "true", "false", "null", or "absent" when the key is missing.
    static func said(_ object: [String: Any], _ key: String) -> String {
        guard let value = object[key] else { return "absent" }
        if value is NSNull { return "null" }
        if let text = value as? String { return text }
        if let bool = value as? Bool { return bool ? "true" : "false" }
        return "\(value)"
    }

    static func text(_ value: Bool?) -> String { value.map { $0 ? "true" : "false" } ?? "null" }

    /// The four signals and their reasons lines in `signals` are what `stream` says for `epoch`.
    static func expectVerdicts(_ signals: [String: Any], _ stream: Stream, epoch: Int = 0, snakeCase: Bool = false,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        let keys = snakeCase ? ["gnss_authenticated", "receiver_spoofing", "receiver_jamming", "osnma_replay"]
            : ["gnssAuthenticated", "receiverSpoofing", "receiverJamming", "osnmaReplay"]
        let expected = [stream.gnssAuthenticated(epoch: epoch), stream.receiverSpoofing, stream.receiverJamming, stream.osnmaReplay]
        for (key, value) in zip(keys, expected) {
            #expect(said(signals, key) == text(value), "\(key) for \(stream.testDescription) at epoch \(epoch): \(signals)",
                    sourceLocation: sourceLocation)
        }
        // gpsd's jamming figure is unknown here: said as null, never left out.
        #expect(said(signals, "jamming") == "null", "\(signals)", sourceLocation: sourceLocation)
        let reasons = signals["reasons"] as? [String] ?? []
        for (prefix, value) in [("receiverSpoofing:", stream.receiverSpoofing), ("receiverJamming:", stream.receiverJamming),
                                ("osnmaReplay:", stream.osnmaReplay)] {
            #expect(reasons.contains { $0.hasPrefix(prefix) } == (value == true), "\(prefix) for \(stream.testDescription): \(reasons)",
                    sourceLocation: sourceLocation)
        }
    }

    /// The record has Dublin's fix, the stream's position.
    static func expectDublin(_ record: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) {
        let location = record["location"] as? [String: Any] ?? [:]
        let latitude = (location["latitude"] as? String).flatMap(Double.init)
        let longitude = (location["longitude"] as? String).flatMap(Double.init)
        #expect(latitude.map { abs($0 - 53.3498) < 1e-6 } == true && longitude.map { abs($0 + 6.2603) < 1e-6 } == true,
                "\(record)", sourceLocation: sourceLocation)
    }

    // MARK: 1. Every status value of each message

    /// NAV-PVT's nmaFixStatus with and without SEC-OSNMA, enabled or not: SPEC's table.
    @Test(arguments: [nil, 0, 1] as [Int?], [nil, 0, 1] as [Int?])
    func navPVTAndOSNMAEnabledDecideGnssAuthenticated(pvt: Int?, osnmaEnabled: Int?) throws {
        let stream = Stream(pvt: pvt, osnma: osnmaEnabled.map { (enabled: $0, status: 2, sync: 1, satellites: 5) })
        let (result, record) = try trigger(try write(stream))
        #expect(result.status == 0, "\(result.stderr)")
        Self.expectDublin(record)
        Self.expectVerdicts(Self.signals(record), stream)
    }

    /// SEC-OSNMA's nmaStatus by name and its authSVs count reach the token's `gnssAuth`.
    @Test(arguments: zip(0...3, [0, 3, 9, 17]))
    func osnmaStatusAndSatellitesReachTheToken(status: Int, satellites: Int) throws {
        #expect(try geolocate.run(["key", "init"]).status == 0)
        let stream = Stream(pvt: 1, osnma: (1, status, 1, satellites))
        let claims = try verifiedClaims(try write(stream))
        let auth = try #require(claims["gnssAuth"] as? [String: Any], "\(claims)")
        #expect(auth["osnma"] as? String == stream.osnmaName, "\(auth)")
        #expect(auth["authenticatedSatellites"] as? Int == satellites, "\(auth)")
        #expect(Self.said(auth, "fixAuthenticated") == Self.text(stream.gnssAuthenticated()), "\(auth)")
        Self.expectVerdicts(Self.signals(claims["loc"] as? [String: Any] ?? [:]), stream)
    }

    /// SEC-OSNMA's timSyncStatus: only 4 is a replay, which the default policy denies.
    @Test(arguments: 0...7) func onlyTimeSyncStatusFourIsAnOSNMAReplay(sync: Int) throws {
        let stream = Stream(pvt: 1, osnma: (1, 2, sync, 6))
        let (result, record) = try trigger(try write(stream), ["--policy"])
        #expect(result.status == 0, "\(result.stderr)")
        Self.expectVerdicts(Self.signals(record), stream)
        let policy = record["policy"] as? [String: Any] ?? [:]
        #expect(policy["decision"] as? String == (sync == 4 ? "deny" : "allow"), "\(policy)")
        if sync == 4 { #expect((policy["reason"] as? String)?.hasPrefix("osnmaReplay:") == true, "\(policy)") }
    }

    /// Both SEC-SIG versions, every jamming and spoofing state and detection off, without NAV-PVT.
    static let secSigCases: [Stream] = [1, 2].flatMap { version in
        ["-", "0", "1", "2", "3"].flatMap { jamming in
            ["-", "0", "1", "2", "3"].map { spoofing in Stream(secSig: (jamming, spoofing), secSigVersion: version) }
        }
    }

    @Test(arguments: secSigCases) func secSigStates(stream: Stream) throws {
        let (result, record) = try trigger(try write(stream), ["--policy"])
        #expect(result.status == 0, "\(result.stderr)")
        Self.expectDublin(record)
        let signals = Self.signals(record)
        Self.expectVerdicts(signals, stream)
        if stream.receiverSpoofing == true {
            let reason = (signals["reasons"] as? [String] ?? []).first { $0.hasPrefix("receiverSpoofing:") } ?? ""
            #expect(reason.contains("SEC-SIG"), "\(reason)")
        }
        // receiverSpoofing is distrusted by default, receiverJamming is not.
        let policy = record["policy"] as? [String: Any] ?? [:]
        #expect(policy["decision"] as? String == (stream.receiverSpoofing == true ? "deny" : "allow"), "\(policy)")
    }

    /// NAV-STATUS spoofDetState, alone and beside every SEC-SIG spoofing state, with NAV-PVT
    /// (its time of week placed by NAV-PVT) and without.
    static let navStatusCases: [Stream] = [nil, 1].flatMap { pvt in
        [0, 1, 2, 3].flatMap { status in
            [nil, "-", "0", "1", "2", "3"].map { spoofing in
                Stream(pvt: pvt, status: status, secSig: spoofing.map { (jamming: "1", spoofing: $0) })
            }
        }
    }

    @Test(arguments: navStatusCases) func navStatusSpoofDetState(stream: Stream) throws {
        let (result, record) = try trigger(try write(stream))
        #expect(result.status == 0, "\(result.stderr)")
        let signals = Self.signals(record)
        Self.expectVerdicts(signals, stream)
        if let status = stream.status, status >= 2 {
            let reason = (signals["reasons"] as? [String] ?? []).first { $0.hasPrefix("receiverSpoofing:") } ?? ""
            #expect(reason.contains("NAV-STATUS"), "\(reason)")
        }
    }

    /// NAV-SIG is decoded but not surfaced in records: a stream with it still gives its fix and
    /// verdicts, and its frames are counted.
    @Test(arguments: [(0, 0), (0, 4), (3, 5), (8, 8), (40, 60)]) func navSigStillGivesTheFix(authenticated: Int, signals: Int) throws {
        let stream = Stream(epochs: 5, pvt: 1, navSig: (authenticated, signals), osnma: (1, 2, 1, 6))
        let log = try write(stream)
        let (result, record) = try trigger(log)
        #expect(result.status == 0, "\(result.stderr)")
        Self.expectDublin(record)
        Self.expectVerdicts(Self.signals(record), stream)
        let (tracked, records) = try track(log, ["--verbose"])
        #expect(records.count == stream.epochs)
        let counts = "\(2 * stream.epochs) sentences read, 0 of other types, \(stream.packetsPerEpoch * stream.epochs) UBX frames"
        #expect(tracked.stderr.contains(counts), "\(counts) in: \(tracked.stderr)")
        #expect(tracked.stderr.contains("UBX frames, no line rejected"), "\(tracked.stderr)")
    }

    // MARK: 2. Policy

    /// Under `policy.requireAuthenticated`: an OSNMA-authenticated fix is allowed (a replay's
    /// `replayed` is not distrusted by default); one NAV-PVT says is not authenticated, and one
    /// from a receiver without UBX, are undetermined.
    @Test func requireAuthenticatedAllowsOnlyAnAuthenticatedFix() throws {
        #expect(try geolocate.run(["config", "set", "policy.requireAuthenticated", "true"]).status == 0)
        let reason = "the receiver did not say Galileo OSNMA authenticated the fix, and policy.requireAuthenticated asks for it"
        let cases: [(Stream, String)] = [(Stream(pvt: 1, osnma: (1, 2, 1, 6)), "allow"),
                                         (Stream(pvt: 0, osnma: (1, 2, 1, 6)), "undetermined"),
                                         (Stream(pvt: 0), "undetermined"),
                                         (Stream(), "undetermined")]
        for (stream, decision) in cases {
            let log = try write(stream)
            let (result, record) = try trigger(log, ["--policy"])
            #expect(result.status == 0, "\(result.stderr)")
            Self.expectVerdicts(Self.signals(record), stream)
            #expect(Self.said(Self.signals(record), "replayed") == "true")
            let policy = record["policy"] as? [String: Any] ?? [:]
            #expect(policy["decision"] as? String == decision, "\(stream.testDescription): \(policy)")
            if decision == "undetermined" { #expect(policy["reason"] as? String == reason, "\(policy)") }
            // --enforce: 0 only when allowed.
            let enforced = try geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--enforce"])
            #expect(enforced.status == (decision == "allow" ? 0 : 4), "\(stream.testDescription): \(enforced.stderr)")
        }
        // Without the setting, the same unauthenticated fix is allowed.
        #expect(try geolocate.run(["config", "set", "policy.requireAuthenticated", "false"]).status == 0)
        let (_, record) = try trigger(try write(Stream(pvt: 0, osnma: (1, 2, 1, 6))), ["--policy"])
        #expect((record["policy"] as? [String: Any])?["decision"] as? String == "allow", "\(record)")
    }

    /// The default `policy.distrust` denies the receiver's spoofing affirmed and an OSNMA
    /// replay, and `--enforce` exits 4 for them and 0 for a clean stream.
    @Test func spoofingAndOSNMAReplayDenyByDefault() throws {
        let cases: [(Stream, String?)] = [(Stream(pvt: 1, secSig: ("1", "3"), osnma: (1, 2, 1, 6)), "receiverSpoofing:"),
                                          (Stream(pvt: 1, secSig: ("1", "1"), osnma: (1, 2, 4, 6)), "osnmaReplay:"),
                                          (Stream(pvt: 1, status: 2), "receiverSpoofing:"),
                                          (Stream(pvt: 1, status: 1, secSig: ("1", "1"), osnma: (1, 2, 1, 6)), nil)]
        for (stream, denial) in cases {
            let log = try write(stream)
            let (result, record) = try trigger(log, ["--policy"])
            #expect(result.status == 0, "\(result.stderr)")
            Self.expectVerdicts(Self.signals(record), stream)
            let policy = record["policy"] as? [String: Any] ?? [:]
            #expect(policy["decision"] as? String == (denial == nil ? "allow" : "deny"), "\(stream.testDescription): \(policy)")
            if let denial { #expect((policy["reason"] as? String)?.hasPrefix(denial) == true, "\(policy)") }
            let enforced = try geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--enforce"])
            #expect(enforced.status == (denial == nil ? 0 : 4), "\(stream.testDescription): \(enforced.stderr)")
            if let denial { #expect(enforced.stderr.contains(denial), "the reason on stderr: \(enforced.stderr)") }
        }
    }

    /// Critical jamming is reported but denies only once `policy.distrust` names it.
    @Test func criticalJammingDeniesOnlyWhenDistrusted() throws {
        let stream = Stream(pvt: 1, secSig: ("3", "1"))
        let log = try write(stream)
        let (_, before) = try trigger(log, ["--policy"])
        Self.expectVerdicts(Self.signals(before), stream)
        #expect((before["policy"] as? [String: Any])?["decision"] as? String == "allow", "\(before)")
        #expect(try geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--enforce"]).status == 0)

        #expect(try geolocate.run(["config", "set", "policy.distrust", "jumped,receiverJamming"]).status == 0)
        let (_, after) = try trigger(log, ["--policy"])
        let policy = after["policy"] as? [String: Any] ?? [:]
        #expect(policy["decision"] as? String == "deny", "\(policy)")
        #expect((policy["reason"] as? String)?.hasPrefix("receiverJamming:") == true, "\(policy)")
        #expect(try geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--enforce"]).status == 4)
        // A warning (2) is not critical.
        let warning = Stream(pvt: 1, secSig: ("2", "1"))
        let (_, warned) = try trigger(try write(warning), ["--policy"])
        Self.expectVerdicts(Self.signals(warned), warning)
        #expect((warned["policy"] as? [String: Any])?["decision"] as? String == "allow", "\(warned)")
    }

    // MARK: 3. Order and noise

    /// Three receivers, one that says all is well, one that says everything is wrong and one
    /// without NAV-PVT, with
    /// UBX after or before each epoch's NMEA, with and without broken frames: every epoch's
    /// record has its verdicts, and broken frames are skipped and counted.
    static let orderCases: [Stream] = [false, true].flatMap { ubxFirst in
        [false, true].flatMap { corrupt in
            [Stream(epochs: 6, pvt: 1, status: 1, secSig: ("1", "1"), osnma: (1, 2, 1, 6), ubxFirst: ubxFirst, corrupt: corrupt),
             Stream(epochs: 6, pvt: 1, status: 2, secSig: ("3", "3"), secSigVersion: 1, osnma: (1, 3, 4, 2), ubxFirst: ubxFirst, corrupt: corrupt),
             // Without NAV-PVT the others are placed by the NMEA epoch open when they arrive.
             Stream(epochs: 6, status: 3, secSig: ("2", "2"), osnma: (1, 1, 4, 2), ubxFirst: ubxFirst, corrupt: corrupt)]
        }
    }

    @Test(arguments: orderCases) func orderAndBrokenFramesChangeNoVerdict(stream: Stream) throws {
        let log = try write(stream)
        let (result, records) = try track(log, ["--verbose"])
        #expect(records.count == stream.epochs, "\(result.stderr)")
        for (epoch, record) in records.enumerated() {
            Self.expectDublin(record)
            Self.expectVerdicts(Self.signals(record), stream, epoch: epoch)
        }
        let counts = "\(2 * stream.epochs) sentences read, 0 of other types, \(stream.packetsPerEpoch * stream.epochs) UBX frames"
        #expect(result.stderr.contains(counts), "\(counts) in: \(result.stderr)")
        if stream.corrupt {
            #expect(result.stderr.contains("\(2 * stream.epochs) bad UBX frame"), "\(result.stderr)")
        } else {
            #expect(!result.stderr.contains("bad UBX frame"), "\(result.stderr)")
        }
        let (triggered, record) = try trigger(log, ["--verbose", "--policy"])
        #expect(triggered.status == 0, "\(triggered.stderr)")
        Self.expectVerdicts(Self.signals(record), stream, epoch: records.count - 1)
        #expect((record["policy"] as? [String: Any])?["decision"] as? String == (stream.receiverSpoofing == true ? "deny" : "allow"))
        if stream.corrupt { #expect(triggered.stderr.contains("bad UBX frame"), "\(triggered.stderr)") }
    }

    /// A receiver that loses OSNMA midway: NAV-PVT's nmaFixStatus drops to 0 at epoch 4, and
    /// each epoch's record says what its own NAV-PVT said.
    @Test(arguments: [false, true]) func eachEpochHasItsOwnNAVPVT(ubxFirst: Bool) throws {
        let stream = Stream(epochs: 8, pvt: 1, osnma: (1, 2, 1, 6), ubxFirst: ubxFirst, maskPVTFrom: 4)
        let (_, records) = try track(try write(stream))
        #expect(records.count == stream.epochs)
        for (epoch, record) in records.enumerated() {
            Self.expectVerdicts(Self.signals(record), stream, epoch: epoch)
        }
    }

    /// OpenLocate's records say the same, in snake_case inside the location (2026-03-01T12:00:00Z).
    @Test func openLocateSaysTheSameInSnakeCase() throws {
        for stream in [Stream(pvt: 1, status: 3, secSig: ("3", "1"), osnma: (1, 2, 4, 6)), Stream(pvt: 0)] {
            let (result, record) = try trigger(try write(stream), ["--format", "openlocate"])
            #expect(result.status == 0, "\(result.stderr)")
            // trigger prints the one location; an endpoint's body wraps it in "locations".
            #expect(record["locations"] == nil && record["utc_timestamp"] as? Int == 1_772_366_400, "\(record)")
            let signals = try #require(record["signals"] as? [String: Any], "\(record)")
            Self.expectVerdicts(signals, stream, snakeCase: true)
        }
    }

    // MARK: 4. Through a pseudo-terminal

    /// A live receiver on a terminal (`pty-nmea.py`): `stream` dated from now, written at about
    /// one epoch a second, so its fixes are not far off the system clock (`clockSkewed`).
    func liveReceiver(_ stream: Stream) throws -> TerminalReceiver {
        var stream = stream
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate]
        formatter.timeZone = TimeZone(identifier: "UTC")
        stream.start = formatter.string(from: Date())
        let log = try write(stream)
        let lines = try Data(contentsOf: URL(fileURLWithPath: log)).filter { $0 == 0x0A }.count
        return try TerminalReceiver(log: log, linesPerSecond: max(1, (lines + stream.epochs - 1) / stream.epochs))
    }

    /// Live input from `--source nmea:PATH`: the verdicts arrive as from a file, broken frames
    /// and UBX before NMEA included; spoofing affirmed denies, an authenticated fix is allowed.
    @Test func aTerminalReceiversVerdictsArriveLive() throws {
        let spoofed = Stream(epochs: 60, pvt: 1, status: 1, secSig: ("1", "3"), osnma: (1, 2, 1, 6), ubxFirst: true, corrupt: true)
        let authenticated = Stream(epochs: 60, pvt: 1, status: 1, secSig: ("1", "1"), osnma: (1, 2, 1, 6))
        for (stream, decision) in [(spoofed, "deny"), (authenticated, "allow")] {
            let receiver = try liveReceiver(stream)
            defer { receiver.stop() }
            let result = try geolocate.run(["trigger", "login", "--source", "nmea:" + receiver.path, "--permission", "fine",
                                            "--mode", "force-current", "--timeout", "5s", "--policy", "--verbose"])
            #expect(result.status == 0, "\(result.stderr)")
            let record = try result.json()
            #expect(record["locationSource"] as? String == "current", "\(record)")
            Self.expectDublin(record)
            let signals = Self.signals(record)
            #expect(Self.said(signals, "replayed") == "false", "\(signals)")
            Self.expectVerdicts(signals, stream)
            let policy = record["policy"] as? [String: Any] ?? [:]
            #expect(policy["decision"] as? String == decision, "\(stream.testDescription): \(policy)")
            if decision == "deny" { #expect((policy["reason"] as? String)?.hasPrefix("receiverSpoofing:") == true, "\(policy)") }
            #expect(result.stderr.contains("UBX frames"), "\(result.stderr)")
            // Reading the first epoch to its end reads the next epoch's broken frames too.
            #expect(result.stderr.contains("bad UBX frame") == stream.corrupt, "\(result.stderr)")
        }
    }

    // MARK: 5. Tokens

    /// The claims of a token for `log`, verified by PyJWT with `key show`'s public key, audience and nonce.
    func verifiedClaims(_ log: String, audience: String = "https://risk.example", nonce: String = "n1") throws -> [String: Any] {
        let signed = try geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--format", "jwt",
                                        "--audience", audience, "--nonce", nonce])
        try #require(signed.status == 0, "\(signed.stderr)")
        let token = signed.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let shown = try geolocate.run(["key", "show"])
        try #require(shown.status == 0, "\(shown.stderr)")
        let keys = geolocate.home.appendingPathComponent("key-show.json").path
        try shown.stdout.write(toFile: keys, atomically: true, encoding: .utf8)
        let script = """
            import json, sys, jwt
            keys, token, audience = sys.argv[1:4]
            assert jwt.get_unverified_header(token)["alg"] == "EdDSA"
            key = jwt.PyJWK.from_dict(json.load(open(keys))["keys"][0]).key
            print(json.dumps(jwt.decode(token, key, algorithms=["EdDSA"], audience=audience)))
            """
        let verified = try Spawn.run([Self.jwtPython, "-c", script, keys, token, audience])
        try #require(verified.status == 0, "PyJWT refused the token: \(String(decoding: verified.stderr, as: UTF8.self))")
        let claims = try #require(try JSONSerialization.jsonObject(with: verified.stdout) as? [String: Any])
        #expect(claims["nonce"] as? String == nonce, "\(claims)")
        #expect(claims["src"] as? String == "replay", "\(claims)")
        return claims
    }

    @Test func aTokenCarriesWhatTheReceiverSaidOfOSNMA() throws {
        #expect(try geolocate.run(["key", "init"]).status == 0)
        let authenticated = Stream(pvt: 1, status: 1, navSig: (4, 6), osnma: (1, 2, 1, 7))
        let claims = try verifiedClaims(try write(authenticated))
        let auth = try #require(claims["gnssAuth"] as? [String: Any], "\(claims)")
        #expect(auth["authenticatedSatellites"] as? Int == 7, "\(auth)")
        #expect(Self.said(auth, "fixAuthenticated") == "true", "\(auth)")
        #expect(auth["osnma"] as? String == "operational", "\(auth)")
        Self.expectVerdicts(Self.signals(claims["loc"] as? [String: Any] ?? [:]), authenticated)

        // Not authenticated while OSNMA is enabled: false, not null.
        let unauthenticated = Stream(pvt: 0, osnma: (1, 0, 0, 0))
        let denied = try #require(try verifiedClaims(try write(unauthenticated))["gnssAuth"] as? [String: Any])
        #expect(Self.said(denied, "fixAuthenticated") == "false" && denied["osnma"] as? String == "not-yet"
                && denied["authenticatedSatellites"] as? Int == 0, "\(denied)")

        // NAV-PVT alone: the fix authenticated, nothing known of OSNMA's state.
        let pvtOnly = try #require(try verifiedClaims(try write(Stream(pvt: 1)))["gnssAuth"] as? [String: Any])
        #expect(Self.said(pvtOnly, "fixAuthenticated") == "true" && Self.said(pvtOnly, "osnma") == "null"
                && Self.said(pvtOnly, "authenticatedSatellites") == "null", "\(pvtOnly)")

        // A receiver without UBX: every member there, and null.
        let plain = try verifiedClaims(try write(Stream()))
        let unknown = try #require(plain["gnssAuth"] as? [String: Any], "\(plain)")
        for member in ["authenticatedSatellites", "fixAuthenticated", "osnma"] {
            #expect(Self.said(unknown, member) == "null", "\(member): \(unknown)")
        }
        Self.expectVerdicts(Self.signals(plain["loc"] as? [String: Any] ?? [:]), Stream())
    }

    // MARK: 5b. An alarm in one epoch (found by the hostile pass)

    /// One epoch's SEC-SIG says spoofing affirmed, the next ones' none: the fix of that epoch is
    /// denied whatever order the receiver sends its UBX in. Before, with UBX before NMEA, the
    /// next epoch's "none" had replaced the alarm by the time the epoch closed (allowed, exit 0);
    /// and a SEC-SIG read before any time (a terminal opened mid-epoch) was dropped.
    @Test(arguments: [[String](), ["--ubx-first"], ["--ubx-first", "--sec-sig-first"], ["--sec-sig-first"]])
    func anAlarmInOneEpochIsNotHiddenByTheNext(order: [String]) throws {
        let made = try Spawn.run(["python3", Self.generator, "--epochs", "3", "--pvt", "1", "--sec-sig=1,1",
                                  "--sec-sig-epoch", "0:1,3"] + order)
        try #require(made.status == 0)
        let log = geolocate.home.appendingPathComponent("alarm-\(UUID().uuidString).log")
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try made.stdout.write(to: log)
        let (result, record) = try trigger(log.path, ["--enforce"])
        #expect(result.status == 4, "\(result.stderr)")
        let location = try #require(record["location"] as? [String: Any], "\(record)")
        #expect(location["recordTimestamp"] as? Int == 1_772_366_400_000, "the first epoch's fix: \(location)")
        #expect(Self.said(Self.signals(record), "receiverSpoofing") == "true", "\(record)")
        #expect((record["policy"] as? [String: Any])?["decision"] as? String == "deny", "\(record)")
    }

    /// A NAV-PVT dated seconds away from its NMEA epoch (a receiver whose NAV-PVT comes late,
    /// or every few epochs) does not carry SEC-SIG's and SEC-OSNMA's alarms away with it: a
    /// message without time takes the NAV-PVT's only within a second of the epoch being read,
    /// else that epoch's (found by the hostile pass: every alarm here read as null, exit 0).
    @Test(arguments: [-3000, -2500, 5000, 800])
    func aNavigationSolutionSecondsAwayDoesNotCarryTheAlarmsAway(offset: Int) throws {
        let made = try Spawn.run(["python3", Self.generator, "--epochs", "5", "--pvt", "1", "--sec-sig=3,3",
                                  "--osnma", "1,1,4,5", "--pvt-offset", String(offset)])
        try #require(made.status == 0)
        let log = geolocate.home.appendingPathComponent("stale-\(UUID().uuidString).log")
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try made.stdout.write(to: log)
        let (tracked, records) = try track(log.path)
        #expect(records.count == 5, "\(tracked.stderr)")
        for record in records {
            let signals = Self.signals(record)
            #expect(Self.said(signals, "receiverSpoofing") == "true" && Self.said(signals, "osnmaReplay") == "true", "\(signals)")
        }
        let (result, record) = try trigger(log.path, ["--enforce"])
        #expect(result.status == 4 && (record["policy"] as? [String: Any])?["decision"] as? String == "deny", "\(result.stderr)")
    }

    // MARK: 6. Spool, flush and export

    /// Records spooled by `track` keep the four signals and the token's `gnssAuth` members:
    /// a flush sends them as they were, in Mosaic NDJSON and as tokens.
    @Test func spooledRecordsKeepTheVerdicts() throws {
        #expect(try geolocate.run(["key", "init"]).status == 0)
        let streams = [Stream(epochs: 4, pvt: 1, status: 2, secSig: ("3", "1"), osnma: (1, 1, 4, 5)),
                       Stream(epochs: 4, pvt: 0, secSig: ("2", "-"), osnma: (1, 3, 2, 3)),
                       Stream(epochs: 4)]
        var expected: [String: Stream] = [:]
        for stream in streams {
            let log = try write(stream)
            let tracked = try geolocate.run(["track", "--replay", log, "--permission", "fine", "--every-fix", "--stdout"])
            #expect(tracked.status == 0, "\(tracked.stderr)")
            let ids = tracked.stdout.split(separator: "\n").compactMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["id"] as? String
            }
            #expect(ids.count == stream.epochs)
            for id in ids { expected[id] = stream }
        }
        // export's CSV carries the four verdicts as columns: true/false, empty when unknown.
        let exported = try geolocate.run(["export", "--format", "csv"])
        #expect(exported.status == 0, "\(exported.stderr)")
        let rows = exported.stdout.split(separator: "\r\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        #expect(rows.count == expected.count + 1, "\(exported.stdout)")
        let header = rows.first ?? []
        let verdictColumns = ["gnssAuthenticated", "receiverSpoofing", "receiverJamming", "osnmaReplay"].map { header.firstIndex(of: $0) }
        #expect(verdictColumns.allSatisfy { $0 != nil }, "\(header)")
        for row in rows.dropFirst() {
            let stream = try #require(expected[row.first ?? ""], "\(row)")
            let wanted = [stream.gnssAuthenticated(), stream.receiverSpoofing, stream.receiverJamming, stream.osnmaReplay]
            for (column, value) in zip(verdictColumns, wanted) {
                let cell = column.map { row[$0] }
                #expect(cell == (value.map { $0 ? "true" : "false" } ?? ""), "\(header) \(row)")
            }
        }

        let collector = try Collector()
        defer { collector.stop() }
        let tokensURL = collector.url("/tokens")
        for (key, value) in [("endpoints.fleet.url", collector.url("/fleet")), ("endpoints.fleet.format", "mosaic-ndjson"),
                             ("endpoints.risk.url", tokensURL), ("endpoints.risk.format", "jwt")] {
            #expect(try geolocate.run(["config", "set", key, value]).status == 0)
        }
        let flushed = try geolocate.run(["flush"])
        #expect(flushed.status == 0, "\(flushed.stderr)")
        let lines = collector.requests("/fleet").flatMap { $0.body.split(separator: "\n") }
        #expect(lines.count == expected.count)
        for line in lines {
            let record = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let stream = try #require(expected[record["id"] as? String ?? ""], "\(record)")
            Self.expectVerdicts(Self.signals(record), stream)
        }
        let tokens = collector.requests("/tokens").flatMap { $0.body.split(separator: "\n").map(String.init) }
        #expect(tokens.count == expected.count)
        let shown = try geolocate.run(["key", "show"])
        let keys = geolocate.home.appendingPathComponent("key-show.json").path
        try shown.stdout.write(toFile: keys, atomically: true, encoding: .utf8)
        let script = """
            import json, sys, jwt
            key = jwt.PyJWK.from_dict(json.load(open(sys.argv[1]))["keys"][0]).key
            for token in sys.stdin.read().split():
                print(json.dumps(jwt.decode(token, key, algorithms=["EdDSA"], audience=sys.argv[2])))
            """
        let verified = try Spawn.run([Self.jwtPython, "-c", script, keys, tokensURL], input: Data(tokens.joined(separator: "\n").utf8))
        #expect(verified.status == 0, "\(String(decoding: verified.stderr, as: UTF8.self))")
        let claimsList = String(decoding: verified.stdout, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(claimsList.count == expected.count)
        for claims in claimsList {
            let location = claims["loc"] as? [String: Any] ?? [:]
            let stream = try #require(expected[location["id"] as? String ?? ""], "\(claims)")
            Self.expectVerdicts(Self.signals(location), stream)
            let auth = claims["gnssAuth"] as? [String: Any] ?? [:]
            #expect(Self.said(auth, "osnma") == (stream.osnmaName ?? "null"), "\(auth)")
            if let osnma = stream.osnma {
                #expect(auth["authenticatedSatellites"] as? Int == osnma.satellites, "\(auth)")
            } else {
                #expect(Self.said(auth, "authenticatedSatellites") == "null", "\(auth)")
            }
            #expect(Self.said(auth, "fixAuthenticated") == Self.text(stream.gnssAuthenticated()), "\(auth)")
        }
    }
}

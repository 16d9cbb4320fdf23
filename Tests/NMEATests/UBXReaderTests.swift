import Foundation
import NMEA
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// UBX beside NMEA (SPEC §15, issue 42): the decoders checked against PyPI's pyubx2 1.4.0, an
/// encoder and decoder that shares nothing with geolocate's; the reader's framing of UBX frames
/// among sentences, whatever the blocks the input arrives in; and the verdicts matched to epochs.
///
/// Every expected value comes from pyubx2 (what `ubx-oracle.py` reads back from the bytes it
/// encoded) or from how the input was built, never from geolocate's own decoder.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct UBXReaderTests {
    static let gga = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\r\n"
    static let rmc = NMEATestInput.sentence("GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W") + "\r\n"
    static let ggaBytes = Array(gga.utf8), rmcBytes = Array(rmc.utf8), lineEnd: [UInt8] = [0x0D, 0x0A]

    /// The parts one after the other (one expression of many `+` is too slow to type-check).
    static func join(_ parts: [UInt8]...) -> [UInt8] { parts.flatMap { $0 } }

    // MARK: Decoding against pyubx2

    /// Each message geolocate decodes, every frame of it that `ubx-oracle.py` made, read from a
    /// stream that has a sentence before each frame.
    @Test(arguments: ["NAV-PVT", "NAV-STATUS", "NAV-SIG", "SEC-SIG", "SEC-OSNMA", "unknown"])
    func decodesAsPyubx2ReadsIt(_ message: String) throws {
        let cases = try UBXOracle.cases().filter { $0.message == message }
        #expect(!cases.isEmpty)
        var input: [UInt8] = []
        for item in cases { input += Self.join(Self.ggaBytes, item.bytes) }
        input += Self.ggaBytes
        let result = try UBXTestInput.read(input)
        #expect(result.statistics.accepted == cases.count + 1)
        #expect(result.statistics.ubxFrames == cases.count)
        #expect(result.statistics.badUBX == 0)
        #expect(result.statistics.skipped == 0)
        try #require(result.frames.count == cases.count)
        for (item, frame) in zip(cases, result.frames) {
            #expect(frame.messageClass == item.bytes[2] && frame.messageID == item.bytes[3], "\(item.hex.prefix(40))")
            #expect(frame.payload == item.payload, "\(item.hex.prefix(40))")
            // The closed form of Fletcher-8 gives pyubx2's checksum.
            let sent = UInt16(item.bytes[item.bytes.count - 2]) | UInt16(item.bytes[item.bytes.count - 1]) << 8
            let computed = item.bytes.withUnsafeBufferPointer { UBXFrame.checksum($0.baseAddress! + 2, count: $0.count - 4) }
            #expect(computed == sent)
            try Self.check(frame.message, against: item)
        }
        try Self.checkCoverage(of: message, cases)
    }

    /// `decoded` is what pyubx2 read back from the frame of `item`.
    static func check(_ decoded: UBXMessage?, against item: UBXOracle.Case) throws {
        let f = item.fields
        let label = "\(item.message) \(item.fieldsText)"
        switch item.message {
        case "NAV-PVT":
            guard case .navigationSolution(let solution)? = decoded else {
                Issue.record("\(label): decoded as \(String(describing: decoded))")
                return
            }
            #expect(solution.timeOfWeek == UInt32(f["iTOW"]!), "\(label)")
            // A fix the receiver does not call valid (gnssFixOK 0) is no authenticated fix.
            #expect(solution.fixAuthenticated == (f["nmaFixStatus"] == 1 && f["gnssFixOk"] == 1), "\(label)")
            #expect(solution.timeAuthenticated == (f["authTime"] == 1), "\(label)")
            var expectedTime: Int?
            if f["validTime"] == 1 {
                // No case lies on half a millisecond, where rounding rules differ.
                let milliseconds = (f["hour"]! * 3600 + f["min"]! * 60 + f["second"]!) * 1000
                    + Int((Double(f["nano"]!) / 1e6).rounded())
                expectedTime = (milliseconds % 86_400_000 + 86_400_000) % 86_400_000
            }
            #expect(solution.timeOfDay == expectedTime, "\(label)")
        case "NAV-STATUS":
            #expect(decoded == .navigationStatus(timeOfWeek: UInt32(f["iTOW"]!), spoofDetectionState: UInt8(f["spoofDetState"]!)),
                    "\(label)")
        case "NAV-SIG":
            let flags = item.authStatus
            #expect(flags.count == f["numSigs"])
            #expect(decoded == .signalInformation(timeOfWeek: UInt32(f["iTOW"]!), signals: f["numSigs"]!,
                                                  authenticated: flags.filter { $0 == 1 }.count), "\(label)")
        case "SEC-SIG":
            let jamming = f["jamDetEnabled"] == 1 ? UInt8(f["jammingState"]!) : nil
            let spoofing = f["spfDetEnabled"] == 1 ? UInt8(f["spoofingState"]!) : nil
            #expect(decoded == .signalSecurity(jamming: jamming, spoofing: spoofing), "\(label) version \(f["version"]!)")
        case "SEC-OSNMA":
            guard case .osnma(let report)? = decoded else {
                Issue.record("\(label): decoded as \(String(describing: decoded))")
                return
            }
            #expect(report.enabled == (f["osnmaEnabled"] == 1), "\(label)")
            #expect(report.status == UInt8(f["nmaStatus"]!), "\(label)")
            #expect(report.timeSyncStatus == UInt8(f["timSyncStatus"]!), "\(label)")
            #expect(report.authenticatedSatellites == f["authSVs"], "\(label)")
        case "unknown":
            #expect(decoded == nil, "\(label)")
        default:
            Issue.record("no check for \(item.message)")
        }
    }

    /// The oracle's cases hold every status value the brief names, so a value never tried
    /// cannot hide.
    static func checkCoverage(of message: String, _ cases: [UBXOracle.Case]) throws {
        func values(_ name: String, where condition: (UBXOracle.Case) -> Bool = { _ in true }) -> Set<Int> {
            Set(cases.filter(condition).compactMap { $0.fields[name] })
        }
        switch message {
        case "NAV-PVT":
            let pairs = Set(cases.map { [$0.fields["nmaFixStatus"]!, $0.fields["authTime"]!] })
            #expect(pairs == [[0, 0], [0, 1], [1, 0], [1, 1]])
            #expect(values("validTime") == [0, 1])
        case "NAV-STATUS":
            #expect(values("spoofDetState") == [0, 1, 2, 3])
        case "NAV-SIG":
            let shapes = Set(cases.map { [$0.fields["numSigs"]!, $0.authStatus.filter { $0 == 1 }.count] })
            #expect(shapes.isSuperset(of: [[0, 0], [5, 0], [5, 2], [20, 20], [20, 12], [255, 85]]))
        case "SEC-SIG":
            for version in [1, 2] {
                let on = { (item: UBXOracle.Case) in item.fields["version"] == version }
                #expect(values("jammingState", where: { on($0) && $0.fields["jamDetEnabled"] == 1 }) == [0, 1, 2, 3])
                #expect(values("spoofingState", where: { on($0) && $0.fields["spfDetEnabled"] == 1 }) == [0, 1, 2, 3])
                #expect(values("jamDetEnabled", where: on) == [0, 1])
                #expect(values("spfDetEnabled", where: on) == [0, 1])
            }
        case "SEC-OSNMA":
            #expect(values("nmaStatus") == Set(0...3))
            #expect(values("timSyncStatus") == Set(0...7))
            #expect(values("osnmaEnabled") == [0, 1])
            #expect(values("authSVs").isSuperset(of: [0, 1, 31, 32, 63]))
        default:
            break
        }
    }

    // MARK: Framing

    /// Every frame of the oracle among sentences, in the shapes a u-blox port sends: a sentence
    /// line before a frame, a frame glued to the next sentence or to the end of a sentence
    /// without its line end, two sentences then a frame and a line end, a `#`
    /// comment of `padding` bytes first, so frames fall across the reader's refills at many
    /// offsets. Payloads hold `\n`, `$` and `B5 62` (the oracle's framing cases).
    static func mixedInput(padding: Int) throws -> (bytes: [UInt8], cases: [UBXOracle.Case], sentences: Int) {
        let cases = try UBXOracle.cases().filter { $0.message != "over-limit" }
        var bytes = padding > 0 ? Array(("#" + String(repeating: "p", count: padding - 1) + "\n").utf8) : []
        var sentences = 0
        for (index, item) in cases.enumerated() {
            switch index % 4 {
            case 0: bytes += join(ggaBytes, item.bytes); sentences += 1
            case 1: bytes += join(item.bytes, rmcBytes); sentences += 1
            case 2: bytes += join(Array(ggaBytes.dropLast(2)), item.bytes); sentences += 1  // no line end before the frame
            default: bytes += join(ggaBytes, rmcBytes, item.bytes, lineEnd); sentences += 2
            }
        }
        bytes += ggaBytes
        return (bytes, cases, sentences + 1)
    }

    @Test(arguments: [16, 64, 4096], [0, 1, 7, 333, 5000])
    func framesStraddlingTheReadersBlocksAreRead(_ blockSize: Int, _ padding: Int) throws {
        let (input, cases, sentences) = try Self.mixedInput(padding: padding)
        let result = try UBXTestInput.read(input, blockSize: blockSize)
        #expect(result.statistics.accepted == sentences)
        #expect(result.statistics.ubxFrames == cases.count)
        #expect(result.statistics.badUBX == 0)
        #expect(result.statistics.skipped == 0)
        #expect(result.frames.map(\.payload) == cases.map(\.payload))
    }

    /// Through a pipe written a few bytes at a time, so each read ends inside a frame, its
    /// header or a sentence.
    @Test(arguments: [1, 5, 13])
    func framesArrivingAFewBytesAtATimeAreRead(_ chunk: Int) throws {
        var (input, cases, sentences) = try Self.mixedInput(padding: 0)
        if chunk == 1 {
            // Byte by byte is slow through a pipe: the first frames only, with their sentences.
            let kept = Array(cases.prefix(24))
            var bytes: [UInt8] = []
            sentences = 0
            for (index, item) in kept.enumerated() {
                bytes += index % 2 == 0 ? Self.join(Self.ggaBytes, item.bytes) : Self.join(item.bytes, Self.rmcBytes)
                sentences += 1
            }
            (input, cases) = (bytes, kept)
        }
        let result = try UBXTestInput.readThroughPipe(input, chunks: chunk, blockSize: 64)
        #expect(result.statistics.accepted == sentences)
        #expect(result.statistics.ubxFrames == cases.count)
        #expect(result.statistics.badUBX == 0)
        #expect(result.statistics.skipped == 0)
        #expect(result.frames.map(\.payload) == cases.map(\.payload))
    }

    /// The oracle's frame of the longest payload taken (8192 bytes) is read; one byte more, its
    /// checksum right, is skipped and counted, and what follows is read.
    @Test func aFrameLongerThanTheLimitIsSkipped() throws {
        let cases = try UBXOracle.cases()
        let longest = try #require(cases.first { $0.message == "unknown" })
        let over = try #require(cases.first { $0.message == "over-limit" })
        #expect(over.fields["length"] == UBXFrame.maximumPayloadLength + 1)
        let status = try #require(cases.first { $0.message == "NAV-STATUS" })
        let input = Self.join(Self.ggaBytes, longest.bytes, Self.ggaBytes, over.bytes, Self.lineEnd, Self.ggaBytes, status.bytes,
                              Self.rmcBytes)
        let result = try UBXTestInput.read(input, blockSize: 64)
        #expect(result.statistics.accepted == 4)
        #expect(result.statistics.ubxFrames == 2)
        #expect(result.statistics.badUBX == 1)
        #expect(result.frames.map(\.payload.count) == [UBXFrame.maximumPayloadLength, 16])
    }

    /// A header declaring more than the limit, as line noise may: skipped at once, the rest read.
    @Test func aLengthPastTheLimitInNoiseIsSkipped() throws {
        let noise: [UInt8] = [0xB5, 0x62, 0x01, 0x03, 0x01, 0x20] + [UInt8](repeating: 0, count: 16)
        let status = try #require(UBXOracle.cases().first { $0.message == "NAV-STATUS" })
        let input = Self.join(Self.ggaBytes, noise, Self.lineEnd, Self.ggaBytes, status.bytes, Self.rmcBytes)
        let result = try UBXTestInput.read(input)
        #expect(result.statistics.accepted == 3)
        #expect(result.statistics.ubxFrames == 1)
        #expect(result.statistics.badUBX == 1)
    }

    /// A wrong checksum (either byte of it, or a payload byte changed in transit): the frame is
    /// skipped and counted once, and the sentences and frame after it are read.
    @Test(arguments: ["CK_A", "CK_B", "payload", "length shortened", "length lengthened"])
    func aWrongChecksumSkipsTheFrameAlone(_ damage: String) throws {
        let cases = try UBXOracle.cases()
        let good = try #require(cases.first { $0.message == "SEC-OSNMA" && $0.fields["authSVs"] == 7 })
        var bad = good.bytes
        switch damage {
        case "CK_A": bad[bad.count - 2] ^= 0x01
        case "CK_B": bad[bad.count - 1] ^= 0x80
        case "payload": bad[10] ^= 0x04
        case "length shortened": bad[4] -= 1
        default: bad[4] += 3
        }
        let after = try #require(cases.first { $0.message == "NAV-STATUS" })
        let input = Self.join(Self.ggaBytes, good.bytes, Self.rmcBytes, bad, Self.ggaBytes, Self.rmcBytes, after.bytes, Self.ggaBytes)
        for blockSize in [16, 1 << 20] {
            let result = try UBXTestInput.read(input, blockSize: blockSize)
            #expect(result.statistics.accepted == 5, "\(damage)")
            #expect(result.statistics.ubxFrames == 2, "\(damage)")
            #expect(result.statistics.badUBX == 1, "\(damage)")
            #expect(result.frames.map(\.payload) == [good.payload, after.payload], "\(damage)")
        }
    }

    /// A frame the input ends inside of, at every length from its first sync byte to all but
    /// its last byte: one bad frame; the sentences and frame before it are read.
    @Test func aFrameCutByTheEndOfTheInputIsCounted() throws {
        let cases = try UBXOracle.cases()
        let frame = try #require(cases.first { $0.message == "NAV-PVT" })
        let before = try #require(cases.first { $0.message == "NAV-STATUS" })
        for length in 1..<frame.bytes.count {
            let input = Self.join(Self.ggaBytes, before.bytes, Self.rmcBytes, Array(frame.bytes.prefix(length)))
            let result = try UBXTestInput.read(input, blockSize: 16)
            #expect(result.statistics.accepted == 2, "cut at \(length)")
            #expect(result.statistics.ubxFrames == 1, "cut at \(length)")
            #expect(result.statistics.badUBX == 1, "cut at \(length)")
        }
    }

    /// `B5` not followed by `62` is no frame: as text it is a line of junk, or part of one;
    /// a `B5` just before a frame's sync does not hide the frame.
    @Test func aLoneSyncByteIsNoFrame() throws {
        let frame = try #require(try UBXOracle.cases().first { $0.message == "SEC-SIG" })
        let input = Self.join(Array("junk ".utf8), [0xB5, 0x41, 0xB5, 0xB5], Array(" more\r\n".utf8),
                              Self.ggaBytes, [0xB5], frame.bytes, Self.rmcBytes,
                              [0xB5, 0x0A], frame.bytes, [0xB5, 0xB5, 0x62], Array(frame.bytes.dropFirst(2)), Self.ggaBytes,
                              [0xB5, 0x61], Self.ggaBytes)
        for blockSize in [16, 4096] {
            let result = try UBXTestInput.read(input, blockSize: blockSize)
            #expect(result.statistics.accepted == 4)
            #expect(result.statistics.ubxFrames == 3)
            #expect(result.statistics.badUBX == 0)
            #expect(result.frames.count == 3)
        }
    }

    /// Megabytes of seeded random bytes, with `B5 62` and `$` strewn in (false frames of every
    /// length, false sentences), longer than the reader's whole buffer, which never grows: the
    /// sentences and frames after it are read, whether the junk ends in a newline or not.
    @Test(arguments: [true, false]) func randomGarbageWithSyncBytesIsReadPast(_ endsInNewline: Bool) throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        var garbage = [UInt8](repeating: 0, count: 3_000_000)
        for index in stride(from: 0, to: garbage.count, by: 8) {
            withUnsafeBytes(of: next()) { word in
                for offset in 0..<min(8, garbage.count - index) { garbage[index + offset] = word[offset] }
            }
        }
        var syncs = 0
        for index in stride(from: 100, to: garbage.count - 8, by: 997) {
            garbage[index] = 0xB5
            garbage[index + 1] = 0x62
            syncs += 1
            if index % 3 == 0 { garbage[index + 500] = 0x24 }
        }
        if endsInNewline { garbage[garbage.count - 1] = 0x0A }
        let cases = try UBXOracle.cases()
        let frame = try #require(cases.first { $0.message == "SEC-OSNMA" })
        let input = Self.join(Self.ggaBytes, frame.bytes, garbage, Self.ggaBytes, frame.bytes, Self.rmcBytes, frame.bytes,
                              Self.ggaBytes)
        let result = try UBXTestInput.read(input, blockSize: 4096)
        #expect(result.statistics.accepted == 4)
        #expect(result.statistics.ubxFrames == 3)
        #expect(result.statistics.badUBX >= 1)
        #expect(result.statistics.badUBX <= syncs + 2_000)
        #expect(result.statistics.bytes == input.count)
    }

    // MARK: Verdicts matched to epochs

    /// Per epoch: its time and the verdict its fix was given.
    static func verdicts(_ arguments: [String]) throws -> [(time: Int, verdict: ReceiverVerdict?)] {
        let log = try UBXOracle.run(UBXOracle.stream, arguments)
        return try UBXTestInput.epochs(log).map { ($0.timeOfDay, $0.fix?.receiverVerdict) }
    }

    static let allMessages = ["--pvt", "1", "--status", "2", "--nav-sig", "3/5", "--sec-sig", "1,2", "--osnma", "1,2,0,3"]

    /// What `allMessages` says, field by field.
    static var allMessagesVerdict: ReceiverVerdict {
        var verdict = ReceiverVerdict()
        verdict.fixAuthenticated = true
        verdict.timeAuthenticated = true
        verdict.spoofDetectionState = 2
        verdict.signals = 5
        verdict.authenticatedSignals = 3
        verdict.jammingState = 1
        verdict.spoofingState = 2
        verdict.osnmaEnabled = true
        verdict.osnmaStatus = .operational
        verdict.osnmaTimeSyncStatus = 0
        verdict.authenticatedSatellites = 3
        return verdict
    }

    /// A receiver sends an epoch's UBX before or after its NMEA: every epoch gets the same verdict.
    @Test(arguments: ["1", "2"]) func ubxBeforeOrAfterTheNMEAGivesTheSameVerdict(_ secSigVersion: String) throws {
        let arguments = ["--epochs", "6", "--sec-sig-version", secSigVersion] + Self.allMessages
        let after = try Self.verdicts(arguments)
        let before = try Self.verdicts(arguments + ["--ubx-first"])
        #expect(after.map(\.time) == (0..<6).map { 43_200_000 + $0 * 1000 })
        #expect(before.map(\.time) == after.map(\.time))
        for (index, (first, second)) in zip(after, before).enumerated() {
            #expect(first.verdict == Self.allMessagesVerdict, "epoch \(index), UBX after NMEA")
            #expect(second.verdict == Self.allMessagesVerdict, "epoch \(index), UBX before NMEA")
        }
    }

    /// NAV-PVT matches the epoch of its time within 10 ms, and none farther (no nearer epoch).
    @Test(arguments: [(0, true), (10, true), (-10, true), (11, false), (-11, false), (20, false), (500, false), (-500, false)])
    func aSolutionOfAnotherTimeDoesNotMatch(_ offset: Int, _ matches: Bool) throws {
        for order in [[], ["--ubx-first"]] {
            let epochs = try Self.verdicts(["--epochs", "4", "--pvt", "1", "--osnma", "1,2,0,3", "--pvt-offset", String(offset)] + order)
            #expect(epochs.count == 4)
            for (index, epoch) in epochs.enumerated() {
                #expect(epoch.verdict?.fixAuthenticated == (matches ? true : nil), "offset \(offset) ms \(order), epoch \(index)")
                #expect(epoch.verdict?.timeAuthenticated == (matches ? true : nil), "offset \(offset) ms \(order), epoch \(index)")
                // SEC-OSNMA still applies: a state message reaches 2 s.
                #expect(epoch.verdict?.osnmaEnabled == true, "offset \(offset) ms \(order), epoch \(index)")
            }
        }
    }

    /// A NAV-PVT a second ahead of the epoch it arrives with is matched to the epoch of its time,
    /// not to the one it arrived with: the first epoch has none, epoch k the one sent with k - 1.
    @Test func aSolutionIsMatchedByItsTimeNotWhereItArrives() throws {
        for order in [[], ["--ubx-first"]] {
            let epochs = try Self.verdicts(["--epochs", "5", "--pvt", "1", "--mask-pvt-from", "2", "--pvt-offset", "1000"] + order)
            // Sent with epoch k: the solution of k + 1, authenticated for k < 2.
            #expect(epochs.map { $0.verdict?.fixAuthenticated } == [nil, true, true, false, false], "\(order)")
        }
    }

    /// A receiver falls silent after epoch K - 1: its state messages reach the epochs within 2 s
    /// of their time, no further; no NAV-PVT matches an epoch after K - 1.
    @Test(arguments: [[], ["--ubx-first"]]) func stateMessagesOlderThanTwoSecondsDoNotApply(_ order: [String]) throws {
        let silentFrom = 3
        let epochs = try Self.verdicts(["--epochs", "8", "--ubx-until", String(silentFrom)] + Self.allMessages + order)
        #expect(epochs.count == 8)
        for (index, epoch) in epochs.enumerated() {
            var expected: ReceiverVerdict? = Self.allMessagesVerdict
            if index >= silentFrom {
                expected?.fixAuthenticated = nil
                expected?.timeAuthenticated = nil
            }
            // The last state messages carry the time of epoch silentFrom - 1.
            if (index - (silentFrom - 1)) * 1000 > ReceiverVerdictTracker.stateWindow { expected = nil }
            #expect(epoch.verdict == expected, "epoch \(index) \(order)")
        }
    }

    /// The receiver loses OSNMA mid-stream (`--mask-pvt-from`): each epoch shows its own NAV-PVT.
    @Test(arguments: [[], ["--ubx-first"]]) func aChangeMidStreamShowsPerEpoch(_ order: [String]) throws {
        let epochs = try Self.verdicts(["--epochs", "6", "--mask-pvt-from", "3"] + Self.allMessages + order)
        #expect(epochs.map { $0.verdict?.fixAuthenticated } == [true, true, true, false, false, false])
        #expect(epochs.map { $0.verdict?.timeAuthenticated } == [true, true, true, false, false, false])
        #expect(epochs.map { $0.verdict?.gnssAuthenticated } == [true, true, true, false, false, false])
        #expect(epochs.allSatisfy { $0.verdict?.spoofing == true && $0.verdict?.jamming == false })
    }

    /// The mixed log ubx-stream.py writes with its damaged frames (`--corrupt`): each epoch still
    /// gets its verdict, and each damaged frame is counted once.
    @Test func damagedFramesAmongEpochsAreCountedAndSkipped() throws {
        let epochs = 5
        let log = try UBXOracle.run(UBXOracle.stream, ["--epochs", String(epochs), "--corrupt"] + Self.allMessages)
        let result = try UBXTestInput.read(log)
        #expect(result.statistics.accepted == 2 * epochs)
        #expect(result.statistics.ubxFrames == 5 * epochs)
        #expect(result.statistics.badUBX == 2 * epochs)
        #expect(try UBXTestInput.epochs(log).map { $0.fix?.receiverVerdict } == Array(repeating: Self.allMessagesVerdict, count: epochs))
    }
}

/// A frame as the reader handed it over, copied out of its buffer.
struct ReadFrame {
    var messageClass: UInt8
    var messageID: UInt8
    var payload: [UInt8]
    var message: UBXMessage?
}

/// Feeds bytes to `NMEAReader` from a file, or through a pipe in small writes, collecting the
/// frames it hands to `frames` as well as its statistics.
enum UBXTestInput {
    typealias Result = (frames: [ReadFrame], sentences: Int, statistics: NMEAStatistics)

    static func read(_ bytes: [UInt8], blockSize: Int = 1 << 20) throws -> Result {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ubx-\(UUID().uuidString).log").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        return try read(fileDescriptor: fd, blockSize: blockSize)
    }

    /// Through a pipe, `chunks` bytes a write, a pause after each so each read gets one write.
    static func readThroughPipe(_ bytes: [UInt8], chunks: Int, blockSize: Int) throws -> Result {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw NMEAReadError(reason: "pipe failed") }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        let writer = Thread {
            var offset = 0
            while offset < bytes.count {
                let count = min(chunks, bytes.count - offset)
                let written = bytes[offset..<(offset + count)].withUnsafeBytes { write(writeEnd, $0.baseAddress!, count) }
                if written <= 0 { break }
                offset += written
                usleep(20)
            }
            close(writeEnd)
        }
        writer.start()
        defer { close(readEnd) }
        return try read(fileDescriptor: readEnd, blockSize: blockSize)
    }

    static func read(fileDescriptor fd: Int32, blockSize: Int) throws -> Result {
        let reader = NMEAReader(fileDescriptor: fd, blockSize: blockSize)
        var frames: [ReadFrame] = []
        var sentences = 0
        try reader.forEachSentence({ _ in
            sentences += 1
            return true
        }, frames: { frame in
            frames.append(ReadFrame(messageClass: frame.messageClass, messageID: frame.messageID,
                                    payload: Array(frame.payload), message: UBXMessage(frame)))
        })
        return (frames, sentences, reader.statistics)
    }

    static func epochs(_ bytes: [UInt8]) throws -> [Epoch] {
        try NMEATestInput.epochs(bytes)
    }
}

/// The Python oracles: `ubx-oracle.py` beside this file, and the integration tests' mixed-log
/// generator `ubx-stream.py`, both building their UBX with pyubx2.
enum UBXOracle {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let casesScript = directory.appendingPathComponent("ubx-oracle.py").path
    static let stream = directory.deletingLastPathComponent()
        .appendingPathComponent("GeolocateIntegrationTests/Support/ubx-stream.py").path

    /// One frame pyubx2 made, and the values it read back from it.
    struct Case {
        var message: String
        var hex: String
        var bytes: [UInt8]
        var fields: [String: Int]
        /// NAV-SIG's `authStatus` of each signal.
        var authStatus: [Int]
        var fieldsText: String
        /// The frame's payload, between its length and its checksum.
        var payload: [UInt8] { Array(bytes[6..<(bytes.count - 2)]) }
    }

    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    /// Runs the oracle once per test process; its cases, in order.
    static func cases() throws -> [Case] { try loaded.get() }

    private static let loaded: Swift.Result<[Case], Error> = Swift.Result {
        let output = try run(casesScript, [])
        return try output.split(separator: 0x0A).map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                  let message = object["message"] as? String, let hex = object["hex"] as? String,
                  let fields = object["fields"] as? [String: Any]
            else { throw Failed(description: "ubx-oracle.py: unreadable line \(String(decoding: line.prefix(200), as: UTF8.self))") }
            var bytes: [UInt8] = []
            var index = hex.startIndex
            while index < hex.endIndex {
                let next = hex.index(index, offsetBy: 2)
                bytes.append(UInt8(hex[index..<next], radix: 16)!)
                index = next
            }
            var numbers: [String: Int] = [:]
            for (name, value) in fields {
                if let number = value as? Int { numbers[name] = number }
            }
            let flags = (fields["authStatus"] as? [Int]) ?? []
            let text = numbers.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            return Case(message: message, hex: hex, bytes: bytes, fields: numbers, authStatus: flags, fieldsText: text)
        }
    }

    /// Runs `python3 script arguments` to its end within a minute; its stdout. Output to a file,
    /// so no read waits on a pipe another test's child holds open.
    static func run(_ script: String, _ arguments: [String]) throws -> [UInt8] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubx-oracle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let outputURL = directory.appendingPathComponent("stdout"), errorsURL = directory.appendingPathComponent("stderr")
        for url in [outputURL, errorsURL] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let stdout = try FileHandle(forWritingTo: outputURL), stderr = try FileHandle(forWritingTo: errorsURL)
        defer { [stdout, stderr].forEach { try? $0.close() } }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw Failed(description: "\(script): still running after 60 s")
        }
        guard process.terminationStatus == 0 else {
            let errors = (try? Data(contentsOf: errorsURL)) ?? Data()
            throw Failed(description: "\(script) \(arguments.joined(separator: " ")): exited with \(process.terminationStatus): "
                         + String(decoding: errors.suffix(2000), as: UTF8.self))
        }
        return Array(try Data(contentsOf: outputURL))
    }
}

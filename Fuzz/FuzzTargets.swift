import Foundation
import GPSD
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import NMEA

#if canImport(Glibc)
import Glibc
#endif

/// The inputs geolocate parses, each as a fuzz target: bytes in, no trap, no sanitizer report,
/// and nothing out of range coming out.
///
/// `make fuzz` builds this target with `-sanitize=fuzzer,address -D GEOLOCATE_FUZZING`, where
/// libFuzzer drives `LLVMFuzzerTestOneInput` and `GEOLOCATE_FUZZ_TARGET` names the target. The
/// ordinary build is a runner instead (`geolocate-fuzz TARGET FILE|DIR…`), with which the tests
/// replay the committed corpora and every past finding.
enum FuzzTarget: String, CaseIterable {
    /// NMEA bytes through the reader and the epoch assembler.
    case nmea
    /// UBX frames mixed with NMEA through the reader in small blocks (so frames straddle
    /// refills), each frame's message decoded, and the receiver's verdicts matched to epochs.
    case ubx
    /// One JSON line from gpsd (TPV or POLL) through libgps's decoder and our checks.
    case gpsd
    /// A configuration file, with every numeric key, resolved into settings.
    case config
    /// A line of text through every parser of flags and `config set` values: durations,
    /// modes, times, sources, windows, replay speeds, `Retry-After`.
    case text
    /// A last-known state file.
    case state
    /// A spooled record read back and rendered for each endpoint format and privacy level.
    case spool
    /// A Nominatim `/reverse` answer.
    case geocoder
    /// A `policy.zones` GeoJSON file, then decisions at places that stress the geometry.
    case zones
    /// A device key file (an Ed25519 key or a TPM key's block, retired keys), shown as a
    /// server enrols it and written back.
    case key

    /// Runs one input; a finding is a trap (a failed `check` included).
    func run(_ bytes: [UInt8]) {
        switch self {
        case .nmea: FuzzTarget.nmea(bytes)
        case .ubx: FuzzTarget.ubx(bytes)
        case .gpsd: FuzzTarget.gpsd(bytes)
        case .config: FuzzTarget.config(bytes)
        case .text: FuzzTarget.text(bytes)
        case .state: FuzzTarget.state(bytes)
        case .spool: FuzzTarget.spool(bytes)
        case .geocoder: _ = try? StreetGeocoder.parse(bytes)
        case .zones: FuzzTarget.zones(bytes)
        case .key: FuzzTarget.key(bytes)
        }
    }

    /// A fix that left a parser must be in range, whatever went in.
    private static func check(_ fix: Fix) {
        precondition(FixLimits.isValidPosition(latitude: fix.latitude, longitude: fix.longitude), "position out of range")
        precondition(fix.speed.map { $0 >= 0 && $0 <= FixLimits.maxSpeed } ?? true, "speed out of range")
        precondition(fix.course.map { $0 >= 0 && $0 < 360 } ?? true, "course out of range")
        precondition(fix.horizontalAccuracy.map { $0.isFinite && $0 > 0 } ?? true, "accuracy out of range")
    }

    private static func nmea(_ bytes: [UInt8]) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return }
        defer { close(fds[0]) }
        // The fuzzer keeps inputs under the pipe's 64 KiB buffer (-max_len), so one write fits.
        _ = bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, min($0.count, 60_000)) }
        close(fds[1])
        let stream = NMEAEpochStream(fileDescriptor: fds[0])
        while let epoch = try? stream.next() {
            if let fix = epoch.fix { check(Fix(fix, provider: .nmeaReplay)) }
        }
    }

    /// A pipe holding `bytes`, for a reader; the caller closes it.
    private static func pipeHolding(_ bytes: [UInt8]) -> Int32? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return nil }
        _ = bytes.withUnsafeBytes { write(fds[1], $0.baseAddress, min($0.count, 60_000)) }
        close(fds[1])
        return fds[0]
    }

    private static func ubx(_ bytes: [UInt8]) {
        guard let fd = pipeHolding(bytes) else { return }
        defer { close(fd) }
        let reader = NMEAReader(fileDescriptor: fd, blockSize: 64)
        var frames = 0
        try? reader.forEachSentence({ _ in true }, frames: { frame in
            precondition(frame.payload.count <= UBXFrame.maximumPayloadLength, "frame longer than the limit")
            frames += 1
            switch UBXMessage(frame) {
            case .navigationSolution(let solution)?:
                precondition(solution.timeOfDay.map { (0..<86_400_000).contains($0) } ?? true, "time of day out of range")
            case .navigationStatus(_, let state)?: precondition(state <= 3, "spoofDetState out of range")
            case .signalInformation(_, let signals, let authenticated)?:
                precondition(authenticated <= signals && signals <= 255, "signal count out of range")
            case .signalSecurity(let jamming, let spoofing)?:
                precondition((jamming ?? 0) <= 3 && (spoofing ?? 0) <= 7, "SEC-SIG state out of range")
            case .osnma(let report)?: precondition(report.authenticatedSatellites <= 63, "authSVs out of range")
            case nil: break
            }
        })
        precondition(reader.statistics.ubxFrames == frames, "frames counted but not handed on")
        guard let again = pipeHolding(bytes) else { return }
        defer { close(again) }
        let stream = NMEAEpochStream(fileDescriptor: again)
        while let epoch = try? stream.next() {
            guard let fix = epoch.fix else { continue }
            check(Fix(fix, provider: .nmeaReplay))
            if let verdict = fix.receiverVerdict {
                precondition(!verdict.isEmpty, "an empty verdict is no verdict")
                precondition(verdict.osnmaReplay != true || verdict.osnmaTimeSyncStatus == 4, "a replay without its status")
            }
        }
    }

    private static func gpsd(_ bytes: [UInt8]) {
        for fix in GPSDSource.fixes(inReport: bytes, now: 1_795_000_000_000) {
            check(fix)
            // A fix dated far from the clock is still a fix (SPEC §3); a time no clock can mean is not.
            precondition((0...TimeText.latestMilliseconds).contains(fix.timestamp), "time out of range")
        }
    }

    private static func config(_ bytes: [UInt8]) {
        guard let document = try? ConfigStore.document(parsing: Data(bytes), file: "fuzz.json") else { return }
        let settings = Settings(document)
        _ = ConfigStore.redacted(document).prettyPrinted()
        for endpoint in settings.endpoints {
            precondition(endpoint.batchSize >= 1 && endpoint.timeoutMilliseconds > 0, "endpoint settings out of range")
            _ = endpoint.displayName
        }
        _ = settings.permissionsInForce(flag: nil)
        _ = try? settings.resolvedSource(flag: nil, environment: [:])
        _ = settings.privacy.attributes
    }

    private static func text(_ bytes: [UInt8]) {
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            let text = String(line)
            for unit in [DurationText.BareUnit.milliseconds, .seconds, .minutes] {
                if let value = try? DurationText.milliseconds(text, bareUnit: unit) {
                    precondition((0...DurationText.maximumMilliseconds).contains(value), "duration out of range")
                }
            }
            _ = try? CollectionMode(parsing: text)
            _ = try? TimeText.milliseconds(text)
            _ = try? SourceSpecifier(parsing: text)
            _ = try? CollectionWindow(parsing: text)
            _ = try? ReplaySpeed(parsing: text)
            _ = try? Permission.parseList(text)
            if let wait = RetryAfter.milliseconds(text, nowMilliseconds: 1_795_000_000_000) {
                precondition((0...RetryAfter.maximumMilliseconds).contains(wait), "Retry-After out of range")
            }
            for setting in ConfigKey.all { _ = try? setting.parse(text) }
        }
    }

    private static func zones(_ bytes: [UInt8]) {
        guard let policy = try? LocationPolicy(zonesData: Data(bytes), path: "fuzz.geojson") else { return }
        for (latitude, longitude) in [(0.0, 0.0), (89.99, 179.99), (-45, -179.9), (53.38, -6.6), (-90, 0)] {
            for accuracy in [nil, 0.5, 5_000] as [Double?] {
                let fix = Fix(timestamp: 1_795_000_000_000, latitude: latitude, longitude: longitude, mode: .twoD,
                              horizontalAccuracy: accuracy, provider: .gpsd)
                let result = policy.decide(fix: fix, country: "IE")
                precondition(result.boundaryDistance.map { $0.isFinite && $0 >= 0 } ?? true, "boundary distance out of range")
            }
        }
    }

    private static func state(_ bytes: [UInt8]) {
        if let fix = LastKnownStore.fix(decoding: Data(bytes)) { check(fix) }
    }

    /// A key file read, shown, and written back: what is written reads back as the same key.
    private static func key(_ bytes: [UInt8]) {
        guard let key = DeviceKey(pem: String(decoding: bytes, as: UTF8.self)) else { return }
        _ = key.jwkSet(issuer: "fuzz", includingRetired: true)
        _ = key.publicPEM(includingRetired: true)
        let again = DeviceKey(pem: key.pem)
        precondition(again?.keyID == key.keyID, "a key file written back reads as another key")
        precondition(again?.retired.map(\.thumbprint) == key.retired.map(\.thumbprint), "retired keys changed when written back")
    }

    /// A record line of a version-1 spool, read as its migration reads it, then rendered in
    /// every format under every precision.
    private static func spool(_ bytes: [UInt8]) {
        guard let record = try? MosaicLine.record(from: String(decoding: bytes, as: UTF8.self), recordedAt: 1_795_000_000_000) else { return }
        for precision in LocationPrecision.allCases {
            let policy = OutputPolicy(attributes: PrivacyPolicy(precision: precision).attributes)
            for format in EndpointFormat.allCases where format != .jwt { _ = try? format.body(for: [record, record], policy: policy) }
            for format in RecordFormat.allCases { _ = format.line(record, policy: policy) }
        }
    }
}

/// One line on stderr.
private func complain(_ message: String) {
    FileHandle.standardError.write(Data(message.utf8))
}

/// libFuzzer's entry: the target named by `GEOLOCATE_FUZZ_TARGET` (default `nmea`).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    selectedTarget.run(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}

private let selectedTarget: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["GEOLOCATE_FUZZ_TARGET"] ?? "nmea"
    guard let target = FuzzTarget(rawValue: name) else {
        complain("geolocate-fuzz: unknown target '\(name)' (use \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")))\n")
        exit(64)
    }
    return target
}()

/// libFuzzer's driver, linked in by `-sanitize=fuzzer` (`make fuzz`).
@_silgen_name("LLVMFuzzerRunDriver")
private func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

@main
struct FuzzMain {
    static func main() {
#if GEOLOCATE_FUZZING
        // SwiftPM gives an executable its own entry point, so libFuzzer's `main` is not used:
        // its driver is called instead, with the command line libFuzzer expects.
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv, fuzzOneInput))
#else
        runInputs()
#endif
    }

    /// The runner: `geolocate-fuzz TARGET FILE|DIR…` runs every input once and counts them.
    static func runInputs() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
            complain("usage: geolocate-fuzz \(FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")) FILE|DIR...\n")
            exit(64)
        }
        var count = 0
        for path in arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                complain("geolocate-fuzz: no such file: \(path)\n")
                exit(66)
            }
            let files = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target.run(Array(data))
                count += 1
            }
        }
        print("\(name): \(count) inputs, no finding")
    }
}

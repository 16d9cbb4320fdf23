// geolocate-bench: probes for scripts/bench, each printing one JSON line of counts and time.
//   geolocate-bench FILE.nmea          replays FILE through the parser and epoch assembler (and
//                                      the UBX frames among its sentences, with their verdicts)
//   geolocate-bench spool COUNT DIR    appends COUNT track records to a new spool in DIR,
//                                      1000 per transaction (a burst through the group commit)
//   geolocate-bench gazetteer COUNT    maps the gazetteer, then finds the nearest place to COUNT
//                                      seeded random points between 60° S and 70° N
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import NMEA

/// What every measurement here is timed with.
let clock = SystemMonotonicClock()

func fail(_ message: String, _ code: Int32) -> Never {
    FileHandle.standardError.write(Data("geolocate-bench: \(message)\n".utf8))
    exit(code)
}

/// Replays `path`; with `readsVerdicts` false, UBX frames are checked and skipped, not decoded.
func replay(_ path: String, readsVerdicts: Bool = true) throws {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { fail("cannot open \(path)", 66) }
    let started = clock.nowSeconds
    let stream = NMEAEpochStream(fileDescriptor: fd, readsVerdicts: readsVerdicts)
    var epochs = 0, fixes = 0, authenticated = 0
    while let epoch = try stream.next() {
        epochs += 1
        if let fix = epoch.fix {
            fixes += 1
            if fix.receiverVerdict?.gnssAuthenticated == true { authenticated += 1 }
        }
    }
    let seconds = clock.nowSeconds - started
    let s = stream.statistics
    print("{\"sentences\":\(s.accepted),\"skipped\":\(s.skipped),\"unknown\":\(s.unknown),\"bytes\":\(s.bytes),\"epochs\":\(epochs),\"fixes\":\(fixes),"
          + "\"ubxFrames\":\(s.ubxFrames),\"badUBX\":\(s.badUBX),\"authenticated\":\(authenticated),\"seconds\":\(seconds)}")
}

func spool(count: Int, directory: String) throws {
    let spool = try Spool(stateDirectory: directory, clock: SystemClock())
    let start: Int64 = 1_795_348_800_000
    // The records are made first; binding each one's columns and inserting it is what is timed.
    let records = (0..<count).map { index in
        Record(action: "track", triggeredAt: start + Int64(index) * 1000, requestedMode: "force-current",
               collectionMode: "force-current",
               fix: Fix(timestamp: start + Int64(index) * 1000, latitude: 53.3613367 + Double(index) * 1e-6,
                        longitude: -6.50562, mode: .threeD, altitudeHAE: 79, speed: 11.2, course: 66.1,
                        horizontalAccuracy: 2.3, verticalAccuracy: 2.9, provider: .nmeaReplay),
               permissions: [.fine], origin: .current, fallbackReason: nil, errorCode: .none, context: .regular,
               device: DeviceInfo(id: UUID().uuidString.lowercased(), model: nil, osVersion: "Debian GNU/Linux 12 (bookworm)"))
    }
    let started = clock.nowSeconds
    var index = 0
    while index < records.count {
        let batch = records[index..<min(index + 1000, records.count)].map { SpoolEntry($0) }
        try spool.append(batch, now: start + Int64(count) * 1000, limits: SpoolLimits(maxRecords: count))
        index += batch.count
    }
    let seconds = clock.nowSeconds - started
    // The same records as Mosaic lines, for the peer that posts what flush would.
    let lines = records.map { RecordFormat.mosaic.line($0, policy: .unrestricted) + "\n" }.joined()
    try Data(lines.utf8).write(to: URL(fileURLWithPath: directory + "/records.ndjson"))
    print("{\"records\":\(try spool.count()),\"seconds\":\(seconds),\"body\":\(RecordFormat.mosaic.line(records[0], policy: .unrestricted).utf8.count)}")
}

func gazetteer(count: Int) throws {
    var state: UInt64 = 42
    func random() -> Double {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Double(state >> 11) / Double(1 << 53)
    }
    let points = (0..<count).map { _ in (random() * 130 - 60, random() * 360 - 180) }
    let opening = clock.nowSeconds
    let gazetteer = try Gazetteer.shared(environment: ProcessInfo.processInfo.environment)
    let first = gazetteer.nearest(latitude: points[0].0, longitude: points[0].1)
    let openSeconds = clock.nowSeconds - opening
    let started = clock.nowSeconds
    var countries = Set<String>()
    for (latitude, longitude) in points {
        if let place = gazetteer.nearest(latitude: latitude, longitude: longitude) { countries.insert(place.countryCode) }
    }
    let seconds = clock.nowSeconds - started
    print("{\"lookups\":\(count),\"seconds\":\(seconds),\"openAndFirstSeconds\":\(openSeconds),\"countries\":\(countries.count),\"first\":\"\(first?.city ?? "")\"}")
}

let arguments = CommandLine.arguments
do {
    switch arguments.count {
    case 2: try replay(arguments[1])
    case 3 where arguments[1] == "--frames-only": try replay(arguments[2], readsVerdicts: false)
    case 4 where arguments[1] == "spool":
        guard let count = Int(arguments[2]), count > 0 else { fail("COUNT must be a positive number", 64) }
        try spool(count: count, directory: arguments[3])
    case 3 where arguments[1] == "gazetteer":
        guard let count = Int(arguments[2]), count > 0 else { fail("COUNT must be a positive number", 64) }
        try gazetteer(count: count)
    default: fail("usage: geolocate-bench [--frames-only] FILE.nmea | geolocate-bench spool COUNT DIR | geolocate-bench gazetteer COUNT", 64)
    }
} catch {
    fail("\(error)", 1)
}

import Foundation
import GPSD
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Testing

/// `GPSDSource` against a real gpsd fed by gpsfake, checked against what `gpspipe -w` prints.
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct GPSDSourceTests {
    let logger = Logger(label: "test")

    func open(_ fake: GPSDFake, responseTimeout: Int = 1000) throws -> GPSDSource {
        try GPSDSource(host: "127.0.0.1", port: fake.port, responseTimeoutMilliseconds: responseTimeout, logger: logger,
                       clock: SystemClock(), elapsed: SystemMonotonicClock())
    }

    @Test func heldFixIsGpsdsLastFixThroughPoll() throws {
        try withSteadyGPSD { fake, pipe, seen in
            let source = try open(fake)
            let held = try #require(try source.heldFix())

            // ?POLL; answers with the fix gpsd holds: one gpspipe already saw, or a later one.
            let seenTime = try #require(GPSPipe.milliseconds(seen))
            #expect(held.timestamp >= seenTime)
            let report = try pipe.waitForPositionReport { GPSPipe.milliseconds($0) == held.timestamp && GPSPipe.hasFix($0) }
            expect(held, matches: report)
        }
    }

    @Test func waitForFixReturnsTheNextReport() throws {
        try withSteadyGPSD { fake, pipe, _ in
            let source = try open(fake)
            let held = try #require(try source.heldFix())
            guard case .fix(let next) = try source.waitForFix(timeoutMilliseconds: 10_000) else {
                Issue.record("no fix within 10 s from a gpsd that has fixes")
                return
            }
            #expect(next.provider == .gpsd)
            #expect(next.timestamp >= held.timestamp)
            let report = try pipe.waitForPositionReport { GPSPipe.milliseconds($0) == next.timestamp && GPSPipe.hasFix($0) }
            #expect(abs(next.latitude - (report["lat"] as? Double ?? .nan)) < 1e-9)
            #expect(abs(next.longitude - (report["lon"] as? Double ?? .nan)) < 1e-9)
        }
    }

    @Test func noFixMeansNoHeldFixAndATimeout() throws {
        let fake = try GPSDFake(log: GeolocateProcess.fixture("nofix-only.nmea"))
        defer { fake.stop() }
        let pipe = try GPSPipe(port: fake.port)
        defer { pipe.stop() }
        // gpsd is reading the log once it reports mode 1.
        _ = try pipe.waitForPositionReport { ($0["mode"] as? Int) == 1 }

        let source = try open(fake)
        #expect(try source.heldFix() == nil)
        let started = ContinuousClock.now
        #expect(try source.waitForFix(timeoutMilliseconds: 700) == .timedOut)
        #expect(started.duration(to: .now) >= .milliseconds(700))
    }

    @Test func closedPortIsUnavailableAndNamed() throws {
        let (port, held) = try Loopback.refusingPort()
        defer { close(held) }
        #expect {
            try GPSDSource(host: "127.0.0.1", port: port, responseTimeoutMilliseconds: 1000, logger: logger,
                           clock: SystemClock(), elapsed: SystemMonotonicClock())
        } throws: { error in
            (error as? SourceError)?.description.contains("gpsd://127.0.0.1:\(port)") == true
        }
    }

    @Test func gpsdDyingIsUnavailableNotAHang() throws {
        let fake = try GPSDFake(log: GeolocateProcess.fixture("nofix-only.nmea"))
        defer { fake.stop() }
        let source = try open(fake)
        _ = try source.heldFix()
        fake.stop()

        // Half the timeout: the failure this guards against is waiting it out, which no load
        // on the machine can be mistaken for (the dead gpsd has no clock left to ask).
        let started = ContinuousClock.now
        #expect {
            try source.waitForFix(timeoutMilliseconds: 30_000)
        } throws: { error in
            (error as? SourceError)?.description.contains(fake.source) == true
        }
        #expect(started.duration(to: .now) < .seconds(15))
    }

    /// The record's fix agrees with gpspipe's TPV of the same time, field by field.
    func expect(_ fix: Fix, matches report: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(fix.provider == .gpsd, sourceLocation: sourceLocation)
        #expect(abs(fix.latitude - (report["lat"] as? Double ?? .nan)) < 1e-9, sourceLocation: sourceLocation)
        #expect(abs(fix.longitude - (report["lon"] as? Double ?? .nan)) < 1e-9, sourceLocation: sourceLocation)
        #expect(fix.mode == ((report["mode"] as? Int) == 3 ? .threeD : .twoD), sourceLocation: sourceLocation)
        if let altHAE = report["altHAE"] as? Double {
            #expect(abs((fix.altitudeHAE ?? .nan) - altHAE) < 1e-6, sourceLocation: sourceLocation)
        }
        if let eph = report["eph"] as? Double {
            #expect(abs((fix.horizontalAccuracy ?? .nan) - eph * 0.617) < 1e-6, sourceLocation: sourceLocation)
        }
        if let epv = report["epv"] as? Double {
            #expect(abs((fix.verticalAccuracy ?? .nan) - epv / 1.96) < 1e-6, sourceLocation: sourceLocation)
        }
    }
}

import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Testing

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct CollectionModeTests {
    @Test(arguments: [
        ("default", CollectionMode.default), ("disabled", .disabled), ("force-current", .forceCurrent),
        ("force-last-known", .forceLastKnown), ("last-known:30", .lastKnown(maxAgeMilliseconds: 1_800_000)),
        ("last-known:90s", .lastKnown(maxAgeMilliseconds: 90_000)), ("last-known:2h", .lastKnown(maxAgeMilliseconds: 7_200_000)),
    ])
    func parses(_ text: String, _ mode: CollectionMode) throws {
        #expect(try CollectionMode(parsing: text) == mode)
    }

    @Test(arguments: ["current", "last-known:", "last-known:abc", "last-known:-5", "FORCE-CURRENT"])
    func rejects(_ text: String) {
        #expect(throws: GeolocateError.self) { try CollectionMode(parsing: text) }
    }

    @Test func durations() throws {
        #expect(try DurationText.milliseconds("1500ms", bareUnit: .minutes) == 1500)
        #expect(try DurationText.milliseconds("2s", bareUnit: .minutes) == 2000)
        #expect(try DurationText.milliseconds("1.5s", bareUnit: .minutes) == 1500)
        #expect(try DurationText.milliseconds("1500", bareUnit: .milliseconds) == 1500)
        #expect(DurationText.format(1_800_000) == "30m")
        #expect(DurationText.format(90_000) == "90s")
    }
}

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TriggerResolutionTests {
    let logger = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }

    func trigger(_ settings: Settings = Settings(), environment: [String: String] = [:]) -> Trigger {
        Trigger(CommandContext(settings: settings, configPath: "", environment: environment, clock: FixedClock(0),
                               elapsed: ManualMonotonicClock(), logger: logger))
    }

    /// Every row of the built-in per-action table (SPEC §3).
    @Test(arguments: [
        ("login", CollectionMode.forceCurrent), ("register", .forceCurrent), ("transaction", .forceCurrent),
        ("checkout", .forceCurrent), ("password_reset", .forceCurrent), ("account_details_change", .forceCurrent),
        ("account_auth_change", .forceCurrent), ("credits_change", .forceCurrent),
        ("logout", .forceLastKnown), ("withdraw", .forceLastKnown),
    ])
    func builtInTable(_ action: String, _ expected: CollectionMode) {
        #expect(trigger().resolveMode(.default, action: action) == expected)
    }

    @Test func resolutionOrder() {
        var settings = Settings()
        #expect(trigger(settings).resolveMode(.default, action: "view_page") == .forceCurrent)
        settings[ConfigKey.defaultInterval] = .lastKnown(maxAgeMilliseconds: 60_000)
        #expect(trigger(settings).resolveMode(.default, action: "view_page") == .lastKnown(maxAgeMilliseconds: 60_000))
        #expect(trigger(settings).resolveMode(.default, action: "logout") == .forceLastKnown)
        settings[ConfigKey.actionMode, name: "logout"] = .disabled
        settings[ConfigKey.actionTimeout, name: "logout"] = 3000
        #expect(trigger(settings).resolveMode(.default, action: "logout") == .disabled)
        #expect(trigger(settings).resolveMode(.forceCurrent, action: "logout") == .forceCurrent)

        #expect(trigger(settings).resolveTimeout(nil, action: "login") == 1500)
        settings[ConfigKey.queryTimeout] = 2500
        #expect(trigger(settings).resolveTimeout(nil, action: "login") == 2500)
        #expect(trigger(settings).resolveTimeout(nil, action: "logout") == 3000)
        #expect(trigger(settings).resolveTimeout(700, action: "logout") == 700)
    }

    @Test func permissionsAndSources() throws {
        var settings = Settings()
        #expect(trigger(settings).resolvePermissions(nil) == [])
        settings[ConfigKey.permissions] = [.coarse]
        #expect(trigger(settings).resolvePermissions(nil) == [.coarse])
        #expect(trigger(settings).resolvePermissions([.fine]) == [.fine])
        #expect(trigger(settings).resolvePermissions([]) == [])

        #expect(try trigger(settings).resolveSource(nil) == .defaultGPSD)
        settings[ConfigKey.source] = .nmea(path: "a.nmea")
        #expect(try trigger(settings).resolveSource(nil) == .nmea(path: "a.nmea"))
        #expect(try trigger(settings, environment: ["GEOLOCATE_SOURCE": "gpsd://10.0.0.1:3000"]).resolveSource(nil)
            == .gpsd(host: "10.0.0.1", port: 3000))
        #expect(try trigger(settings).resolveSource(.nmea(path: "b")) == .nmea(path: "b"))
    }

    @Test func noPermissionGives1055WithoutTouchingTheSource() async throws {
        var opened = false
        let trigger = Trigger(CommandContext(settings: Settings(), configPath: "",
                                             environment: ["GEOLOCATE_STATE_DIR": NSTemporaryDirectory() + UUID().uuidString],
                                             clock: FixedClock(42), elapsed: ManualMonotonicClock(), logger: logger), openSource: { _, _ in opened = true; return ScriptedSource() })
        let record = try await trigger.run(TriggerRequest(action: "login"))
        #expect(record.errorCode == .permissionDenied)
        #expect(record.fix == nil)
        #expect(record.triggeredAt == 42)
        #expect(!opened)
    }

    @Test func coarsePermissionSnapsToTheGrid() throws {
        let fix = Fix(timestamp: 0, latitude: 53.3613367, longitude: -6.50562, mode: .threeD, altitudeHAE: 120,
                      speed: 3, horizontalAccuracy: 5, provider: .gpsd)
        let coarse = CoarseLocation.coarsen(fix)
        #expect(coarse.horizontalAccuracy == 2000)
        #expect(coarse.altitudeHAE == nil && coarse.speed == nil)
        #expect(abs(coarse.latitude - fix.latitude) * 111_320 <= 1000)
        let neighbour = CoarseLocation.coarsen(Fix(timestamp: 0, latitude: 53.3613367 + 0.001, longitude: -6.50562 + 0.001,
                                                   mode: .twoD, provider: .gpsd))
        #expect(neighbour.latitude == coarse.latitude && neighbour.longitude == coarse.longitude)
    }

    @Test func actionNames() {
        #expect(throws: Never.self) { try Trigger.validate(action: "password_reset") }
        #expect(throws: GeolocateError.self) { try Trigger.validate(action: "log in") }
        #expect(throws: GeolocateError.self) { try Trigger.validate(action: "") }
    }

    @Test(arguments: [
        ("gpsd", SourceSpecifier.gpsd(host: "localhost", port: 2947)),
        ("gpsd://gps.lan", .gpsd(host: "gps.lan", port: 2947)),
        ("gpsd://127.0.0.1:2950", .gpsd(host: "127.0.0.1", port: 2950)),
        ("gpsd://[::1]:2950", .gpsd(host: "::1", port: 2950)),
        ("gpsd://[fe80::1]", .gpsd(host: "fe80::1", port: 2947)),
        ("nmea:drive.nmea", .nmea(path: "drive.nmea")),
    ])
    func sourceSpecifiers(text: String, expected: SourceSpecifier) throws {
        let parsed = try SourceSpecifier(parsing: text)
        #expect(parsed == expected)
        #expect(try SourceSpecifier(parsing: parsed.description) == parsed)
    }

    @Test(arguments: ["gpsd://", "gpsd://:2947", "gpsd://host:0", "gpsd://host:70000", "gpsd://::1:2947",
                      "gpsd://[::1]2947", "gpsd://host:port", "nmea:", "serial:/dev/ttyUSB0"])
    func invalidSourceSpecifiers(text: String) {
        #expect(throws: GeolocateError.self) { try SourceSpecifier(parsing: text) }
    }
}

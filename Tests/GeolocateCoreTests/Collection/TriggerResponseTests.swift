import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Logging
import Testing

/// `trigger` as the core runs it for the command line: what is refused before the source is
/// asked, what is printed, and how the command ends, without starting the binary.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TriggerResponseTests {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("respond-\(UUID().uuidString)").path
    static let kiosk = TestPaths.projectRoot.appendingPathComponent("Examples/nmea/kiosk-gnss.nmea").path

    func trigger(_ settings: Settings = Settings(), opened: OpenCount = OpenCount()) -> Trigger {
        let context = CommandContext(settings: settings, configPath: "/etc/geolocate/config.json", environment: [:], stateDirectory: state,
                                     clock: FixedClock(1_795_000_000_000), elapsed: ManualMonotonicClock(),
                                     logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        return Trigger(context) { specifier, opening in
            opened.count += 1
            return try SourceOpener.replaysOnly.open(specifier, opening)
        }
    }

    final class OpenCount: @unchecked Sendable {
        var count = 0
    }

    /// The settings of a config file holding `json`.
    func settings(_ json: String) throws -> Settings {
        let path = state + ".json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try ConfigStore(path: path).settings()
    }

    @Test func requireLocationEndsWithExit3AfterTheRecordIsPrinted() async throws {
        var printed: [String] = []
        let request = TriggerRequest(action: "login", permission: [], source: .nmea(path: Self.kiosk))
        await #expect {
            try await trigger().respond(to: request, output: TriggerOutput(requireLocation: true), mqtt: nil) { printed.append($0) }
        } throws: { ($0 as? GeolocateError)?.exitStatus == .noLocation }
        #expect(printed.count == 1)
        #expect(printed.first?.contains("1055") == true, "\(printed)")
    }

    @Test func enforceEndsWithExit4WhenThePolicyDoesNotAllow() async throws {
        var printed: [String] = []
        // A day after the log's fix, which is older than policy.maxAge then.
        let request = TriggerRequest(action: "login", permission: [.fine], now: try TimeText.milliseconds("2026-11-22T14:30:00Z"),
                                     source: .nmea(path: Self.kiosk), policy: true)
        await #expect {
            try await trigger(try settings(#"{"policy": {"maxAge": "5m"}}"#)).respond(to: request, output: TriggerOutput(enforce: true), mqtt: nil) { printed.append($0) }
        } throws: { ($0 as? GeolocateError)?.exitStatus == .denied }
        #expect(printed.count == 1)
    }

    @Test func aTokenWithoutAnAudienceIsRefusedBeforeTheSourceIsAsked() async throws {
        let opened = OpenCount()
        await #expect {
            try await trigger(opened: opened).respond(to: TriggerRequest(action: "login", source: .nmea(path: Self.kiosk)),
                                                      output: TriggerOutput(format: .jwt), mqtt: nil) { _ in }
        } throws: { ($0 as? GeolocateError)?.exitStatus == .usage }
        #expect(opened.count == 0)
    }

    @Test func anUnknownEndpointIsAConfigurationErrorBeforeTheSourceIsAsked() async throws {
        let opened = OpenCount()
        let settings = try settings(#"{"endpoints": {"fleet": {"url": "http://127.0.0.1:9/"}}}"#)
        await #expect {
            try await trigger(settings, opened: opened).respond(to: TriggerRequest(action: "login", source: .nmea(path: Self.kiosk)),
                                                                output: TriggerOutput(endpoint: "nowhere"), mqtt: nil) { _ in }
        } throws: { error in
            let error = error as? GeolocateError
            return error?.exitStatus == .configuration && error?.description.contains("configured: fleet") == true
        }
        #expect(opened.count == 0)
    }

    @Test func formatNamesAreTheRecordFormatsAndJWT() {
        #expect(TriggerFormat.allNames == RecordFormat.allCases.map(\.rawValue) + ["jwt"])
        for name in TriggerFormat.allNames { #expect(TriggerFormat(name: name)?.name == name) }
        #expect(TriggerFormat(name: "JWT") == nil)
    }
}

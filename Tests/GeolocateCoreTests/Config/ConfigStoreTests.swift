import Foundation
import GeolocateCore
import Testing

@Suite struct ConfigStoreTests {
    let path = NSTemporaryDirectory() + "config-\(UUID().uuidString)/config.json"

    @Test func redactsHeaderValuesAndURLCredentials() throws {
        let document = try JSONValue(parsing: Data("""
            {"endpoints": {"primary": {"url": "https://ops:s3cret@collector.example/v1",
             "headers": {"Authorization": "Bearer abc"}}}, "permissions": ["fine"]}
            """.utf8))
        let shown = ConfigStore.redacted(document).prettyPrinted()
        #expect(!shown.contains("s3cret") && !shown.contains("Bearer abc") && !shown.contains("ops:"))
        #expect(shown.contains("collector.example") && shown.contains("fine"))
    }

    @Test func settingsFromFile() throws {
        let store = ConfigStore(path: path)
        try store.set("permissions", to: "[\"coarse\"]")
        try store.set("actions.login.mode", to: "last-known:2h")
        try store.set("actions.login.timeout", to: "750ms")
        try store.set("currentMaxAge", to: "3s")
        let settings = try store.settings()
        #expect(settings.permissions == [.coarse])
        #expect(settings.actions["login"] == Settings.Action(mode: .lastKnown(maxAgeMilliseconds: 7_200_000), timeoutMilliseconds: 750))
        #expect(settings.currentMaxAgeMilliseconds == 3000)
        try store.set("permissions", to: "none")
        #expect(try store.settings().permissions == [])
    }

    @Test func refusesDefaultAsAStoredMode() {
        #expect(throws: GeolocateError.self) { try ConfigStore(path: path).set("actions.login.mode", to: "default") }
    }

    @Test func missingFileIsAnEmptyConfiguration() throws {
        #expect(try ConfigStore(path: path).settings() == Settings())
    }
}

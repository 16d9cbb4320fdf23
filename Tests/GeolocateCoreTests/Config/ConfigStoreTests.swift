import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ConfigStoreTests {
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

    /// A syntax error names its line and column, a truncated file's too (the end of the file),
    /// counted independently here from the text as a person reads it.
    @Test(arguments: [
        ("{\n  \"permissions\": [\"fine\",]\n}\n", "\"fine\","),
        ("{\n  \"permissions\": [\"fine\"],\n  \"source\": \"gpsd", nil),
        ("{\"a\": 1 \"b\": 2}", "1 "),
    ] as [(String, String?)])
    func syntaxErrorsNameLineAndColumn(text: String, before: String?) throws {
        let data = Data(text.utf8)
        let offset = before.map { text.range(of: $0)!.upperBound.utf16Offset(in: text) } ?? text.utf8.count
        let prefix = String(text.prefix(offset))
        let line = prefix.filter { $0 == "\n" }.count + 1
        let column = prefix.count - (prefix.lastIndex(of: "\n").map { prefix.distance(from: prefix.startIndex, to: $0) + 1 } ?? 0) + 1
        #expect {
            try ConfigStore.document(parsing: data, file: "c.json")
        } throws: { error in
            "\(error)".hasPrefix("c.json:\(line): not valid JSON (line \(line), column \(column))")
        }
    }

    @Test func settingsFromFile() throws {
        let store = ConfigStore(path: path)
        try store.set("permissions", to: "[\"coarse\"]")
        try store.set("actions.login.mode", to: "last-known:2h")
        try store.set("actions.login.timeout", to: "750ms")
        try store.set("currentMaxAge", to: "3s")
        let settings = try store.settings()
        #expect(settings[ConfigKey.permissions] == [.coarse])
        #expect(settings[ConfigKey.actionMode, name: "login"] == .lastKnown(maxAgeMilliseconds: 7_200_000))
        #expect(settings[ConfigKey.actionTimeout, name: "login"] == 750)
        #expect(settings[ConfigKey.actionMode, name: "logout"] == .forceLastKnown)
        #expect(settings[ConfigKey.actionMode, name: "view_page"] == .default)
        #expect(settings[ConfigKey.currentMaxAge] == 3000)
        try store.set("permissions", to: "none")
        #expect(try store.settings()[ConfigKey.permissions] == [])
    }

    @Test func trackAndSpoolSettings() throws {
        let store = ConfigStore(path: path)
        try store.set("fields.speed", to: "false")
        try store.set("fields.deviceModel", to: "off")
        try store.set("spool.maxRetention", to: "7d")
        try store.set("spool.maxRecords", to: "5000")
        try store.set("visits.radius", to: "150")
        try store.set("visits.minDuration", to: "5m")
        let settings = try store.settings()
        #expect(!settings.fields.speed && !settings.fields.deviceModel && settings.fields.course)
        #expect(settings.spoolLimits == SpoolLimits(maxRetentionMilliseconds: 7 * 86_400_000, maxRecords: 5000))
        #expect(settings.visitSettings == VisitSettings(radiusMetres: 150, minDurationMilliseconds: 300_000))
        try store.set("visits.enabled", to: "false")
        #expect(try store.settings().visitSettings == nil)
        #expect(try store.get("fields.course") == .bool(true))
        #expect(try store.get("spool.maxRetention") == .string("7d"))
        #expect(throws: GeolocateError.self) { try store.set("fields.speed", to: "maybe") }
        #expect(throws: GeolocateError.self) { try store.set("spool.maxRecords", to: "-3") }
        #expect(throws: GeolocateError.self) { try store.set("fields.advertisingId", to: "true") }
    }

    @Test func refusesDefaultAsAStoredMode() {
        #expect(throws: GeolocateError.self) { try ConfigStore(path: path).set("actions.login.mode", to: "default") }
    }

    @Test func missingFileIsAnEmptyConfiguration() throws {
        let settings = try ConfigStore(path: path).settings()
        #expect(settings.document == Settings().document)
        // Relative paths in it would be taken from the file's directory.
        #expect(settings.resolvedPath("zones.geojson") == (path as NSString).deletingLastPathComponent + "/zones.geojson")
    }
}

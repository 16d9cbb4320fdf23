import Foundation
import Testing

/// Every output format, as the binary prints it in many states, validates against its JSON
/// Schema in docs/schema/ (python jsonschema through scripts/check-schema), and a schema
/// refuses output that breaks it, so a pass means something.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct SchemaEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")
    let nofix = GeolocateProcess.fixture("nofix-only.nmea")

    /// check-schema's verdict on `output` (one document, NDJSON, or with `--query` query lines).
    func check(_ output: String, against schema: String, query: Bool = false) throws -> GeolocateProcess.Result {
        var checker = GeolocateProcess()
        checker.executable = GeolocateProcess.projectRoot.appendingPathComponent("scripts/check-schema")
        let path = GeolocateProcess.projectRoot.appendingPathComponent("docs/schema/\(schema)").path
        return try checker.run((query ? ["--query"] : []) + [path, "-"], stdin: Data(output.utf8))
    }

    func expectValid(_ result: GeolocateProcess.Result, _ schema: String, query: Bool = false,
                     sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(!result.stdout.isEmpty, "no output: \(result.stderr)", sourceLocation: sourceLocation)
        let verdict = try check(result.stdout, against: schema, query: query)
        #expect(verdict.status == 0, "\(schema): \(verdict.stdout)\(verdict.stderr)\n\(result.stdout.prefix(2000))", sourceLocation: sourceLocation)
    }

    /// Trigger in every mode and permission, with a fix, a fallback, a timeout and none.
    var triggerCases: [[String]] {
        [
            ["--replay", drive, "--permission", "fine", "--timeout", "10s"],
            ["--replay", drive, "--permission", "coarse", "--timeout", "10s"],
            ["--replay", drive, "--permission", "none"],
            ["--replay", drive, "--permission", "fine", "--mode", "disabled"],
            ["--replay", drive, "--permission", "fine", "--mode", "force-last-known"],
            ["--replay", nofix, "--permission", "fine", "--mode", "last-known:5m"],
            ["--replay", nofix, "--permission", "fine", "--mode", "force-current", "--timeout", "2s"],
            ["--replay", drive, "--permission", "fine", "--timeout", "10s", "--policy"],
        ]
    }

    @Test(arguments: [("mosaic", "record.schema.json"), ("veridium", "veridium.schema.json"),
                      ("openlocate", "openlocate.schema.json"), ("owntracks", "owntracks.schema.json"),
                      ("osmand", "osmand.schema.json")])
    func everyTriggerFormatMatchesItsSchema(_ format: String, _ schema: String) throws {
        for arguments in triggerCases {
            let result = try geolocate.run(["trigger", "login", "--format", format] + arguments)
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            try expectValid(result, schema, query: format == "osmand")
        }
    }

    @Test func trackLinesAndTheExportMatchTheirSchemas() throws {
        let track = try geolocate.run(["track", "--replay", drive, "--permission", "fine", "--stdout", "--interval", "60s"])
        #expect(track.status == 0 && track.stdout.split(separator: "\n").count >= 3, "\(track.stderr)")
        try expectValid(track, "record.schema.json")
        let visit = try geolocate.run(["track", "--replay", GeolocateProcess.fixture("stay-15min.nmea"), "--permission", "fine",
                                       "--stdout", "--no-spool", "--every-fix", "--count", "30"])
        try expectValid(visit, "record.schema.json")
        try expectValid(try geolocate.run(["export", "--format", "geojson"]), "export-geojson.schema.json")
        try expectValid(try geolocate.run(["status", "--json"]), "status.schema.json")
    }

    @Test func flushReportsMatchTheirSchema() throws {
        _ = try geolocate.run(["track", "--replay", drive, "--permission", "fine", "--count", "5"])
        let collector = try Collector()
        defer { collector.stop() }
        #expect(try geolocate.run(["config", "set", "endpoints.good.url", collector.url("/in")]).status == 0)
        let (refusing, held) = try Loopback.refusingPort()
        defer { close(held) }
        #expect(try geolocate.run(["config", "set", "endpoints.down.url", "http://127.0.0.1:\(refusing)/in"]).status == 0)
        let failed = try geolocate.run(["flush", "--json"])
        #expect(failed.status == 75)
        try expectValid(failed, "flush.schema.json")
        let parked = try geolocate.run(["flush", "--json"])
        #expect(parked.stderr.contains("down: skipped until "), "\(parked.stderr)")
        try expectValid(parked, "flush.schema.json")
        try expectValid(try geolocate.run(["status", "--json"]), "status.schema.json")
    }

    /// The schemas are strict: a number where the record has a string, or a field it never has, fails.
    @Test func aSchemaRefusesWhatBreaksIt() throws {
        let result = try geolocate.run(["trigger", "login", "--replay", drive, "--permission", "fine", "--timeout", "10s"])
        let valid = try check(result.stdout, against: "record.schema.json")
        #expect(valid.status == 0, "\(valid.stdout)")
        let numeric = try #require(result.stdout.range(of: #""accuracy":"1.8""#))
        let broken = result.stdout.replacingCharacters(in: numeric, with: #""accuracy":1.8"#)
        let refused = try check(broken, against: "record.schema.json")
        #expect(refused.status == 1 && refused.stdout.contains("accuracy"), "\(refused.stdout)")
        let extra = try check(result.stdout.replacingOccurrences(of: #"{"id":"#, with: #"{"colour":"blue","id":"#), against: "record.schema.json")
        #expect(extra.status == 1, "\(extra.stdout)")
    }
}

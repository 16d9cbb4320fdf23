import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// export applies the output policy in force (SPEC §12: `privacy.precision`,
/// `locationAttributeFilter`, `fields.*`) as flush does, to records spooled under a wider one;
/// it never replaces a file of the state directory, and a signal mid-export leaves no file.
/// Expected positions come from nmea-gen's truth file; outputs are read back with gpsbabel
/// (GPX), ogr2ogr (GeoJSON) and Python's csv module (CSV).
@Suite(.tags(.integration), .timeLimit(.minutes(10)), .serialized) struct ExportPolicyEndToEndTests {
    let geolocate = GeolocateProcess()

    /// One generated epoch as nmea-gen encoded it.
    struct Truth {
        var time: Date
        var latitude, longitude: Double
    }

    func path(_ name: String) -> String { geolocate.home.appendingPathComponent(name).path }

    func set(_ key: String, _ value: String) throws {
        let result = try geolocate.run(["config", "set", key, value])
        try #require(result.status == 0, "\(result.stderr)")
    }

    /// Spools 20 generated fixes from an hour ago under the default policy (GPS_LOCATION, every
    /// field) and returns nmea-gen's truth for them.
    func spool() throws -> [Truth] {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let start = ISO8601DateFormatter().string(from: Date(timeIntervalSinceNow: -3600))
        try Tool.generateNMEA(["--epochs", "20", "--seed", "21", "--start", start, "--out", path("log.nmea"), "--truth", path("truth.jsonl")])
        let result = try geolocate.run(["track", "--replay", path("log.nmea"), "--every-fix", "--permission", "fine"])
        try #require(result.status == 0, "\(result.stderr)")
        let truth = try String(contentsOfFile: path("truth.jsonl"), encoding: .utf8).split(separator: "\n").map { line in
            let epoch = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return Truth(time: try #require(Self.date(epoch["time"] as! String)),
                         latitude: epoch["lat"] as! Double, longitude: epoch["lon"] as! Double)
        }
        try #require(truth.count == 20)
        return truth
    }

    /// An ISO 8601 time to the second (the generator's epochs are whole seconds), its
    /// fraction dropped: nmea-gen writes two digits, geolocate three.
    static func date(_ text: String) -> Date? {
        ISO8601DateFormatter().date(from: text.replacingOccurrences(of: #"\.[0-9]+"#, with: "", options: .regularExpression))
    }

    /// The export's points read back: coordinates (nil when absent), altitude, and time.
    struct Point {
        var longitude, latitude: Double?
        var altitude: Double?
        var time: String?
    }

    func readBack(_ format: String, _ file: String) throws -> [Point] {
        switch format {
        case "gpx":
            let lines = try Tool.run(["gpsbabel", "-t", "-i", "gpx", "-f", file, "-o", "unicsv,utc=0", "-F", "-"])
                .split(whereSeparator: \.isNewline).map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            guard let header = lines.first else { return [] }
            let column = { (name: String) in header.firstIndex(of: name) }
            return lines.dropFirst().map { row in
                Point(longitude: column("Longitude").flatMap { Double(row[$0]) }, latitude: column("Latitude").flatMap { Double(row[$0]) },
                      altitude: column("Altitude").flatMap { Double(row[$0]) }, time: nil)
            }
        case "geojson":
            let text = try Tool.run(["ogr2ogr", "-f", "GeoJSON", "/vsistdout/", file])
            let document = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            return try #require(document["features"] as? [[String: Any]]).map { feature in
                let coordinates = (feature["geometry"] as? [String: Any])?["coordinates"] as? [Double] ?? []
                let properties = feature["properties"] as? [String: Any] ?? [:]
                #expect(properties["altitude"] == nil)
                return Point(longitude: coordinates.first, latitude: coordinates.dropFirst().first,
                             altitude: coordinates.count > 2 ? coordinates[2] : nil, time: properties["time"] as? String)
            }
        default:
            let json = try Tool.run(["python3", "-c", "import csv, json, sys; print(json.dumps(list(csv.DictReader(open(sys.argv[1], newline='')))))", file])
            let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [[String: String]])
            return rows.map { row in
                Point(longitude: row["longitude"].flatMap(Double.init), latitude: row["latitude"].flatMap(Double.init),
                      altitude: row["altitude"].flatMap(Double.init), time: row["time"])
            }
        }
    }

    /// Each format at three precisions, with fields.altitude off, on records spooled with
    /// everything: exact coordinates at GPS_LOCATION, none at CITY or NONE (GPX and GeoJSON
    /// leave such records out with a note; CSV keeps their rows, coordinates empty), and no
    /// altitude anywhere.
    @Test(arguments: ["gpx", "geojson", "csv"], ["GPS_LOCATION", "CITY", "NONE"])
    func exportFollowsThePolicyInForce(format: String, precision: String) throws {
        let truth = try spool()
        try set("privacy.precision", precision)
        try set("fields.altitude", "false")
        let file = path("out.\(format)")
        let result = try geolocate.run(["export", "--format", format, "--output", file])
        #expect(result.status == 0, "\(result.stderr)")
        let points = try readBack(format, file)
        #expect(points.allSatisfy { $0.altitude == nil }, "fields.altitude false: \(points.prefix(2))")
        if precision == "GPS_LOCATION" {
            #expect(points.count == truth.count)
            for (point, epoch) in zip(points, truth) {
                #expect(abs((point.latitude ?? 0) - epoch.latitude) < 1e-6 && abs((point.longitude ?? 0) - epoch.longitude) < 1e-6)
            }
            #expect(!result.stderr.contains("withholds"), "\(result.stderr)")
        } else if format == "csv" {
            #expect(points.count == truth.count)
            #expect(points.allSatisfy { $0.latitude == nil && $0.longitude == nil })
            #expect(points.map { $0.time.flatMap(Self.date) } == truth.map(\.time))
            #expect(result.stderr.contains("note: 20 rows without coordinates"), "\(result.stderr)")
        } else {
            #expect(points.isEmpty)
            #expect(result.stderr.contains("note: 20 records left out") && result.stderr.contains("withholds their coordinates"), "\(result.stderr)")
            let text = try String(contentsOfFile: file, encoding: .utf8)
            #expect(!text.contains(String(format: "%.4f", truth[0].latitude)), "no coordinate in the file")
        }
    }

    /// NDJSON from `track --stdout`, made under the default policy, is limited the same way.
    @Test func ndjsonInputFollowsThePolicyInForce() throws {
        _ = try spool()
        let printed = try geolocate.run(["track", "--replay", path("log.nmea"), "--every-fix", "--permission", "fine", "--stdout", "--no-spool"])
        try #require(printed.status == 0, "\(printed.stderr)")
        try set("privacy.precision", "NONE")
        let result = try geolocate.run(["export", "--format", "geojson", "--input", "-"], stdin: Data(printed.stdout.utf8))
        #expect(result.status == 0, "\(result.stderr)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        #expect((document["features"] as? [Any])?.isEmpty == true)
        #expect(result.stderr.contains("20 records left out"), "\(result.stderr)")
    }

    /// `--output` naming the spool, another file of the state directory, a link to it, or the
    /// state directory itself is refused with 64 before anything is written: the spool keeps
    /// every pending record.
    @Test func outputNeverReplacesAStateFile() throws {
        _ = try spool()
        let state = geolocate.stateDirectory
        let spoolFile = state + "/spool.sqlite"
        let before = try Tool.run(["sqlite3", spoolFile, "SELECT COUNT(*) FROM records"])
        #expect(before.trimmingCharacters(in: .whitespacesAndNewlines) == "20")
        try FileManager.default.createSymbolicLink(atPath: path("link.csv"), withDestinationPath: spoolFile)
        try FileManager.default.createSymbolicLink(atPath: path("state-link"), withDestinationPath: state)
        link(spoolFile, path("hard.csv"))
        for output in [spoolFile, state + "/device-id", state + "/new.csv", state, path("link.csv"), path("state-link") + "/spool.sqlite",
                       state + "/../state/spool.sqlite", path("hard.csv")] {
            let result = try geolocate.run(["export", "--format", "csv", "--output", output])
            #expect(result.status == 64, "\(output): \(result.stderr)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("geolocate: --output \(output)") && lines[0].contains("state directory"),
                    "\(result.stderr)")
        }
        #expect(try Tool.run(["sqlite3", spoolFile, "PRAGMA integrity_check; SELECT COUNT(*) FROM records"]) == "ok\n20\n")
        #expect(!FileManager.default.fileExists(atPath: state + "/new.csv"))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    /// `--output` naming the configuration file or the `--input` file (or a link to either) is
    /// refused with 64, and both stay as they were.
    @Test func outputNeverReplacesTheConfigurationOrTheInput() throws {
        _ = try spool()
        #expect(try geolocate.run(["config", "set", "privacy.precision", "CITY"]).status == 0)
        let config = try String(contentsOfFile: geolocate.configPath, encoding: .utf8)
        let printed = try geolocate.run(["track", "--replay", path("log.nmea"), "--every-fix", "--permission", "fine", "--stdout", "--no-spool"])
        try printed.stdout.write(toFile: path("input.ndjson"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: path("config-link.csv"), withDestinationPath: geolocate.configPath)
        for (output, what, input) in [(geolocate.configPath, "the configuration file", nil), (path("config-link.csv"), "the configuration file", nil),
                                      (path("input.ndjson"), "the --input file", path("input.ndjson"))] as [(String, String, String?)] {
            let result = try geolocate.run(["export", "--format", "csv", "--output", output] + (input.map { ["--input", $0] } ?? []))
            #expect(result.status == 64 && result.stderr == "geolocate: --output \(output) is \(what), and export never replaces it; write the export elsewhere\n",
                    "\(result.stderr)")
        }
        #expect(try String(contentsOfFile: geolocate.configPath, encoding: .utf8) == config)
        #expect(try String(contentsOfFile: path("input.ndjson"), encoding: .utf8) == printed.stdout)
    }

    /// SIGTERM or SIGINT while the export writes its temporary file: the process ends 143 or
    /// 130, and neither the output nor its temporary file is left. The input is a pipe the
    /// test holds open, so the process is provably mid-export when the signal lands.
    @Test(arguments: [SIGTERM, SIGINT])
    func aSignalMidExportLeavesNoFile(signal: Int32) throws {
        _ = try spool()
        let printed = try geolocate.run(["track", "--replay", path("log.nmea"), "--every-fix", "--permission", "fine", "--stdout", "--no-spool"])
        try #require(printed.status == 0, "\(printed.stderr)")
        let directory = path("out")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let export = try geolocate.start(["export", "--format", "geojson", "--input", "-", "--output", directory + "/y.geojson"], stdin: true)
        // More than one 64 KiB write: the temporary file has bytes in it.
        let block = Data(String(repeating: printed.stdout, count: 40).utf8)
        export.write(block)
        let temporary = { (try? FileManager.default.contentsOfDirectory(atPath: directory))?.filter { $0.hasPrefix(".y.geojson.") } ?? [] }
        let writing = waitUntil(.seconds(30)) {
            guard let name = temporary().first else { return false }
            let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/" + name)[.size] as? Int) ?? 0
            return size > 0
        }
        #expect(writing, "the temporary file appeared and grew")
        #expect(export.isRunning, "still exporting: its input is open")
        kill(export.pid, signal)
        let result = try #require(export.finish(within: .seconds(30)))
        #expect(result.signal == nil && result.status == 128 + signal, "\(result.status) \(result.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}

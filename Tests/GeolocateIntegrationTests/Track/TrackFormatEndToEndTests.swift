import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

/// `track --stdout --format` (issue 27 item 13): the stream in trigger's formats, one record
/// per line, each line the same record the default (mosaic) stream has; the spool keeps the
/// records whatever the stream's format.
@Suite(.tags(.integration), .timeLimit(.minutes(20))) struct TrackFormatEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    func track(_ extra: [String]) throws -> [String] {
        let result = try geolocate.run(["track", "--replay", drive, "--every-fix", "--stdout", "--permission", "fine", "--count", "3"] + extra)
        try #require(result.status == 0, "\(result.stderr)")
        return result.stdout.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    @Test(arguments: ["veridium", "openlocate", "owntracks", "osmand"])
    func eachLineIsTheRecordInTheFormat(_ format: String) throws {
        let mosaic = try track(["--no-spool"]).map { try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        let coordinates = try mosaic.map { record -> (String, String) in
            let location = try #require(record["location"] as? [String: Any])
            return (try #require(location["latitude"] as? String), try #require(location["longitude"] as? String))
        }
        let lines = try track(["--format", format])
        try #require(lines.count == 3, "\(lines)")
        for (line, (latitude, longitude)) in zip(lines, coordinates) {
            if format == "osmand" {
                #expect(line.contains("lat=\(latitude)") && line.contains("lon=\(longitude)"), "\(line)")
            } else {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object != nil, "one JSON object per line: \(line)")
                #expect(line.contains(latitude) && line.contains(longitude), "\(line)")
            }
        }
        // The spool keeps all three records, as with the default format.
        #expect(try Spool(stateDirectory: geolocate.stateDirectory, clock: SystemClock()).count() == 3)
    }

    @Test func formatWithoutStdoutIsAUsageError() throws {
        let result = try geolocate.run(["track", "--replay", drive, "--format", "owntracks"])
        #expect(result.status == 64 && result.stderr.contains("--format") && result.stderr.contains("--stdout"), "\(result.stderr)")
        let unknown = try geolocate.run(["track", "--replay", drive, "--stdout", "--format", "gpx"])
        #expect(unknown.status == 64, "\(unknown.stderr)")
    }
}

import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

/// `track --stdout --format` (issue 27 item 13): the stream in trigger's formats, one record
/// per line, each line the same record the default (mosaic) stream has; the spool keeps the
/// records whatever the stream's format. Here the flags' misuse; the lines themselves are
/// tested in process (TrackReplayTests).
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct TrackFormatEndToEndTests {
    let geolocate = GeolocateProcess()
    let drive = GeolocateProcess.example("maynooth-drive.nmea")

    @Test func formatWithoutStdoutIsAUsageError() throws {
        let result = try geolocate.run(["track", "--replay", drive, "--format", "owntracks"])
        #expect(result.status == 64 && result.stderr.contains("--format") && result.stderr.contains("--stdout"), "\(result.stderr)")
        let unknown = try geolocate.run(["track", "--replay", drive, "--stdout", "--format", "gpx"])
        #expect(unknown.status == 64, "\(unknown.stderr)")
    }
}

import Foundation
import Testing

/// Every committed fuzz input (the seeds and each past finding, `Fuzz/corpus/TARGET/`) through
/// the ordinary build of `geolocate-fuzz`: a finding that comes back fails here, in `make test`,
/// without a libFuzzer build.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct FuzzCorpusTests {
    static let targets = ["nmea", "ubx", "gpsd", "config", "text", "state", "spool", "geocoder", "zones", "key"]

    @Test(arguments: targets) func corpusReplaysCleanly(_ target: String) throws {
        let runner = GeolocateProcess.builtExecutable("geolocate-fuzz")
        try #require(FileManager.default.isExecutableFile(atPath: runner.path), "build geolocate-fuzz first")
        let corpus = GeolocateProcess.projectRoot.appendingPathComponent("Fuzz/corpus/\(target)").path
        let inputs = try FileManager.default.contentsOfDirectory(atPath: corpus).count
        #expect(inputs > 0)
        let running = try GeolocateProcess(executable: runner).start([target, corpus])
        let result = try #require(running.finish(within: .seconds(120)), "\(target): an input hangs")
        #expect(result.signal == nil && result.status == 0, "\(target): \(result.stderr)")
        #expect(result.stdout == "\(target): \(inputs) inputs, no finding\n")
    }
}

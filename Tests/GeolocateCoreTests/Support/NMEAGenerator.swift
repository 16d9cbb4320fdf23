import Foundation

/// Runs `../shared/tools/nmea-gen.py` into a temporary directory: a log and its truth file.
struct NMEAGenerator {
    /// One epoch of the generator's truth file.
    struct Truth: Decodable {
        var time: String
        var lat: Double
        var lon: Double
        var fix: Int
        var corrupted: Bool

        var milliseconds: Int64? { GeneratedStreamTests.milliseconds(time) }
    }

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gen-\(UUID().uuidString)")
    var log: String { directory.appendingPathComponent("generated.nmea").path }
    var truthPath: String { directory.appendingPathComponent("truth.jsonl").path }

    /// Generates the log with `arguments` (`--epochs`, `--seed`, …).
    init(_ arguments: [String]) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Oracle.run(["python3", TestPaths.corpus.appendingPathComponent("../../tools/nmea-gen.py").standardized.path]
            + arguments + ["--quiet", "--truth", truthPath, "--out", log])
    }

    func truth() throws -> [Truth] {
        try String(contentsOfFile: truthPath, encoding: .utf8).split(whereSeparator: \.isNewline).map {
            try JSONDecoder().decode(Truth.self, from: Data($0.utf8))
        }
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

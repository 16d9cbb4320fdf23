import Foundation
import NMEA

/// Feeds bytes to the NMEA reader through a real pipe, as stdin would.
enum NMEATestInput {
    /// The sentences the reader accepted and parsed, and its statistics.
    static func read(_ bytes: [UInt8]) throws -> (sentences: [NMEASentence], statistics: NMEAStatistics) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nmea-\(UUID().uuidString).log").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let reader = NMEAReader(fileDescriptor: fd, blockSize: 4096)
        var sentences: [NMEASentence] = []
        try reader.forEachSentence { body in
            if let sentence = NMEASentence.parse(body) { sentences.append(sentence) }
            return true
        }
        return (sentences, reader.statistics)
    }

    static func read(_ text: String) throws -> (sentences: [NMEASentence], statistics: NMEAStatistics) {
        try read(Array(text.utf8))
    }

    /// `$BODY*XX` with the right checksum.
    static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0)) { $0 ^ $1 }
        return "$" + body + "*" + String(format: "%02X", checksum)
    }

    /// Epochs assembled from a text log.
    static func epochs(_ text: String) throws -> [Epoch] {
        try epochs(Array(text.utf8))
    }

    /// Epochs assembled from a log's bytes (NMEA, or NMEA mixed with UBX), read from a file.
    static func epochs(_ bytes: [UInt8]) throws -> [Epoch] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("nmea-\(UUID().uuidString).log").path
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        let stream = NMEAEpochStream(fileDescriptor: fd)
        var epochs: [Epoch] = []
        while let epoch = try stream.next() { epochs.append(epoch) }
        return epochs
    }
}

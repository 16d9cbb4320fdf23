import Foundation
import Testing

/// Every read of the time goes through the clocks in `WallClock.swift` (ARCHITECTURE, "Time"):
/// a direct read anywhere else is a wait tests cannot move and a "now" `--now` cannot set.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct TimeReadTests {
    /// What reads the system's time or sleeps on it, as Swift, Foundation, Dispatch, NIO and libc spell it.
    static let directReads = ["Date()", "Date.now", "ContinuousClock", "SuspendingClock", "DispatchTime", "DispatchWallTime",
                              "NIODeadline.now", "clock_gettime", "gettimeofday", "time(nil)", "usleep(", "nanosleep(",
                              "Thread.sleep", "Task.sleep", "systemUptime", "CFAbsoluteTimeGetCurrent"]
    /// The one file that holds the clocks.
    static let clockFile = "Sources/GeolocateModel/Time/WallClock.swift"

    @Test func nothingOutsideTheClockFileReadsTheTime() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let sources = root.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(atPath: sources.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") }.map { "Sources/" + $0 }
        #expect(files.count > 50, "found only \(files.count) Swift files under \(sources.path)")
        #expect(files.contains(TimeReadTests.clockFile))
        var found: [String] = []
        for file in files where file != TimeReadTests.clockFile && !file.hasPrefix("Sources/geolocate-bench/") {
            let text = try String(contentsOf: root.appendingPathComponent(file), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") { continue }
                for read in TimeReadTests.directReads where line.contains(read) {
                    found.append("\(file):\(number + 1): \(read)")
                }
            }
        }
        #expect(found.isEmpty, "direct time reads outside \(TimeReadTests.clockFile):\n\(found.joined(separator: "\n"))")
    }
}

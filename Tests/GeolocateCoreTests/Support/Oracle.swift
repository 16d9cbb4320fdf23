import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Runs an oracle (sha256sum, nmea-gen.py, a Python script) to its end with a time limit,
/// its input and output in files, and returns its stdout.
///
/// Files rather than pipes, so no read can wait for an end of file that never comes (a pipe
/// held open by another test's child); the wait itself has a deadline, past which the oracle
/// is killed and the test fails, rather than the run hanging. Foundation's `Process` closes
/// every other descriptor in the child on Linux.
enum Oracle {
    struct Failed: Error, CustomStringConvertible {
        var arguments: [String]
        var reason: String
        var description: String { "\(arguments.joined(separator: " ")): \(reason)" }
    }

    /// Runs `arguments` (looked up on `PATH`) with `input` on its stdin, within `timeLimit`.
    /// - Throws: `Failed` when it exits with a status other than 0 or outlives the limit.
    @discardableResult
    static func run(_ arguments: [String], input: Data = Data(), timeLimit: Duration = .seconds(120)) throws -> Data {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("oracle-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let inputURL = directory.appendingPathComponent("stdin"), outputURL = directory.appendingPathComponent("stdout")
        let errorsURL = directory.appendingPathComponent("stderr")
        try input.write(to: inputURL)
        for url in [outputURL, errorsURL] { _ = FileManager.default.createFile(atPath: url.path, contents: nil) }
        let stdin = try FileHandle(forReadingFrom: inputURL), stdout = try FileHandle(forWritingTo: outputURL)
        let stderr = try FileHandle(forWritingTo: errorsURL)
        defer { [stdin, stdout, stderr].forEach { try? $0.close() } }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        let deadline = ContinuousClock.now + timeLimit
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        guard !process.isRunning else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw Failed(arguments: arguments, reason: "still running after \(timeLimit)")
        }
        let output = try Data(contentsOf: outputURL)
        guard process.terminationStatus == 0 else {
            let errors = (try? Data(contentsOf: errorsURL)) ?? Data()
            throw Failed(arguments: arguments, reason: "exited with \(process.terminationStatus): \(String(decoding: errors.suffix(2000), as: UTF8.self))")
        }
        return output
    }
}

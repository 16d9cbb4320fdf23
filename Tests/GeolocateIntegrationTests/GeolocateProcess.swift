import Foundation

/// Runs the built `geolocate` binary with its own state and config, as a user's shell would.
struct GeolocateProcess {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String

        /// stdout parsed as one JSON object.
        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any] else {
                throw CocoaError(.coderReadCorrupt)
            }
            return object
        }
    }

    static let projectRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The binary beside the test bundle (SwiftPM builds both into one folder).
    static let binary: URL = {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("geolocate")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return projectRoot.appendingPathComponent(".build/debug/geolocate")
    }()

    /// A fresh state directory and config path under the temporary directory.
    let home: URL = FileManager.default.temporaryDirectory.appendingPathComponent("geolocate-e2e-\(UUID().uuidString)")
    var configPath: String { home.appendingPathComponent("config.json").path }
    var stateDirectory: String { home.appendingPathComponent("state").path }

    func run(_ arguments: [String], stdin: Data? = nil, environment extra: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.currentDirectoryURL = Self.projectRoot
        var environment = ProcessInfo.processInfo.environment
        environment["GEOLOCATE_CONFIG"] = configPath
        environment["GEOLOCATE_STATE_DIR"] = stateDirectory
        environment["GEOLOCATE_SOURCE"] = nil
        for (key, value) in extra { environment[key] = value }
        process.environment = environment
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(stdin) }
        try input.fileHandleForWriting.close()
        let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
        let stderrData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
                      stderr: String(decoding: stderrData, as: UTF8.self))
    }

    static func example(_ name: String) -> String { "Examples/nmea/\(name)" }
    static func fixture(_ name: String) -> String { "Tests/GeolocateCoreTests/Fixtures/\(name)" }
}

import Foundation

/// A GNSS receiver on a pseudo-terminal (`pty-nmea.py`), as `/dev/ttyUSB0` is to a device
/// without gpsd: live input, whose fixes are dated by their arrival (SPEC §3).
///
/// Call `stop()` in every outcome (`defer`): it ends the script by its process group.
final class TerminalReceiver {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pty-nmea-\(UUID().uuidString)")
    /// The terminal's path, such as `/dev/pts/3`.
    private(set) var path = ""
    private var pid: pid_t = 0

    /// Starts writing `log`'s lines to a new terminal and waits until it exists; with
    /// `hangUpAfter`, writes nothing and hangs up that many seconds later (unplugged).
    init(log: String, linesPerSecond: Int = 200, hangUpAfter seconds: Int? = nil) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pathFile = directory.appendingPathComponent("path").path
        let program = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("pty-nmea.py").path
        pid = try ProcessGroup.spawn(["python3", program, log, pathFile, String(linesPerSecond)] + (seconds.map { [String($0)] } ?? []),
                                     outputPath: directory.appendingPathComponent("output").path)
        guard waitUntil(.seconds(10), { FileManager.default.fileExists(atPath: pathFile) }),
              let text = try? String(contentsOfFile: pathFile, encoding: .utf8), text.hasPrefix("/dev/") else {
            let output = (try? String(contentsOf: directory.appendingPathComponent("output"), encoding: .utf8)) ?? ""
            stop()
            throw GPSDFakeError(message: "the pseudo-terminal receiver did not start: \(output)")
        }
        path = text
    }

    /// Ends pty-nmea.py and removes its directory; calling it again does nothing.
    func stop() {
        if pid > 0 { ProcessGroup.stop(pid) }
        pid = 0
        try? FileManager.default.removeItem(at: directory)
    }

    deinit { stop() }
}

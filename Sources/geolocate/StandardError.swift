import ArgumentParser
import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel

/// Writes diagnostics to stderr, one line each, never to stdout.
enum StandardError {
    /// A line's sd-daemon(3) priority, which the journal files it under.
    enum Priority: Int {
        case critical = 2, error, warning, notice, info, debug
    }

    /// Whether stderr is the journal (`JOURNAL_STREAM`, SPEC §14): then each line starts with
    /// its priority (`<4>`), so `journalctl -p warning` finds the warnings.
    static let isJournal = JournalStream.isConnected(2, environment: ProcessInfo.processInfo.environment)

    /// Writes `line` as one line; a failure, by default, so its priority is error.
    static func write(_ line: String, priority: Priority = .error) {
        FileHandleOutput.stderr(prefix(priority) + oneLine(line) + "\n")
    }

    /// Writes `text` of one or more lines (a usage error and its synopsis), each with the
    /// journal's prefix when stderr is the journal.
    static func write(lines text: String, priority: Priority = .error) {
        guard isJournal else { return FileHandleOutput.stderr(text) }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let prefixed = lines.enumerated().map { index, line in
            index == lines.count - 1 && line.isEmpty ? "" : prefix(priority) + line + "\n"
        }
        FileHandleOutput.stderr(prefixed.joined())
    }

    /// `<N>` when stderr is the journal, else nothing.
    private static func prefix(_ priority: Priority) -> String {
        isJournal ? "<\(priority.rawValue)>" : ""
    }

    /// `text` with its control characters escaped (`\n`, `\r`, `\t`, `\u{1B}`): a path, URL or
    /// action name holding a newline or an escape sequence must not split a message into two
    /// lines, forge a second one, or drive the terminal.
    static func oneLine(_ text: String) -> String {
        ErrorText.oneLine(text)
    }
}

import GeolocateConfig
import GeolocateModel

/// How `status` says what it found: aligned lines, one JSON object, or the monitoring
/// plugins' one line (`--check`) judged by its thresholds.
package enum StatusForm: Sendable, Equatable {
    case text
    case json
    case check(StatusReport.Thresholds)
}

/// What `status` prints, and how it ends.
package struct StatusOutput: Sendable, Equatable {
    /// The report (or the --check line), for stdout; `nil` when there is none.
    package var report: String?
    /// One line for stderr, without the `geolocate: ` prefix.
    package var problem: String?
    package var exitStatus: ExitStatus
}

extension StatusReport {
    /// `status` whole: the report in `form`, and its end. A configuration that cannot be read
    /// (`context` failed) ends it as the error says, or under `--check` as UNKNOWN in the one
    /// line, naming `stateDirectory` as every --check line does.
    package static func command(_ form: StatusForm, context: Result<CommandContext, any Error>, stateDirectory: String,
                                probe: (_ host: String, _ port: Int) -> GPSDHealth) -> StatusOutput {
        let report: StatusReport
        do {
            report = try gather(try context.get(), probe: probe)
        } catch {
            let error = error as? GeolocateError ?? .unreadableInput(reason: ErrorText.plain(error))
            guard case .check = form else { return StatusOutput(report: nil, problem: error.description, exitStatus: error.exitStatus) }
            return StatusOutput(report: unknownLine(error.description, stateDirectory: stateDirectory), problem: nil, exitStatus: .checkUnknown)
        }
        switch form {
        case .check(let thresholds):
            let verdict = report.check(thresholds)
            return StatusOutput(report: verdict.line, problem: nil, exitStatus: verdict.status)
        case .text, .json:
            return StatusOutput(report: form == .json ? report.json : report.text, problem: report.problemLine.map(ErrorText.oneLine),
                                exitStatus: report.exitStatus)
        }
    }

    /// `--check`'s UNKNOWN line for `reason`: one line, `|` (which would start the perfdata)
    /// written `/`, and the state directory named when one is known.
    package static func unknownLine(_ reason: String, stateDirectory: String?) -> String {
        let place = stateDirectory.map { " (state \($0))" } ?? ""
        return "GEOLOCATE UNKNOWN - \(ErrorText.oneLine(reason))\(place)".replacingOccurrences(of: "|", with: "/")
    }
}

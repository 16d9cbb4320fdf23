import Foundation

/// What a track run did, for its closing diagnostics and for tests.
package struct TrackSummary: Sendable, Equatable, CustomStringConvertible {
    package var fixes = 0
    package var outsideWindow = 0
    package var tooInaccurate = 0
    package var records = 0
    package var spooled = 0
    package var expired = 0
    /// What the source read (`LocationSource.readSummary`), such as the lines a replay rejected.
    package var input: String?

    package var description: String {
        "\(fixes) fixes (\(outsideWindow) outside --window, \(tooInaccurate) less accurate than --accuracy), "
            + "\(records) records, \(spooled) spooled, \(expired) expired from the spool" + (input.map { "; \($0)" } ?? "")
    }
}

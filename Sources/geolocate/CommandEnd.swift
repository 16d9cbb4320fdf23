import Foundation
import GeolocateModel

/// A command's end other than success, once the command has said why (on stderr, or in the
/// gate's and `status --check`'s own lines): `Geolocate.main` ends the process with it.
struct CommandEnd: Error {
    var status: ExitStatus

    init(_ status: ExitStatus) {
        self.status = status
    }

    /// A failure, said on stderr as one line (SPEC §8), and its status.
    static func reporting(_ error: GeolocateError) -> CommandEnd {
        StandardError.write("geolocate: \(error.description)")
        return CommandEnd(error.exitStatus)
    }

    /// The one place a command's end becomes the process's exit code: every code is one of
    /// `ExitStatus`'s, the table of SPEC §8.
    static func exit(_ status: ExitStatus) -> Never {
        Foundation.exit(status.rawValue)
    }
}

import Foundation
import GeolocateModel

/// A command's end other than success, once the command has said why (on stderr, or in the
/// gate's and `status --check`'s own lines): `Geolocate.main` ends the process with it.
struct CommandEnd: Error {
    var status: ExitStatus

    init(_ status: ExitStatus) {
        self.status = status
    }

    /// A failure, said on stderr as one line (SPEC §8), and its status (else `status`).
    static func reporting(_ error: GeolocateError, as status: ExitStatus? = nil) -> CommandEnd {
        StandardError.write("geolocate: \(error.description)")
        return CommandEnd(status ?? error.exitStatus)
    }

    /// The one place a command's end becomes the process's exit code: every code is one of
    /// `ExitStatus`'s, the table of SPEC §8.
    static func exit(_ status: ExitStatus) -> Never {
        Foundation.exit(status.rawValue)
    }
}

/// Runs a core call, turning a `GeolocateError` into one line on stderr and its exit status.
func runReportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as GeolocateError {
        throw CommandEnd.reporting(error)
    }
}

/// `runReportingErrors` for commands that wait on the network: their tasks run on the
/// `WorkExecutor`, where a blocking spool or lock never stalls the cooperative pool.
func runReportingErrors(_ body: () async throws -> Void) async throws {
    do {
        try await withTaskExecutorPreference(WorkExecutor.shared) { try await body() }
    } catch let error as GeolocateError {
        throw CommandEnd.reporting(error)
    }
}

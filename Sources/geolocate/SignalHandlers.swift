import Dispatch
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) handled by `handler` (given
/// the signal's number) instead of ending the process: track stops cleanly, export removes
/// its temporary file. SIGPIPE is ignored by every command: a reader that went away also
/// stops the run.
final class SignalHandlers {
    private let sources: [DispatchSourceSignal]

    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }
}

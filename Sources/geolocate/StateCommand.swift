import ArgumentParser
import Foundation
import GeolocateCore

struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Change what geolocate keeps in its state directory.",
        discussion: """
            A jump stands until the travel could have been made (under 19 h at \
            signals.maxSpeed 300 m/s); 'forget previous' drops the report the next one is \
            compared with, and says so in the system log.

            Examples:
              geolocate state forget previous --state-dir /var/lib/geolocate   # as root
            """,
        subcommands: [Forget.self]
    )

    /// What `state forget` can drop.
    enum Forgettable: String, ExpressibleByArgument, CaseIterable {
        case previous

        init?(argument: String) {
            guard let what = RefusedValue.choice(argument, Forgettable.init(rawValue:)) else { return nil }
            self = what
        }
    }

    struct Forget: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "forget",
            abstract: "Drop the previous report (root: the login gate's too), so no jump stands.")
        @Argument(help: ArgumentHelp("What to forget: previous.", valueName: "what"))
        var what: Forgettable
        @OptionGroup var globalOptions: GlobalOptions

        func run() throws {
            try runReportingErrors {
                let context = try globalOptions.context(readingConfig: false)
                try FileHandleOutput.stdout(try SignalDetector.forgetPrevious(in: context.stateDirectory, by: "uid \(getuid())"))
            }
        }
    }
}

import ArgumentParser
import GeolocateCore

struct TrackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "track",
        abstract: "Collect locations continuously into the spool (not yet implemented: exits 69).")

    @OptionGroup var globalOptions: GlobalOptions

    func run() throws {
        try runReportingErrors { throw GeolocateError.notImplemented("geolocate track") }
    }
}

struct FlushCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Send the spool to the configured endpoints (not yet implemented: exits 69).")

    @OptionGroup var globalOptions: GlobalOptions

    func run() throws {
        try runReportingErrors { throw GeolocateError.notImplemented("geolocate flush") }
    }
}

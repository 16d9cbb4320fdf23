import ArgumentParser
import GeolocateCore

struct FlushCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flush",
        abstract: "Send the spool to the configured endpoints (not yet implemented: exits 69).")

    @OptionGroup var globalOptions: GlobalOptions

    func run() throws {
        try runReportingErrors { throw GeolocateError.notImplemented("geolocate flush") }
    }
}

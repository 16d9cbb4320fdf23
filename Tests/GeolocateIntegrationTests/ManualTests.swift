import Foundation
import Testing

/// The committed man page is generated from the parser (`make man`); this keeps it true to it.
@Suite struct ManualTests {
    let geolocate = GeolocateProcess()

    @Test(arguments: [["trigger"], ["track"], ["flush"], ["config"], ["config", "show"], ["config", "set"]])
    func everyOptionInHelpIsInTheManPage(_ command: [String]) throws {
        let manual = try String(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent("man/geolocate.1"), encoding: .utf8)
        let help = try geolocate.run(command + ["--help"])
        #expect(help.status == 0)
        let options = Set(help.stdout.split(whereSeparator: { !($0.isLetter || $0 == "-") })
            .filter { $0.hasPrefix("--") && $0.count > 3 }.map(String.init))
        #expect(!options.isEmpty)
        for option in options where option != "--help" && option != "--version" {
            // mdoc writes a long flag as "Fl -name" (one dash escaped away).
            #expect(manual.contains("Fl -" + option.dropFirst(2)), "\(option) of \(command) is missing from man/geolocate.1: run make man")
        }
    }
}

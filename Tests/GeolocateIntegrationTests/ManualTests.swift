import Foundation
import Testing

/// The committed man page (`make man`: the parser's part joined with man/sections.mdoc by
/// scripts/make-man) is lint-clean and true to the parser and to the exit codes in use.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct ManualTests {
    let geolocate = GeolocateProcess()
    let manualPath = GeolocateProcess.projectRoot.appendingPathComponent("man/geolocate.1").path

    var manual: String { get throws { try String(contentsOfFile: manualPath, encoding: .utf8) } }

    /// Runs a formatter on the page; its stderr is its warnings.
    func lint(_ command: [String]) throws -> (status: Int32, warnings: String) {
        let outcome = try Spawn.run(command + [manualPath])
        return (outcome.status, String(decoding: outcome.stderr, as: UTF8.self))
    }

    @Test func theManPageIsLintClean() throws {
        // man-db (what `man` users run and lintian checks with) and groff at all warning levels.
        let man = try lint(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z"])
        #expect(man.status == 0 && man.warnings.isEmpty, "man --warnings: \(man.warnings)")
        let groff = try lint(["groff", "-mandoc", "-ww", "-z"])
        #expect(groff.status == 0 && groff.warnings.isEmpty, "groff -ww: \(groff.warnings)")
    }

    /// Every option of every command, as the parser dumps them, is in the page, and every
    /// option the page names is one the parser takes.
    @Test func theManPageMatchesTheParser() throws {
        let dump = try geolocate.run(["--experimental-dump-help"])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        var parsed: Set<String> = []
        var commands: [String] = []
        func walk(_ command: [String: Any]) {
            commands.append(command["commandName"] as? String ?? "")
            for argument in command["arguments"] as? [[String: Any]] ?? [] {
                for name in argument["names"] as? [[String: Any]] ?? [] where name["kind"] as? String == "long" {
                    if let name = name["name"] as? String { parsed.insert(name) }
                }
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] { walk(sub) }
        }
        walk(try #require(root["command"] as? [String: Any]))
        let page = try manual
        for option in parsed where option != "help" && option != "version" {
            // An option with a short name too is generated as "Fl w , -warning".
            #expect(page.contains("Fl -\(option)") || page.contains(" , -\(option) "), "--\(option) is missing from man/geolocate.1: run make man")
        }
        for command in commands where command != "geolocate" && command != "help" {
            #expect(page.contains(".It Em \(command)"), "\(command) is missing from man/geolocate.1: run make man")
        }
        // Options the page names (".Fl -name"), written or generated, that no command takes.
        let named = Set(page.split(separator: "\n").flatMap { line -> [String] in
            line.components(separatedBy: "Fl -").dropFirst().compactMap { rest in
                let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "-" }
                return name.isEmpty ? nil : String(name)
            }
        })
        let extra = named.subtracting(parsed).subtracting(["help", "version", "generate-completion-script", "experimental-dump-help"])
        #expect(extra.isEmpty, "the page names options no command takes: \(extra.sorted())")
    }

    @Test func theManPageHasTheSectionsUsersLookFor() throws {
        let page = try manual
        for section in ["EXAMPLES", "FILES", "ENVIRONMENT", "\"EXIT STATUS\"", "\"RECORD FIELDS\"", "\"SEE ALSO\"", "\"DURATIONS AND UNITS\""] {
            #expect(page.contains(".Sh \(section)\n"), "no \(section) section")
        }
        for reference in [".Xr gpsd 8", ".Xr gpspipe 1"] { #expect(page.contains(reference)) }
        // Every exit code the program uses, read from its one table of them, has its entry.
        let source = try String(contentsOf: GeolocateProcess.projectRoot.appendingPathComponent("Sources/GeolocateModel/Support/ExitStatus.swift"), encoding: .utf8)
        let codes = Set(source.matches(of: /static let \w+ = ExitStatus\(rawValue: (\d+)\)/).compactMap { Int($0.1) })
        #expect(codes.count >= 13, "\(codes)")
        let status = try #require(page.components(separatedBy: ".Sh \"EXIT STATUS\"").last?.components(separatedBy: "\n.Sh ").first)
        for code in codes {
            #expect(status.contains("\n.It \(code)\n"), "exit status \(code) is not in EXIT STATUS")
        }
        // The units of the record's fields, and the note that its numbers are strings.
        for unit in ["metres per second", "degrees", "68", "epoch milliseconds", "tonumber"] {
            #expect(page.contains(unit), "RECORD FIELDS does not say '\(unit)'")
        }
    }
}

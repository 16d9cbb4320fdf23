import Foundation
import Testing

/// Completion of configuration keys (issue 27 item 13): `config get endpoints.` offers the
/// endpoints the configuration in force has, not the literal `endpoints.NAME.url`; a broken
/// configuration gives the table's keys, quietly.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct KeyCompletionEndToEndTests {
    let geolocate = GeolocateProcess()

    /// What bash offers for each command line (the last word is completed), through the
    /// script the parser generates, with this binary on PATH and `environment` added.
    func complete(_ lines: [[String]], environment: [String: String] = [:]) throws -> [Set<String>] {
        let script = try geolocate.run(["--generate-completion-script", "bash"])
        try #require(script.status == 0)
        let bin = geolocate.home.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        let link = bin.appendingPathComponent("geolocate")
        try? FileManager.default.removeItem(at: link)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: geolocate.executable)
        let scriptPath = geolocate.home.appendingPathComponent("geolocate.bash")
        try Data(script.stdout.utf8).write(to: scriptPath)
        let quoted = lines.map { words in "complete_words " + words.map { "'\($0)'" }.joined(separator: " ") }
        let probe = """
            source '\(scriptPath.path)'
            complete_words() {
              COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
              _geolocate geolocate "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
              printf '%s ' "${COMPREPLY[@]}"; echo
            }
            \(quoted.joined(separator: "\n"))
            """
        let bash = try Spawn.run(["/bin/bash", "-c", probe],
                                 environment: ["PATH": bin.path + ":/usr/bin:/bin", "HOME": geolocate.home.path].merging(environment) { $1 },
                                 directory: GeolocateProcess.projectRoot.path)
        let output = String(decoding: bash.stdout, as: UTF8.self)
        let results = output.split(separator: "\n", omittingEmptySubsequences: false).prefix(lines.count)
        try #require(results.count == lines.count, "\(output)")
        return results.map { Set($0.split(separator: " ").map(String.init)) }
    }

    @Test func keysCompleteToTheConfiguredNames() throws {
        for (key, value) in [("endpoints.primary.url", "https://example.org/in"), ("endpoints.backup.url", "mqtt://127.0.0.1/t"),
                             ("endpoints.primary.headers.Authorization", "Bearer x"), ("actions.kiosk_unlock.mode", "disabled")] {
            #expect(try geolocate.run(["config", "set", key, value]).status == 0)
        }
        let environment = ["GEOLOCATE_CONFIG": geolocate.configPath]
        let offered = try complete([["geolocate", "config", "get", "endpoints."],
                                    ["geolocate", "config", "set", "endpoints.primary.h"],
                                    ["geolocate", "config", "unset", "actions.kiosk"],
                                    ["geolocate", "config", "get", "actions.log"]], environment: environment)
        #expect(offered[0].isSuperset(of: ["endpoints.primary.url", "endpoints.backup.url", "endpoints.backup.password"]), "\(offered[0])")
        #expect(offered[0].allSatisfy { $0.hasPrefix("endpoints.primary.") || $0.hasPrefix("endpoints.backup.") }, "\(offered[0])")
        #expect(offered[1] == ["endpoints.primary.headers.Authorization"], "\(offered[1])")
        #expect(offered[2].isSuperset(of: ["actions.kiosk_unlock.mode", "actions.kiosk_unlock.timeout"]), "\(offered[2])")
        // The built-in actions too, configured or not.
        #expect(offered[3].isSuperset(of: ["actions.login.mode", "actions.logout.mode"]), "\(offered[3])")

        // --config on the line names the file in force, whatever the environment says.
        let other = geolocate.home.appendingPathComponent("other.json").path
        #expect(try geolocate.run(["config", "set", "endpoints.fleet.url", "https://example.org/f", "--config", other]).status == 0)
        let flagged = try complete([["geolocate", "config", "get", "--config", other, "endpoints."]], environment: environment)
        #expect(flagged[0].contains("endpoints.fleet.url") && !flagged[0].contains("endpoints.primary.url"), "\(flagged[0])")
    }

    @Test func aBrokenConfigurationGivesTheTableQuietly() throws {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        try Data("{\"endpoints\": ".utf8).write(to: URL(fileURLWithPath: geolocate.configPath))
        let offered = try complete([["geolocate", "config", "get", "endpoints."], ["geolocate", "config", "get", "privacy.prec"]],
                                   environment: ["GEOLOCATE_CONFIG": geolocate.configPath])
        #expect(offered[0].contains("endpoints.NAME.url"), "\(offered[0])")
        #expect(offered[1] == ["privacy.precision"], "\(offered[1])")
    }
}

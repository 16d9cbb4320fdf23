import Foundation
import Testing

/// The command line as a newcomer meets it (issue 16): help that fits a screen, errors that
/// suggest the fix, units that cannot be mistaken, input that is not NMEA, completions.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct CommandLineEndToEndTests {
    let geolocate = GeolocateProcess()

    /// Every command path the parser knows, from its own dump (not from a list kept here).
    func commandPaths() throws -> [[String]] {
        let dump = try geolocate.run(["--experimental-dump-help"])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        var paths: [[String]] = []
        func walk(_ command: [String: Any], _ path: [String]) {
            paths.append(path)
            for sub in command["subcommands"] as? [[String: Any]] ?? [] {
                guard let name = sub["commandName"] as? String, name != "help" else { continue }
                walk(sub, path + [name])
            }
        }
        walk(try #require(root["command"] as? [String: Any]), [])
        return paths
    }

    /// One line on stderr, with the one prefix, and nothing on stdout.
    func expectOneLineError(_ result: GeolocateProcess.Result, status: Int32 = 64, saying words: [String],
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == status, "exit \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, "stdout: \(result.stdout)", sourceLocation: sourceLocation)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("geolocate: ") && !lines[0].hasPrefix("geolocate: geolocate"),
                "\(result.stderr)", sourceLocation: sourceLocation)
        for word in words {
            #expect(result.stderr.contains(word), "expected '\(word)' in: \(result.stderr)", sourceLocation: sourceLocation)
        }
    }

    @Test func everyHelpFitsOneScreenWithExamples() throws {
        let paths = try commandPaths()
        #expect(paths.count >= 15, "\(paths)")
        for path in paths {
            let help = try geolocate.run(path + ["--help"])
            #expect(help.status == 0)
            let lines = help.stdout.filter { $0 == "\n" }.count
            #expect(lines <= 40, "geolocate \(path.joined(separator: " ")) --help is \(lines) lines")
            // The commands a newcomer starts from show how they are used.
            if path.count <= 1 {
                #expect(help.stdout.contains("Examples:\n  geolocate "), "no examples in \(path) --help")
            }
        }
    }

    /// The unit rule is said wherever a duration is taken: every option whose value is a
    /// duration says "with a unit" in its help line.
    @Test func everyDurationOptionSaysItsUnit() throws {
        let dump = try geolocate.run(["--experimental-dump-help"])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        var durations = 0
        func walk(_ command: [String: Any]) {
            for argument in command["arguments"] as? [[String: Any]] ?? [] where argument["valueName"] as? String == "duration" {
                durations += 1
                let help = argument["abstract"] as? String ?? ""
                #expect(help.contains("with a unit"), "\(command["commandName"] ?? "") \(argument["valueName"] ?? ""): \(help)")
            }
            for sub in command["subcommands"] as? [[String: Any]] ?? [] { walk(sub) }
        }
        walk(try #require(root["command"] as? [String: Any]))
        #expect(durations >= 4)
    }

    @Test(arguments: [
        (["triger", "login"], "unknown subcommand 'triger'; did you mean 'trigger'?"),
        (["config", "sett", "permissions", "fine"], "unknown subcommand 'sett'; did you mean 'set'?"),
        (["config", "set", "permision", "fine"], "unknown key 'permision'; did you mean 'permissions'?"),
        (["config", "get", "actions.login.mdoe"], "did you mean 'actions.login.mode'?"),
        (["config", "set", "privacy.precision", "CTY"], "did you mean 'CITY'?"),
        (["config", "set", "endpoints.a.format", "owntrack"], "did you mean 'owntracks'?"),
        (["trigger", "login", "--mode", "force-curent"], "did you mean force-current?"),
        (["config", "set", "defaultInterval", "force-last-know"], "did you mean force-last-known?"),
        // The user's age is kept (SPEC §8), not replaced by last-known:5m.
        (["trigger", "login", "--mode", "last_known:1"], "did you mean last-known:1?"),
        (["trigger", "login", "--mode", "LAST-KNOWN:30"], "did you mean last-known:30?"),
        (["config", "set", "actions.login.mode", "last_known:1"], "did you mean last-known:1?"),
        (["config", "set", "actions.login.mode", "LAST-KNOWN:30"], "did you mean last-known:30?"),
        (["trigger", "login", "--timout", "2s"], "Did you mean '--timeout'?"),
        (["flush", "--endpont"], "Did you mean '--endpoint'?"),
    ])
    func mistakesGetASuggestion(_ arguments: [String], _ suggestion: String) throws {
        let result = try geolocate.run(arguments)
        expectOneLineError(result, saying: [suggestion])
        #expect(result.stderr.count < 200, "a suggestion, not a list: \(result.stderr)")
    }

    @Test(arguments: [
        (["trigger", "login", "--timeout", "1.5"], "say its unit, such as 1.5s"),
        (["trigger", "login", "--timeout", "1.5ms"], "a fraction of a millisecond"),
        (["trigger", "login", "--timeout", "0.0005s"], "a fraction of a millisecond"),
        (["trigger", "login", "--timeout", "5ms"], "under 10ms"),
        (["trigger", "login", "--timeout", "-1"], "negative"),
        (["trigger", "login", "--timeout", "-2s"], "negative"),
        (["track", "--interval", "30"], "say its unit"),
        (["track", "--interval", "-5s"], "negative"),
        (["track", "--duration", "2.5ms"], "a fraction of a millisecond"),
        (["track", "--transmit-interval", "10"], "say its unit"),
        (["config", "set", "spool.maxRetention", "1.5"], "say its unit"),
        (["config", "set", "spool.maxRetention", "30m"], "1h or more"),
        (["config", "set", "triggerActionQueryTimeout", "5"], "from 10 to 600000"),
        (["config", "set", "actions.login.timeout", "5ms"], "from 10ms"),
        (["config", "set", "endpoints.a.timeout", "2ms"], "10ms or more"),
        (["config", "set", "geocoder.minInterval", "-1m"], "negative"),
        (["export", "--format", "gpx", "--since", "-5h"], "an age has no sign"),
    ])
    func mistakenUnitsAreRefused(_ arguments: [String], _ reason: String) throws {
        expectOneLineError(try geolocate.run(arguments + ["--replay-speed", "asap"].filter { _ in arguments[0] == "trigger" }),
                           saying: [reason])
    }

    @Test func unmistakableUnitsAreTaken() throws {
        let log = GeolocateProcess.example("maynooth-drive.nmea")
        for timeout in ["0", "10ms", "1500ms", "2s", "0.5s"] {
            let result = try geolocate.run(["trigger", "login", "--replay", log, "--permission", "fine", "--timeout", timeout])
            #expect(result.status == 0, "--timeout \(timeout): \(result.stderr)")
        }
        for (key, value) in [("spool.maxRetention", "1h"), ("triggerActionQueryTimeout", "1500"), ("actions.login.timeout", "10ms")] {
            let result = try geolocate.run(["config", "set", key, value])
            #expect(result.status == 0, "\(key) \(value): \(result.stderr)")
        }
    }

    // MARK: Input that is not NMEA

    func write(_ name: String, _ bytes: Data) throws -> String {
        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        let url = geolocate.home.appendingPathComponent(name)
        try bytes.write(to: url)
        return url.path
    }

    @Test func inputWithoutNMEAIsRefusedNamingTheFileAndTheLines() throws {
        // 26 lines of text, as /etc/passwd; noise; nothing at all.
        let text = (1...26).map { "user\($0):x:\(1000 + $0):\(1000 + $0):User \($0):/home/user\($0):/bin/sh" }.joined(separator: "\n") + "\n"
        // Bytes of a multiplicative hash of their index: noise, the same on every run.
        let noise = Data((0..<4096).map { (index: UInt64) in UInt8(truncatingIfNeeded: (index &* 0x9E37_79B9_7F4A_7C15) >> 41) })
        let cases: [(String, Data, [String])] = [
            ("passwd", Data(text.utf8), ["26 lines rejected: 26 not NMEA"]),
            ("noise.bin", noise, ["rejected"]),
            ("empty.nmea", Data(), ["no lines"]),
        ]
        for (name, bytes, words) in cases {
            let path = try write(name, bytes)
            for command in [["trigger", "login"], ["trigger", "login", "--mode", "disabled"], ["track", "--stdout", "--no-spool"]] {
                let result = try geolocate.run(command + ["--replay", path, "--permission", "fine"])
                expectOneLineError(result, status: 65, saying: [path, "no NMEA sentence geolocate reads"] + words)
            }
        }
    }

    @Test func rejectedLinesAreCountedByKindWithVerbose() throws {
        let log = try String(contentsOfFile: GeolocateProcess.projectRoot.appendingPathComponent(GeolocateProcess.example("maynooth-drive.nmea")).path, encoding: .utf8)
        var lines = log.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // Three lines of text and two sentences whose checksum is changed, inserted at known places.
        for index in [40, 80, 120] { lines.insert("this is not NMEA \(index)", at: index) }
        for index in [200, 300] {
            let sentence = lines[index]
            let star = try #require(sentence.lastIndex(of: "*"))
            lines[index] = String(sentence[..<star]) + (sentence.hasSuffix("00") ? "*01" : "*00")
            #expect(sentence.hasPrefix("$"))
        }
        let path = try write("spoiled.nmea", Data(lines.joined(separator: "\n").utf8))
        let trigger = try geolocate.run(["trigger", "login", "--replay", path, "--permission", "fine", "--timeout", "10m", "--verbose"])
        #expect(trigger.status == 0, "\(trigger.stderr)")
        let track = try geolocate.run(["track", "--replay", path, "--permission", "fine", "--stdout", "--no-spool", "--verbose"])
        #expect(track.status == 0, "\(track.stderr)")
        #expect(track.stderr.contains("5 lines rejected (3 not NMEA, 2 bad checksum)"), "\(track.stderr)")
        #expect(track.stderr.contains("track: "), "the summary: \(track.stderr)")
    }

    @Test func aMissingReplayIsAnErrorWithoutPermissionToo() throws {
        for permission in ["none", "fine"] {
            for mode in ["disabled", "force-current"] {
                let result = try geolocate.run(["trigger", "login", "--replay", "nosuch.nmea", "--permission", permission, "--mode", mode])
                expectOneLineError(result, status: 66, saying: ["nosuch.nmea"])
            }
            let track = try geolocate.run(["track", "--replay", "nosuch.nmea", "--permission", permission])
            expectOneLineError(track, status: 66, saying: ["nosuch.nmea"])
        }
    }

    // MARK: Completions

    /// The bash script the parser writes, asked as bash asks it, with this binary on PATH.
    @Test func completionsKnowTheValues() throws {
        let script = try geolocate.run(["--generate-completion-script", "bash"])
        #expect(script.status == 0)
        try FileManager.default.createDirectory(at: geolocate.home.appendingPathComponent("bin"), withIntermediateDirectories: true)
        let link = geolocate.home.appendingPathComponent("bin/geolocate")
        try? FileManager.default.removeItem(at: link)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: geolocate.executable)
        let scriptPath = try write("geolocate.bash", Data(script.stdout.utf8))
        let probe = """
            source '\(scriptPath)'
            complete_words() {
              COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
              _geolocate geolocate "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
              printf '%s ' "${COMPREPLY[@]}"; echo
            }
            complete_words geolocate trigger login --mode ''
            complete_words geolocate trigger login --format ''
            complete_words geolocate track --permission ''
            complete_words geolocate config set priv
            complete_words geolocate config set privacy.precision ''
            complete_words geolocate config set visits.enabled ''
            complete_words geolocate trigger login --replay '\(GeolocateProcess.projectRoot.path)/Examples/nmea/'
            complete_words geolocate tr
            """
        let bash = try Spawn.run(["/bin/bash", "-c", probe], environment: ["PATH": link.deletingLastPathComponent().path + ":/usr/bin:/bin"],
                                 directory: GeolocateProcess.projectRoot.path)
        let output = String(decoding: bash.stdout, as: UTF8.self)
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map { Set($0.split(separator: " ").map(String.init)) }
        try #require(lines.count >= 8, "\(output)")
        #expect(lines[0].isSuperset(of: ["default", "disabled", "force-current", "force-last-known"]), "\(lines[0])")
        #expect(lines[1] == ["mosaic", "veridium", "openlocate", "owntracks", "osmand", "jwt"], "\(lines[1])")
        #expect(lines[2] == ["fine", "coarse", "none"], "\(lines[2])")
        #expect(lines[3] == ["privacy.precision", "privacy.accuracyThreshold", "privacy.countryCodeReplacement", "privacy.locationAttributeFilter"], "\(lines[3])")
        #expect(lines[4] == ["NONE", "COUNTRY", "DISTRICT", "CITY", "STREET", "STREET_NUMBER", "GPS_LOCATION"], "\(lines[4])")
        #expect(lines[5] == ["true", "false"], "\(lines[5])")
        #expect(lines[6].contains { $0.hasSuffix("Examples/nmea/maynooth-drive.nmea") }, "\(lines[6])")
        #expect(lines[7] == ["trigger", "track"], "\(lines[7])")
    }
}


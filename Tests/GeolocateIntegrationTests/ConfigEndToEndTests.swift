import Foundation
import GeolocateConfig
import GeolocateCore
import GeolocateDelivery
import GeolocateModel
import GeolocateSpool
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct ConfigEndToEndTests {
    let geolocate = GeolocateProcess()

    /// A group of keys (an endpoint, an action, `privacy`) is unset whole; a key that names
    /// no group is still refused.
    /// After `--` every word is a value, a negative number too: a user name may be -5, and a
    /// negative duration is refused for what it is, not as a missing value.
    @Test func valuesAfterTheDoubleDashAreValues() throws {
        let set = try geolocate.run(["config", "set", "endpoints.c.username", "--", "-5"])
        #expect(set.status == 0, "\(set.stderr)")
        #expect(try geolocate.run(["config", "get", "endpoints.c.username"]).stdout == "-5\n")
        let negative = try geolocate.run(["config", "set", "endpoints.c.timeout", "--", "-1m"])
        #expect(negative.status == 64)
        #expect(negative.stderr.contains("invalid duration '-1m' (use a duration "), "\(negative.stderr)")
        // A range that starts above 0 is told as it is, never "use 0 or more".
        let lifetime = try geolocate.run(["config", "set", "signing.tokenLifetime", "--", "-1s"])
        #expect(lifetime.status == 64 && lifetime.stderr.contains("(use a duration from 10s to 1h"), "\(lifetime.stderr)")
    }

    /// A header value with a stray CR, or a header name that is no token, is refused without
    /// echoing the secret; get redacts as show does.
    @Test func headersAreCheckedAndSecretsRedacted() throws {
        let crlf = try geolocate.run(["config", "set", "endpoints.a.headers.Authorization", "Bearer T0KEN\r"])
        #expect(crlf.status == 64 && crlf.stderr.contains("CR") && !crlf.stderr.contains("T0KEN"), "\(crlf.stderr)")
        let name = try geolocate.run(["config", "set", "endpoints.a.headers.Bad Name", "x"])
        #expect(name.status == 64, "\(name.stderr)")

        #expect(try geolocate.run(["config", "set", "endpoints.a.url", "https://bob:PW@example.org/in?token=TK"]).status == 0)
        #expect(try geolocate.run(["config", "set", "endpoints.a.headers.Authorization", "Bearer T0KEN"]).status == 0)
        for key in ["endpoints", "endpoints.a", "endpoints.a.url", "endpoints.a.headers.Authorization"] {
            let got = try geolocate.run(["config", "get", key])
            #expect(got.status == 0 && !got.stdout.contains("T0KEN") && !got.stdout.contains("PW@") && !got.stdout.contains("TK"), "\(got.stdout)")
        }
        #expect(try geolocate.run(["config", "get", "--show-secrets", "endpoints.a.headers.Authorization"]).stdout == "Bearer T0KEN\n")

        // Reserved headers, names commands could not use, ports NIO would trap on, control
        // characters in a URL: all refused at set (before: accepted, then 132 at flush).
        for refused in [["endpoints.a.headers.Idempotency-Key", "fixed"], ["endpoints.a.headers.host", "evil.example"],
                        ["endpoints.a.url", "http://127.0.0.1:99999/"], ["endpoints.a.url", "http://127.0.0.1:65536/"],
                        ["endpoints.a.url", "http://h/a\r\nX-Injected: yes"], ["geocoder.url", "http://127.0.0.1:0/"],
                        ["endpoints.a b.url", "http://h/"], ["endpoints.zz\u{1B}[31m.url", "http://h/"],
                        ["actions.lo\ngin.mode", "force-current"], ["actions.login.timeout", "700s"]] {
            let result = try geolocate.run(["config", "set"] + refused)
            #expect(result.status == 64, "\(refused): \(result.stderr)")
        }
        for timeout in ["600001ms", "100d"] {
            let flag = try geolocate.run(["trigger", "login", "--timeout", timeout])
            #expect(flag.status == 64 && flag.stderr.contains("10m"), "--timeout \(timeout): \(flag.stderr)")
        }
        // Header names are case-insensitive: a second spelling replaces the first.
        #expect(try geolocate.run(["config", "set", "endpoints.h.url", "https://example.org/in"]).status == 0)
        #expect(try geolocate.run(["config", "set", "endpoints.h.headers.Authorization", "Bearer ONE"]).status == 0)
        #expect(try geolocate.run(["config", "set", "endpoints.h.headers.authorization", "Bearer TWO"]).status == 0)
        let headers = try geolocate.run(["config", "get", "--show-secrets", "endpoints.h.headers"]).stdout
        #expect(headers.contains("TWO") && !headers.contains("ONE") && !headers.contains("\"Authorization\""), "\(headers)")
        // Fragments and OAuth-style parameters are secrets too.
        #expect(try geolocate.run(["config", "set", "endpoints.f.url", "https://example.org/in?jwt=J1&code=C1#access_token=F1"]).status == 0)
        let fragment = try geolocate.run(["config", "get", "endpoints.f.url"])
        #expect(!fragment.stdout.contains("J1") && !fragment.stdout.contains("C1") && !fragment.stdout.contains("F1"), "\(fragment.stdout)")

        // A URL refused for its scheme is quoted without its secrets too.
        for refused in [["config", "set", "endpoints.b.url", "ftp://bob:PW@example.org/in?token=TK"],
                        ["config", "set", "geocoder.url", "ftp://bob:PW@example.org/?api_key=TK"],
                        ["trigger", "login", "--post", "ftp://bob:PW@example.org/in?token=TK"]] {
            let result = try geolocate.run(refused)
            #expect(result.status == 64 && result.stderr.contains("invalid URL") && !result.stderr.contains("PW") && !result.stderr.contains("TK"),
                    "\(refused): \(result.stderr)")
        }

        try Data(#"{"endpoints":{"a":{"url":"https://example.org/","headers":{"X-Key":"v\r\n"}}}}"#.utf8)
            .write(to: URL(fileURLWithPath: geolocate.configPath))
        let validate = try geolocate.run(["config", "validate"])
        #expect(validate.status == 78 && validate.stderr.contains("X-Key"), "\(validate.stderr)")
    }

    /// Keys are dotted, so a dot in an endpoint, action or header name made a key no command
    /// could reach; before, such names passed in a file and in `trigger`, and `set` said
    /// "unknown key". One rule now: no dots in names, said wherever a name is given.
    @Test func namesWithDotsAreRefusedEverywhere() throws {
        let trigger = try geolocate.run(["trigger", "check.out", "--replay", GeolocateProcess.example("kiosk-gnss.nmea")])
        #expect(trigger.status == 64 && trigger.stdout.isEmpty, "\(trigger.stderr)")
        #expect(trigger.stderr.contains("invalid action name 'check.out'") && trigger.stderr.contains("no dots"), "\(trigger.stderr)")
        for (key, value, message) in [("endpoints.eu.west.url", "http://127.0.0.1:9/in", "'eu.west' is not an endpoint name"),
                                      ("actions.check.out.mode", "disabled", "'check.out' is not an action name"),
                                      ("endpoints.p.headers.X.Api.Key", "k", "header name 'X.Api.Key' has a dot")] {
            let set = try geolocate.run(["config", "set", key, value])
            #expect(set.status == 64 && set.stderr.contains(message) && set.stderr.split(separator: "\n").count == 1, "\(key): \(set.stderr)")
            #expect(try geolocate.run(["config", "get", key]).stderr.contains(message))
        }
        #expect(!FileManager.default.fileExists(atPath: geolocate.configPath))

        try FileManager.default.createDirectory(at: geolocate.home, withIntermediateDirectories: true)
        for (content, message) in [
            ("{\"endpoints\": {\n  \"eu.west\": {\"url\": \"http://127.0.0.1:9/in\"}}}\n", ":2: endpoints.eu.west.url: 'eu.west' is not an endpoint name"),
            ("{\"actions\": {\"check.out\": {\"mode\": \"disabled\"}}}\n", ":1: actions.check.out.mode: 'check.out' is not an action name"),
            ("{\"endpoints\": {\"p\": {\"url\": \"http://127.0.0.1:9/in\",\n \"headers\": {\"X.Api.Key\": \"k\"}}}}\n", ":2: endpoints.p.headers.X.Api.Key: header name 'X.Api.Key' has a dot"),
        ] {
            try content.write(toFile: geolocate.configPath, atomically: true, encoding: .utf8)
            for arguments in [["config", "validate"], ["flush"]] {
                let result = try geolocate.run(arguments)
                #expect(result.status == 78 && result.stdout.isEmpty, "\(arguments): \(result.stderr)")
                #expect(result.stderr.contains(geolocate.configPath + message), "\(result.stderr)")
            }
        }
    }

    /// Symlinks planted under the temporary names earlier versions used (`.NAME.PID.tmp`, for
    /// the next 3000 process ids) are never written through: the victim keeps its content and mode.
    @Test func plantedSymlinksAreNeverFollowed() throws {
        let directory = geolocate.home.path
        try FileManager.default.createDirectory(atPath: geolocate.stateDirectory, withIntermediateDirectories: true)
        let victim = geolocate.home.appendingPathComponent("victim").path
        try Data("precious\n".utf8).write(to: URL(fileURLWithPath: victim))
        chmod(victim, 0o644)
        let lastPID = Int(try String(contentsOfFile: "/proc/sys/kernel/ns_last_pid", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        for pid in lastPID + 1...lastPID + 3000 {
            symlink(victim, directory + "/.config.json.\(pid).tmp")
            symlink(victim, geolocate.stateDirectory + "/.last-known-replay.json.\(pid).tmp")
        }
        #expect(try geolocate.run(["config", "set", "permissions", "fine"]).status == 0)
        #expect(try geolocate.run(["trigger", "login", "--replay", GeolocateProcess.example("kiosk-gnss.nmea")]).status == 0)
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious\n")
        #expect(try FileManager.default.attributesOfItem(atPath: victim)[.posixPermissions] as? Int == 0o644)
        #expect(FileManager.default.fileExists(atPath: geolocate.stateDirectory + "/last-known-replay.json"))
    }

    /// The one unit rule through the binary: every duration flag refuses a bare number with
    /// both readings offered, and takes it with a unit.
    @Test(arguments: [["trigger", "login", "--timeout"], ["track", "--stdout", "--no-spool", "--interval"],
                      ["track", "--stdout", "--no-spool", "--duration"], ["track", "--stdout", "--no-spool", "--transmit-interval"]])
    func aBareNumberOnADurationFlagIsRefused(_ command: [String]) throws {
        let flag = command.last!
        let bare = try geolocate.run(command + ["90"])
        #expect(bare.status == 64 && bare.stdout.isEmpty, "\(bare.stderr)")
        #expect(bare.stderr == "geolocate: \(flag): invalid duration '90': say its unit, such as 90ms or 90s (see 'geolocate \(command[0]) --help')\n",
                "\(bare.stderr)")
        let kiosk = GeolocateProcess.example("kiosk-gnss.nmea")
        let withUnit = try geolocate.run(command + ["90s", "--replay", kiosk, "--permission", "fine"] + (command[0] == "track" ? ["--count", "1"] : []))
        #expect(withUnit.status == 0, "\(withUnit.stderr)")
    }

    /// Found by the hostile pass: a source's credentials never reach a message, a host with
    /// control characters is refused, and `--now` stops at the year 9999.
    @Test func sourceSecretsAndAbsurdTimesAreRefusedCleanly() throws {
        for command in [["config", "set", "source", "gpsd://u:SEKRIT@h:99999"], ["trigger", "login", "--source", "gpsd://u:SEKRIT@h:0"]] {
            let result = try geolocate.run(command)
            #expect(result.status == 64 && !result.stderr.contains("SEKRIT") && result.stderr.contains("***"), "\(command): \(result.stderr)")
        }
        for host in ["gpsd://h\n:1", "gpsd://h h:1", "gpsd://h\t:1"] {
            #expect(try geolocate.run(["config", "set", "source", host]).status == 64, "\(host)")
        }
        let late = try geolocate.run(["trigger", "login", "--now", "9223372036854775807"])
        #expect(late.status == 64 && late.stdout.isEmpty && late.stderr.contains("--now"), "\(late.stderr)")
        let latest = try geolocate.run(["trigger", "login", "--now", "253402300799999", "--mode", "disabled"])
        #expect(latest.status == 0, "\(latest.stderr)")
    }
}

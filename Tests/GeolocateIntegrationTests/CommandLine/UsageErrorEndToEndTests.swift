import Foundation
import Testing

/// Each kind of usage error, its whole stderr pinned: one line in our words, made from the
/// values of swift-argument-parser's error (flag, value, our reason) rather than from its
/// English (issue 28). A version of the parser that stores them otherwise fails here.
@Suite(.tags(.integration), .timeLimit(.minutes(10))) struct UsageErrorEndToEndTests {
    let geolocate = GeolocateProcess()

    @Test(arguments: [
        // A value our parsing function refused: the flag, then its reason.
        (["trigger", "login", "--timeout", "1.5"],
         "--timeout: invalid duration '1.5': say its unit, such as 1.5s (see 'geolocate trigger --help')"),
        (["trigger", "login", "--timeout=1.5"],
         "--timeout: invalid duration '1.5': say its unit, such as 1.5s (see 'geolocate trigger --help')"),
        // A reason that names its flag already is not prefixed again.
        (["trigger", "login", "--timeout", "5ms"],
         "--timeout 5ms is under 10ms, too short for any fix; did you mean 5s? (see 'geolocate trigger --help')"),
        (["track", "--duration", "0"], "--duration must be above 0 (such as 30s or 10m) (see 'geolocate track --help')"),
        // A short name, as typed.
        (["status", "-w", "0"], "-w: --warning must be above 0 (such as 30s or 10m) (see 'geolocate status --help')"),
        // A value outside an enumeration: its values, from the parser's description of the command.
        (["trigger", "login", "--format", "xml"],
         "--format: 'xml' is not one of mosaic, veridium, openlocate, owntracks, osmand, jwt (see 'geolocate trigger --help')"),
        (["track", "--format", "owntrack"],
         "--format: 'owntrack' is not one of mosaic, veridium, openlocate, owntracks, osmand; did you mean 'owntracks'? (see 'geolocate track --help')"),
        (["trigger", "login", "--permission", "fien"],
         "--permission: 'fien' is not one of fine, coarse, none; did you mean 'fine'? (see 'geolocate trigger --help')"),
        // validate()'s ValidationError, as written.
        (["track", "--no-spool"], "--no-spool without --stdout would keep nothing; add --stdout (see 'geolocate track --help')"),
        // The parser's own sentences, which the exact pin of its version holds.
        (["trigger", "login", "--timout", "2s"], "Unknown option '--timout'. Did you mean '--timeout'? (see 'geolocate trigger --help')"),
        (["trigger", "login", "--timeout"], "Missing value for '--timeout <duration>' (see 'geolocate trigger --help')"),
        (["config", "set", "permissions"], "Missing expected argument '<value>' (see 'geolocate config set --help')"),
        // Ours, before the parser: a word where a subcommand belongs.
        (["config", "sett"], "unknown subcommand 'sett'; did you mean 'set'? (see 'geolocate config --help')"),
        // A flag that takes a number takes a negative one, for its own check to refuse.
        (["status", "-w", "-1h"], "-w: --warning must be above 0 (such as 30s or 10m) (see 'geolocate status --help')"),
        (["track", "--duration", "-5s"], "--duration must be above 0 (such as 30s or 10m) (see 'geolocate track --help')"),
        (["track", "--accuracy", "-10m"], "--accuracy: '-10m' is not one of best, 10m, 100m, 1km, 3km; did you mean '10m'? (see 'geolocate track --help')"),
        (["export", "--format", "csv", "--since", "-5h"],
         "--since: invalid time '-5h': an age has no sign (5h is 5h ago) (see 'geolocate export --help')"),
        // Format characters are escaped too: a bidi override must not make a value read backwards.
        (["trigger", "login", "--timeout", "5\u{202E}s"],
         "--timeout: invalid duration '5\\u{202E}s' (use a number with ms, s, m, h or d up to 100 years, such as 1500ms, 2s, 30m, 2h, 10d) (see 'geolocate trigger --help')"),
        (["trigger", "login", "--timeout", "-5s"],
         "--timeout: invalid duration '-5s': it is negative (use 0 or more, such as 1500ms or 2s) (see 'geolocate trigger --help')"),
        (["track", "--count", "abc"], "--count: 'abc' is not a value it takes (see 'geolocate track --help')"),
        // The flag the refused value was given to, not another flag with the same value.
        (["track", "--count", "0", "--duration", "0"], "--duration must be above 0 (such as 30s or 10m) (see 'geolocate track --help')"),
        (["status", "--warning", "1h", "-c", "1.5"],
         "-c: invalid duration '1.5': say its unit, such as 1.5s (see 'geolocate status --help')"),
        // An empty file name is a usage error, not a file that cannot be written (73).
        (["export", "--format", "csv", "--output", ""], "--output needs a file name (leave it out to write to stdout) (see 'geolocate export --help')"),
        // A positional value outside its enumeration.
        (["state", "forget", "prev"], "'prev' is not one of previous (see 'geolocate state forget --help')"),
        // config set's value is one word, whatever it starts with (CommandLineEndToEndTests: -1m).
        (["config", "set", "permissions", "fine", "coarse"], "1 unexpected argument: 'coarse' (see 'geolocate config set --help')"),
        (["config", "set", "permissions", "fine", "--confg", "x"],
         "Unknown option '--confg'; did you mean '--config'? (see 'geolocate config set --help')"),
    ])
    func aUsageErrorIsOneLineOfOurs(_ arguments: [String], _ message: String) throws {
        let result = try geolocate.run(arguments)
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(result.stderr == "geolocate: \(message)\n")
    }

    /// What the user typed stays on one line: a newline or an escape in a refused value is
    /// written escaped, not obeyed.
    @Test func aRefusedValueCannotSplitTheLine() throws {
        let result = try geolocate.run(["trigger", "login", "--format", "x\ngeolocate: forged\u{1B}[2J"])
        #expect(result.status == 64)
        #expect(result.stderr == "geolocate: --format: 'x\\ngeolocate: forged\\u{1B}[2J' is not one of mosaic, veridium, openlocate, owntracks, osmand, jwt (see 'geolocate trigger --help')\n")
    }

    /// A URL refused for `--post` is quoted without its password.
    @Test func aRefusedURLKeepsItsSecret() throws {
        let result = try geolocate.run(["trigger", "login", "--post", "ftp://user:hunter2@example.com/in"])
        #expect(result.status == 64)
        #expect(result.stderr == "geolocate: --post: invalid URL 'ftp://***:***@example.com/in' (use http://HOST[:PORT]/PATH or https://...) (see 'geolocate trigger --help')\n")
    }
}

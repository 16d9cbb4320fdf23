import Foundation
@testable import GeolocateCore
@testable import GeolocateModel
import Testing

/// Messages on one line, and the spans and window bounds they quote.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ErrorTextTests {
    /// Control characters, bidi overrides and line separators are written escaped, so a value
    /// quoted in a message can neither split it nor read backwards (a hostile pass: U+202E
    /// was printed as it was).
    @Test(arguments: [
        ("plain text, café", "plain text, café"),
        ("a\nb\rc\td", "a\\nb\\rc\\td"),
        ("\u{1B}[2J", "\\u{1B}[2J"),
        ("5\u{202E}s", "5\\u{202E}s"),
        ("x\u{200B}y", "x\\u{200B}y"),
        ("line\u{2028}two\u{2029}", "line\\u{2028}two\\u{2029}"),
    ])
    func oneLineEscapesWhatCouldSplitOrTurnALine(_ text: String, _ expected: String) {
        #expect(ErrorText.oneLine(text) == expected)
    }

    /// The units spans are converted to, against the seconds and attoseconds written out.
    @Test func durationsInWholeUnitsRoundDown() {
        let span = Duration(secondsComponent: 2, attosecondsComponent: 345_678_900_000_000_000)
        #expect(span.milliseconds == 2_345)
        #expect(span.microseconds == 2_345_678)
        #expect(span.seconds == 2.345678)
        #expect(Duration.milliseconds(5).microseconds == 5_000)
        #expect(Duration.zero.seconds == 0)
    }

    /// `export --since`/`--until`: an age is before now, digits are epoch milliseconds, and an
    /// age with a sign is refused as such (checked where the flag is read since a hostile pass).
    @Test func windowBoundsAreAgesEpochsOrTimes() throws {
        let now: Int64 = 1_795_000_000_000
        #expect(try Exporter.time("5h", now: now) == now - 5 * 3_600_000)
        #expect(try Exporter.time("0", now: now) == 0)
        #expect(try Exporter.time("2026-11-21T14:30:00Z", now: now) == 1_795_271_400_000)
        #expect {
            try Exporter.time("-5h", now: now)
        } throws: { ($0 as? GeolocateError)?.description == "invalid time '-5h': an age has no sign (5h is 5h ago)" }
        #expect(throws: GeolocateError.self) { try Exporter.time("yesterday", now: now) }
    }
}

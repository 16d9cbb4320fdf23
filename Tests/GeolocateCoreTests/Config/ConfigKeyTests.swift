import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Testing

/// The table of settings: each key's default is a value it accepts, and what `config set`
/// stores is what the file check accepts and the typed view reads back.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct ConfigKeyTests {
    @Test(arguments: ConfigKey.all.map(\.key))
    func theBuiltInValueIsValidAndRoundTrips(_ key: String) throws {
        let setting = try #require(ConfigKey.all.first { $0.key == key })
        guard let builtIn = setting.builtIn("login") else { return }
        #expect(setting.check(builtIn) == nil, "\(key): its default \(builtIn) is refused")
        // The default as help prints it is a value `config set` takes, and stores the same.
        if case .string(let text) = builtIn, text != "default" {
            #expect(try setting.parse(text) == builtIn, "\(key): \(text)")
        }
    }

    @Test func keysAreUniqueAndEveryKeyHasHelp() {
        #expect(Set(ConfigKey.all.map(\.key)).count == ConfigKey.all.count)
        for setting in ConfigKey.all {
            #expect(!setting.help.isEmpty && !setting.valid.isEmpty, "\(setting.key)")
            #expect(ConfigKey.summary.contains("  \(setting.key): "), "\(setting.key) missing from config --help")
            #expect(ConfigKey.markdownTable.contains("| `\(setting.key)` |"), "\(setting.key) missing from the table")
        }
    }

    /// The one unit rule: a bare number is refused for every duration key, said with its unit
    /// it is taken; in the file a number is milliseconds.
    @Test(arguments: ["currentMaxAge", "lastKnownMaxAge", "actions.NAME.timeout", "actions.NAME.lastKnownMaxAge",
                      "spool.maxRetention", "visits.minDuration", "endpoints.NAME.timeout", "transmissionInterval",
                      "geocoder.minInterval", "geocoder.timeout"])
    func aBareNumberIsNoDuration(_ key: String) throws {
        let setting = try #require(ConfigKey.all.first { $0.key == key })
        #expect(throws: GeolocateError.usage("invalid duration '90': say its unit, such as 90ms or 90s")) { try setting.parse("90") }
        // spool.maxRetention takes an hour at least: a shorter one is a unit mistaken.
        let (long, short) = key == "spool.maxRetention" ? ("90h", "1.5h") : ("90s", "1.5s")
        #expect(try setting.parse(long) == .string(long))
        #expect(try setting.parse(short) == .string(key == "spool.maxRetention" ? "90m" : "1500ms"))
        #expect(setting.check(.number(key == "spool.maxRetention" ? 90 * 3_600_000 : 90_000)) == nil)
        #expect(setting.check(.number(0.5)) != nil)
        #expect(setting.check(.string("90")) != nil, "a bare number as text in the file needs its unit too")
    }

    @Test func theQueryTimeoutKeyIsMilliseconds() throws {
        let setting = try #require(ConfigKey.all.first { $0.key == "triggerActionQueryTimeout" })
        #expect(try setting.parse("2500") == .number(2500))
        #expect(try setting.parse("2.5s") == .number(2500))
        #expect(throws: GeolocateError.self) { try setting.parse("2.5") }
        #expect(throws: GeolocateError.self) { try setting.parse("600001") }
    }

    @Test func typedValuesWriteWhatTheFileReadsBack() throws {
        var settings = Settings()
        settings[ConfigKey.transmissionInterval] = nil
        settings[ConfigKey.actionTimeout, name: "login"] = 750
        settings[ConfigKey.privacyLocationAttributeFilter] = [.city, .latitude, .longitude]
        settings.fields.speed = false
        let reread = try ConfigStore.document(parsing: Data(settings.document.prettyPrinted().utf8), file: "test")
        #expect(reread[["transmissionInterval"]] == .string("off"))
        #expect(Settings(reread) == settings)
        #expect(Settings(reread)[ConfigKey.actionTimeout, name: "login"] == 750)
        #expect(Settings(reread)[ConfigKey.actionTimeout, name: "logout"] == nil)
        #expect(!Settings(reread).fields.speed && Settings(reread).fields.course)
        #expect(Settings(reread).privacy.attributes == [.city, .latitude, .longitude])
    }

    /// Range texts agree with C's `%.8g` (the formatter they replace), except that a whole
    /// number keeps its digits where `%.8g` would switch to an exponent (`3e+08`).
    @Test func shortTextIsPrintfsEightSignificantDigits() {
        var values: [Double] = [0.01, 0.1, 0.5, 2, 2.5, 12.345678912, 1e-5, 3.3e-7, 123_456.789, 99_999_999.4, 0.1 + 0.2,
                                -4.25, 1 / 3, 2.0 / 3, 6_371_008.8, 7.777777777, 1e7 + 0.5]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let digits = Double.random(in: 0..<12, using: &generator)
            values.append(Double.random(in: 1..<10, using: &generator) * pow(10, digits.rounded(.down) - 6))
        }
        for value in values {
            #expect(value.shortText == String(format: "%.8g", value), "\(value)")
        }
        #expect((300_000_000 as Double).shortText == "300000000" && (20_000_000 as Double).shortText == "20000000")
        #expect((0 as Double).shortText == "0")
    }
}

import Foundation
@testable import GeolocateConfig
@testable import GeolocateCore
@testable import GeolocateDelivery
@testable import GeolocateModel
@testable import GeolocateSpool
import Testing

/// The zones file's JSON reader against Foundation's `JSONSerialization` as the oracle: the
/// same values for what both accept, a refusal for what RFC 8259 does not allow.
@Suite(.tags(.unit), .timeLimit(.minutes(5))) struct JSONScannerTests {
    /// The scanner's value in the shape `JSONSerialization` gives, for comparison.
    static func foundationShape(_ node: JSONNode) -> NSObject {
        switch node {
        case .null: return NSNull()
        case .bool(let value): return NSNumber(value: value)
        case .number(let value): return NSNumber(value: value)
        case .string(let text): return text as NSString
        case .array(let items): return items.map(foundationShape) as NSArray
        case .object(let members):
            var dictionary: [String: NSObject] = [:]
            for (name, value) in members { dictionary[name] = foundationShape(value) }
            return dictionary as NSDictionary
        }
    }

    @Test(arguments: [
        #"{"type":"FeatureCollection","features":[]}"#,
        #"  [1, -0, 0.5, -12.25e3, 1E-7, 6.02e+23, 179.99999999]  "#,
        #"{"a":"\"\\\/\b\f\n\r\t","b":"\u00e9\u4e2d\ud83d\ude00","c":[true,false,null],"d":{}}"#,
        #"{"name":"Caf\u00e9 \u2014 ünïcödé","n":[[[[0,1],[2,3]]]]}"#,
        "\"text\"",
        "123",
    ])
    func agreesWithFoundation(_ text: String) throws {
        let ours = try JSONScanner.parse(Array(text.utf8))
        let theirs = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]) as! NSObject
        #expect(Self.foundationShape(ours).isEqual(theirs), "\(text)")
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "+1", "NaN", "Infinity", "[1 2]", "{\"a\" 1}", "{a:1}",
        "\"open", "\"tab\there\"", "\"bad \\x escape\"", "\"\\u12\"", "tru", "nul", "[1] x", "{\"a\":1}}",
    ])
    func refusesWhatRFC8259DoesNot(_ text: String) {
        #expect(throws: JSONScanner.Malformed.self, "\(text)") { try JSONScanner.parse(Array(text.utf8)) }
    }

    /// A repeated name is refused at any depth, with the path down to it and the line of the
    /// second copy; an escaped spelling of a name is the same name.
    @Test(arguments: [
        (#"{"dup":1,"dup":2}"#, "dup", 1),
        ("{\n \"privacy\": {\"precision\": \"GPS_LOCATION\",\n  \"precision\": \"CITY\"}}", "privacy.precision", 3),
        (#"{"features":[{"type":"Feature"},{"properties":{"effect":"deny","effect":"allow"}}]}"#, "features.1.properties.effect", 1),
        (#"{"a":1,"\u0061":2}"#, "a", 1),
        ("{" + (0..<40).map { "\"k\($0)\":\($0)," }.joined() + #""k7":0}"#, "k7", 1),
    ])
    func refusesARepeatedName(_ text: String, path: String, line: Int) {
        do {
            _ = try JSONScanner.parse(Array(text.utf8))
            Issue.record("accepted \(text)")
        } catch let duplicate as JSONScanner.DuplicateKey {
            #expect(duplicate.dottedPath == path)
            #expect(duplicate.line(in: Array(text.utf8)) == line)
        } catch {
            Issue.record("\(error) for \(text)")
        }
    }

    @Test func deepNestingIsRefusedNotAStackOverflow() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: JSONScanner.Malformed.self) { try JSONScanner.parse(Array(deep.utf8)) }
        let fine = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        #expect((try? JSONScanner.parse(Array(fine.utf8))) != nil)
    }
}

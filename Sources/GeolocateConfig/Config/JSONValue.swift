import Foundation
import GeolocateModel

/// A JSON document as a value, so the configuration can be edited by dotted key and written back.
package indirect enum JSONValue: Sendable, Equatable, Codable {
    case object([String: JSONValue])
    case array([JSONValue])
    case string(String)
    case number(Double)
    case bool(Bool)
    case null

    /// Parses a JSON document with `JSONScanner`, geolocate's one reader of others' JSON.
    /// - Throws: `JSONScanner.Malformed` or `.DuplicateKey`, with where in `data`.
    package init(parsing data: Data) throws {
        self.init(try JSONScanner.parse([UInt8](data)))
    }

    private init(_ node: JSONNode) {
        switch node {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .number(let value): self = .number(value)
        case .string(let text): self = .string(text)
        case .array(let items): self = .array(items.map(JSONValue.init))
        case .object(let members): self = .object(Dictionary(members.map { ($0.0, JSONValue($0.1)) }, uniquingKeysWith: { first, _ in first }))
        }
    }

    /// Pretty-printed JSON with sorted keys, ending in a newline.
    package func prettyPrinted() -> String {
        switch self {
        case .string(let string): return string
        // Foundation's pretty printer writes an empty array or object over three lines.
        case .array(let items) where items.isEmpty: return "[]"
        case .object(let members) where members.isEmpty: return "{}"
        case .number, .bool, .null, .array, .object: break
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(self)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// The items of an array of strings; `nil` for anything else.
    package var strings: [String]? {
        guard case .array(let items) = self else { return nil }
        let strings = items.compactMap { item -> String? in if case .string(let text) = item { text } else { nil } }
        return strings.count == items.count ? strings : nil
    }

    /// The value at a dotted path, if present.
    package subscript(path: [String]) -> JSONValue? {
        guard let first = path.first else { return self }
        guard case .object(let dictionary) = self, let child = dictionary[first] else { return nil }
        return child[Array(path.dropFirst())]
    }

    /// Sets (or with `nil` removes) the value at a path, creating objects on the way and
    /// removing objects left empty.
    package mutating func set(_ path: [String], to value: JSONValue?) {
        guard let first = path.first else {
            if let value { self = value }
            return
        }
        var dictionary: [String: JSONValue]
        if case .object(let existing) = self { dictionary = existing } else { dictionary = [:] }
        if path.count == 1 {
            dictionary[first] = value
        } else {
            var child = dictionary[first] ?? .object([:])
            child.set(Array(path.dropFirst()), to: value)
            if case .object(let remaining) = child, remaining.isEmpty { dictionary[first] = nil } else { dictionary[first] = child }
        }
        self = .object(dictionary)
    }

    /// Every leaf (non-object value) with its path.
    package func leaves(prefix: [String] = []) -> [([String], JSONValue)] {
        guard case .object(let dictionary) = self else { return [(prefix, self)] }
        return dictionary.sorted { $0.key < $1.key }.flatMap { $0.value.leaves(prefix: prefix + [$0.key]) }
    }

    package init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    package func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .object(let dictionary): try container.encode(dictionary)
        case .array(let array): try container.encode(array)
        case .string(let string): try container.encode(string)
        case .number(let number):
            if number == number.rounded(), abs(number) < 1e15 { try container.encode(Int64(number)) } else { try container.encode(number) }
        case .bool(let bool): try container.encode(bool)
        case .null: try container.encodeNil()
        }
    }
}

/// A JSON value as `JSONScanner` reads it.
package enum JSONNode: Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONNode])
    /// Members in file order; names are unique (`JSONScanner` refuses a repeated one).
    case object([(String, JSONNode)])

    /// The value of member `name` of an object; `nil` otherwise.
    package func member(_ name: String) -> JSONNode? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == name }?.1
    }

    package var isNull: Bool { if case .null = self { return true } else { return false } }
    package var bool: Bool? { if case .bool(let value) = self { return value } else { return nil } }
    package var string: String? { if case .string(let text) = self { return text } else { return nil } }
    package var number: Double? { if case .number(let value) = self { return value } else { return nil } }
    package var array: [JSONNode]? { if case .array(let items) = self { return items } else { return nil } }
}

/// A strict RFC 8259 JSON reader over bytes: geolocate's one reader of JSON others wrote
/// (gpsd's reports, `policy.zones` files, the configuration file's syntax and duplicate-key
/// check); its own state files are read back with Foundation's `JSONDecoder` into their types.
///
/// A name repeated in one object is refused (`DuplicateKey`): readers disagree on which copy
/// wins (Foundation keeps the first, jq and Python the last), and a zone's effect or a privacy
/// setting must not mean one thing to geolocate and another to the tool that checked it.
///
/// Written for speed: Foundation's readers cost 1.5 to 2.5 ms for a zone of 1,000 vertices
/// (a generic decoding step, or a dynamic cast, per number), over the 1 ms a `trigger --policy`
/// may add. The zones fuzz target and the geometry test (which reads the same file with
/// Python's `json`) check it.
package struct JSONScanner {
    package struct Malformed: Error {
        /// Where reading stopped, in bytes from the start.
        package var offset: Int

        /// The line of `offset` in `bytes`, from 1.
        package func line(in bytes: some Collection<UInt8>) -> Int {
            bytes.prefix(offset).reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
        }

        /// The column of `offset` in its line, in bytes from 1.
        package func column(in bytes: some Collection<UInt8>) -> Int {
            (bytes.prefix(offset).split(separator: 0x0A, omittingEmptySubsequences: false).last?.count ?? 0) + 1
        }

        /// The reason an error about the file gives.
        package func reason(in bytes: some Collection<UInt8>) -> String {
            "not valid JSON (line \(line(in: bytes)), column \(column(in: bytes)))"
        }
    }

    /// A member name that appears twice in one object.
    package struct DuplicateKey: Error {
        /// The names and array indexes from the top down to the repeated name, which is last.
        package var path: [String]
        /// Where the second copy of the name begins.
        package var offset: Int

        /// `path` dotted, as config keys are written (`privacy.precision`, `features.0.type`).
        package var dottedPath: String { path.joined(separator: ".") }

        /// The reason an error about the file gives.
        package var reason: String { "duplicate key '\(dottedPath)' (JSON readers disagree on which copy counts; keep one)" }

        /// The line of `offset` in `bytes`, from 1.
        package func line(in bytes: some Collection<UInt8>) -> Int {
            bytes.prefix(offset).reduce(1) { $1 == 0x0A ? $0 + 1 : $0 }
        }
    }

    /// Objects with more members than this check names through a set, not by looking back.
    private static let linearNameCheckLimit = 16

    /// Nesting deeper than this is refused rather than risking the stack.
    package static let maximumDepth = 64

    private let bytes: [UInt8]
    private var position = 0

    /// The value `bytes` holds, with nothing but whitespace around it.
    package static func parse(_ bytes: [UInt8]) throws -> JSONNode {
        var scanner = JSONScanner(bytes: bytes)
        let value = try scanner.value(depth: 0)
        scanner.skipWhitespace()
        guard scanner.position == bytes.count else { throw Malformed(offset: scanner.position) }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func skipWhitespace() {
        while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x0A || bytes[position] == 0x0D || bytes[position] == 0x09 {
            position += 1
        }
    }

    private mutating func value(depth: Int) throws -> JSONNode {
        guard depth < Self.maximumDepth else { throw Malformed(offset: position) }
        skipWhitespace()
        guard position < bytes.count else { throw Malformed(offset: position) }
        switch bytes[position] {
        case UInt8(ascii: "{"):
            position += 1
            var members: [(String, JSONNode)] = []
            var names: Set<String> = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "}") { position += 1; return .object(members) }
            while true {
                skipWhitespace()
                let nameOffset = position
                let name = try string()
                if members.count < Self.linearNameCheckLimit {
                    if members.contains(where: { $0.0 == name }) { throw DuplicateKey(path: [name], offset: nameOffset) }
                } else {
                    if names.isEmpty { names = Set(members.map { $0.0 }) }
                    if !names.insert(name).inserted { throw DuplicateKey(path: [name], offset: nameOffset) }
                }
                skipWhitespace()
                try expect(UInt8(ascii: ":"))
                do {
                    members.append((name, try value(depth: depth + 1)))
                } catch var duplicate as DuplicateKey {
                    duplicate.path.insert(name, at: 0)
                    throw duplicate
                }
                skipWhitespace()
                if try separator(closing: UInt8(ascii: "}")) { return .object(members) }
            }
        case UInt8(ascii: "["):
            position += 1
            var items: [JSONNode] = []
            skipWhitespace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .array(items) }
            while true {
                do {
                    items.append(try value(depth: depth + 1))
                } catch var duplicate as DuplicateKey {
                    duplicate.path.insert(String(items.count), at: 0)
                    throw duplicate
                }
                skipWhitespace()
                if try separator(closing: UInt8(ascii: "]")) { return .array(items) }
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"):
            try literal("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try literal("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try literal("null")
            return .null
        default:
            return .number(try number())
        }
    }

    /// After a member or an item: `,` (false) or the closing bracket (true).
    private mutating func separator(closing: UInt8) throws -> Bool {
        guard position < bytes.count else { throw Malformed(offset: position) }
        if bytes[position] == closing { position += 1; return true }
        try expect(UInt8(ascii: ","))
        return false
    }

    private mutating func expect(_ byte: UInt8) throws {
        guard position < bytes.count, bytes[position] == byte else { throw Malformed(offset: position) }
        position += 1
    }

    private mutating func literal(_ word: String) throws {
        let expected = Array(word.utf8)
        guard position + expected.count <= bytes.count, bytes[position..<position + expected.count].elementsEqual(expected) else {
            throw Malformed(offset: position)
        }
        position += expected.count
    }

    /// A number as RFC 8259 spells it: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    private mutating func number() throws -> Double {
        let start = position
        func digits() -> Int {
            let first = position
            while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
            return position - first
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count else { throw Malformed(offset: start) }
        if bytes[position] == UInt8(ascii: "0") { position += 1 } else if digits() == 0 { throw Malformed(offset: start) }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() > 0 else { throw Malformed(offset: start) }
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") { position += 1 }
            guard digits() > 0 else { throw Malformed(offset: start) }
        }
        guard let value = Double(String(decoding: bytes[start..<position], as: UTF8.self)) else { throw Malformed(offset: start) }
        return value
    }

    /// A string, its escapes decoded; invalid UTF-8 becomes U+FFFD.
    private mutating func string() throws -> String {
        try expect(UInt8(ascii: "\""))
        var text: [UInt8] = []
        while true {
            guard position < bytes.count else { throw Malformed(offset: position) }
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: text, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard position < bytes.count else { throw Malformed(offset: position) }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escape)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hexQuad()
                    if (0xD800..<0xDC00).contains(scalar), position + 1 < bytes.count,
                       bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") {
                        position += 2
                        let low = try hexQuad()
                        scalar = (0xDC00..<0xE000).contains(low) ? 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00) : 0xFFFD
                    }
                    text.append(contentsOf: String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8)
                default:
                    throw Malformed(offset: position - 1)
                }
            case 0..<0x20:
                throw Malformed(offset: position - 1)
            default:
                text.append(byte)
            }
        }
    }

    private mutating func hexQuad() throws -> UInt32 {
        guard position + 4 <= bytes.count else { throw Malformed(offset: position) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt8
            switch byte {
            case 0x30...0x39: digit = byte - 0x30
            case 0x41...0x46: digit = byte - 0x41 + 10
            case 0x61...0x66: digit = byte - 0x61 + 10
            default: throw Malformed(offset: position)
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }
}

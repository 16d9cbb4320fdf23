/// Writes one JSON object with keys in the order given, which `JSONEncoder` does not keep.
///
/// Records are read by people and diffed in golden files, so their key order is part of the format.
struct JSONObjectWriter {
    private var text = "{"
    private var first = true

    mutating func add(_ key: String, _ value: String?) {
        addRaw(key, value.map(JSONObjectWriter.quoted) ?? "null")
    }

    mutating func add(_ key: String, _ value: Int64?) {
        addRaw(key, value.map { String($0) } ?? "null")
    }

    mutating func add(_ key: String, _ value: [String]) {
        addRaw(key, "[" + value.map(JSONObjectWriter.quoted).joined(separator: ",") + "]")
    }

    mutating func addIfPresent(_ key: String, _ value: String?) {
        if let value { add(key, value) }
    }

    mutating func addRaw(_ key: String, _ json: String) {
        if !first { text += "," }
        first = false
        text += JSONObjectWriter.quoted(key) + ":" + json
    }

    func finished() -> String { text + "}" }

    static func quoted(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                let hex = String(c.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

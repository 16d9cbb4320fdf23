import GeolocateModel

/// Whether `name` is 1 to 64 letters, digits, `_` or `-`: the names of actions and endpoints,
/// which appear in config keys, messages and file names.
///
/// No `.`: keys are dotted (`endpoints.NAME.url`), so a dotted name would pass in a file and
/// deliver, yet `config get`, `set` and `unset` could never reach it.
package func isPlainName(_ name: String) -> Bool {
    !name.isEmpty && name.unicodeScalars.count <= 64 && name.unicodeScalars.allSatisfy {
        ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "_-".unicodeScalars.contains($0)
    }
}

/// `isPlainName`'s rule, as messages say it.
package let plainNameRule = "letters, digits, _ or -, up to 64 characters; no dots, which separate the parts of a config key"

/// What text a server logs or a person reads may hold.
package enum PlainText {
    /// Whether `text` has no C0 or C1 control, DEL, bidirectional override or isolate, and no
    /// U+FFFD: such characters can make a log line say something else, and U+FFFD is what
    /// text that was not UTF-8 became when it was read.
    package static func isPlain(_ text: String) -> Bool {
        !text.unicodeScalars.contains {
            $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value)
                || (0x2066...0x2069).contains($0.value) || $0.value == 0xFFFD
        }
    }
}

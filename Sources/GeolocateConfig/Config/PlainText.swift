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

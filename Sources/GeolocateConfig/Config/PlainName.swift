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

/// Byte-level work on a Mosaic JSON line as geolocate writes it, without a JSON parse.
///
/// In geolocate's own output the text `"key":` can only be that key (a quote inside a string
/// value is always escaped), and the location's field names appear nowhere else in a record,
/// so a field is found by a byte search, several times faster than a parse.
package enum MosaicLine {
    /// Where `key` is: the index of its opening quote and the range of its value (a quoted
    /// string with its quotes, or a bare token).
    static func field(_ key: String, in bytes: [UInt8]) -> (key: Int, value: Range<Int>)? {
        let pattern = Array(("\"" + key + "\":").utf8)
        guard bytes.count > pattern.count else { return nil }
        var index = 0
        while index + pattern.count <= bytes.count {
            if bytes[index] == pattern[0] && bytes[index..<index + pattern.count].elementsEqual(pattern) {
                let start = index + pattern.count
                guard start < bytes.count else { return nil }
                var end = start
                if bytes[start] == UInt8(ascii: "\"") {
                    end += 1
                    while end < bytes.count && bytes[end] != UInt8(ascii: "\"") {
                        end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
                    }
                    return end < bytes.count ? (index, start..<(end + 1)) : nil
                }
                while end < bytes.count && bytes[end] != UInt8(ascii: ",") && bytes[end] != UInt8(ascii: "}") { end += 1 }
                return (index, start..<end)
            }
            index += 1
        }
        return nil
    }

    /// `line` without the location fields outside `attributes`: what flush sends of a record
    /// spooled under a wider privacy level than the one in force now.
    package static func narrowed(_ line: String, to attributes: LocationAttributes) -> String {
        var bytes = Array(line.utf8)
        for (name, attribute) in LocationAttributes.names where attribute.rawValue.nonzeroBitCount == 1 && !attributes.contains(attribute) {
            guard let found = field(name, in: bytes) else { continue }
            var removed = found.key..<found.value.upperBound
            if removed.lowerBound > 0 && bytes[removed.lowerBound - 1] == UInt8(ascii: ",") {
                removed = (removed.lowerBound - 1)..<removed.upperBound
            } else if removed.upperBound < bytes.count && bytes[removed.upperBound] == UInt8(ascii: ",") {
                removed = removed.lowerBound..<(removed.upperBound + 1)
            }
            bytes.removeSubrange(removed)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

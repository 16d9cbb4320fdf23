import Foundation

/// The items of a list value: a JSON array of strings, or a comma list.
package enum ListText {
    package static func items(_ text: String) throws -> [String] {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasPrefix("[") else {
            return trimmed.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
        guard let items = (try? JSONScanner.parse(Array(trimmed.utf8)))?.array, items.allSatisfy({ $0.string != nil }) else {
            throw GeolocateError.usage("invalid list '\(text)' (use a comma list or a JSON array of strings)")
        }
        return items.compactMap(\.string)
    }
}

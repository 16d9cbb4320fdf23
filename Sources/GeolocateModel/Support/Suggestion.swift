/// The valid word closest to a mistyped one, for "did you mean" in error messages.
///
/// Closeness is the optimal string alignment distance (insertions, deletions, substitutions
/// and swaps of two neighbours each count one), as git's "did you mean" uses: a typo is
/// one or two edits away, and a word that needs more is not suggested.
package enum Suggestion {
    /// The candidate nearest to `typed`, when it is within a third of its length (at least one
    /// edit, at most three); `nil` when none is that near or `typed` is a candidate itself.
    package static func closest<S: Sequence>(to typed: String, among candidates: S) -> String? where S.Element == String {
        let limit = min(3, max(1, typed.count / 3))
        var best: (word: String, distance: Int)?
        for candidate in candidates {
            if candidate == typed { return nil }
            let distance = editDistance(Array(typed.lowercased()), Array(candidate.lowercased()))
            if distance <= limit, distance < best?.distance ?? .max { best = (candidate, distance) }
        }
        return best?.word
    }

    /// "; did you mean 'WORD'?" for the nearest candidate, or "".
    package static func didYouMean<S: Sequence>(_ typed: String, among candidates: S) -> String where S.Element == String {
        closest(to: typed, among: candidates).map { "; did you mean '\($0)'?" } ?? ""
    }

    package static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}

/// "Did you mean ...?" for a mistyped command, option or configuration key.
package enum Suggestion {
    /// The closest of `candidates` to `word` by edit distance (a transposition counts once), when it is close
    /// enough to be a typo: at most 1 edit for short words, 2 for longer ones, and fewer edits than half the
    /// longer word (`-x` is not a typo of `-q`).
    package static func closest(_ word: String, among candidates: [String]) -> String? {
        let limit = word.count <= 4 ? 1 : 2
        var best: (String, Int)?
        for candidate in candidates {
            let distance = editDistance(Array(word.lowercased()), Array(candidate.lowercased()))
            let close = distance <= limit && 2 * distance < max(word.count, candidate.count)
            if close && distance < (best?.1 ?? Int.max) { best = (candidate, distance) }
        }
        return best?.0
    }

    /// `"; did you mean 'x'?"`, or nothing when no candidate is close.
    package static func didYouMean(_ word: String, among candidates: [String]) -> String {
        phrase(closest(word, among: candidates))
    }

    /// `"; did you mean 'x'?"` for a suggestion, nothing for none.
    package static func phrase(_ suggestion: String?) -> String {
        suggestion.map { "; did you mean '\($0)'?" } ?? ""
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions, adjacent transpositions.
    package static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var table = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1)
                }
            }
        }
        return table[a.count][b.count]
    }
}

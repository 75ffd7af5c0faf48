/// "Did you mean" for a mistyped command or option: the closest known word by edit distance, when it is close
/// enough to be a typo (at most a third of the word's length, and at least one edit allowed).
enum NearMiss {
    /// The candidate nearest to `word`, or nil when none is near.
    static func suggestion(for word: String, among candidates: some Sequence<String>) -> String? {
        let limit = max(1, word.count / 3)
        var best: (word: String, score: Int)?
        for candidate in candidates.sorted() {
            let distance = self.distance(word, candidate)
            guard distance <= limit else { continue }
            // On a tie, a candidate with the same first letter wins (`sorce` → `source`, not `force`).
            let score = distance * 2 + (candidate.first == word.first ? 0 : 1)
            if score < (best?.score ?? .max) { best = (candidate, score) }
        }
        return best?.word
    }

    /// `message` with `; did you mean X?` appended when a candidate is near `word`.
    static func message(_ message: String, word: String, among candidates: some Sequence<String>, prefix: String = "")
        -> String
    {
        guard let near = suggestion(for: word, among: candidates) else { return message }
        return "\(message); did you mean \(prefix)\(near)?"
    }

    /// Levenshtein distance over characters.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}

import SQLiteKit

/// Selection of one pull page at a fixed boundary (`spec/wire-protocol.md` §5.4).
///
/// Per resumable scope, the eligible effects are the stream entries after the scope's cursor up
/// to the boundary, deduplicated by row identity keeping the latest. Each such candidate is ranked
/// by its *first* effect after the cursor, and the page takes the `limit` lowest ranks across all
/// scopes. Ranking by the first effect is what makes cursors safe and the merge starvation-free:
/// every effect at or below a scope's new cursor belongs to a selected key (so it is delivered or
/// covered by the delivered latest state), every unselected candidate starts strictly after the
/// cursor, and each page moves at least one scope's cursor past the first effect it selected.
struct PullPage {
    /// A deduplicated key of one scope.
    struct Candidate {
        let scope: String
        let identity: [UInt8]
        /// The key's first effect after the cursor: its rank in the merge.
        let first: Int64
        /// The key's latest effect at or below the boundary: the change delivered.
        let latest: Int64
    }

    /// The selected candidates in delivery (rank) order.
    let selected: [Candidate]
    /// True when an eligible candidate remains at this boundary.
    let hasMore: Bool
    /// The cursor position each resumable scope receives, byte order of scope; scopes whose safe
    /// position did not move on an intermediate page get none.
    let cursors: [(scope: String, position: Int64)]

    /// Selects the page for `scopes` (each with its presented cursor position).
    static func select(
        scopes: [(scope: String, position: Int64)], boundary: Int64, limit: Int, store: ServerStore
    ) throws -> PullPage {
        var perScope: [[Candidate]] = []
        for (scope, position) in scopes {
            perScope.append(
                try candidates(scope: scope, after: position, boundary: boundary, limit: limit, store: store))
        }
        var merged = perScope.flatMap { $0 }
        merged.sort { $0.first < $1.first }
        let selected = Array(merged.prefix(limit))
        let hasMore = merged.count > limit
        let cut = selected.last?.first ?? Int64.min

        var cursors: [(scope: String, position: Int64)] = []
        for ((scope, position), list) in zip(scopes, perScope) {
            // The first unselected candidate of this scope bounds its safe position; a scope with
            // none has delivered (or covered) everything up to the boundary.
            let safe = list.first { $0.first > cut }.map { $0.first - 1 } ?? boundary
            if !hasMore || safe > position { cursors.append((scope, safe)) }
        }
        cursors.sort { $0.scope.utf8Precedes($1.scope) }
        return PullPage(selected: selected, hasMore: hasMore, cursors: cursors)
    }

    /// At most `limit + 1` candidates of one scope in rank order: enough to fill the page from this
    /// scope alone and to know its first unselected candidate.
    ///
    /// The position index keeps a steady pull proportional to the changes since the cursor rather
    /// than to the size of the scope's history.
    private static func candidates(
        scope: String, after position: Int64, boundary: Int64, limit: Int, store: ServerStore
    ) throws -> [Candidate] {
        try store.db.cachedStatement("""
            SELECT identity, min(position) AS first, max(position) AS latest
            FROM stream INDEXED BY stream_by_scope_position
            WHERE scope_id = ? AND position > ? AND position <= ?
            GROUP BY identity ORDER BY first LIMIT ?
            """).query([.text(scope), .integer(position), .integer(boundary), .integer(Int64(limit) + 1)]) { row in
            Candidate(scope: scope, identity: row.blob(at: 0), first: row.int64(at: 1), latest: row.int64(at: 2))
        }
    }
}

/// The assignment transition one pull reports (`spec/wire-protocol.md` §5.5, §13 point 4): the
/// server's recorded set is reconciled with the current assignment rule, and the delta is phrased
/// against what the client presented.
struct AssignmentDelta {
    /// Scopes for `scope_updates.add` (each with a null cursor, and also listed in `rebuild`), byte order.
    let added: [String]
    /// Scopes for `scope_updates.remove`, byte order.
    let removed: [String]
    /// Whether the recorded set changes: `scope_set_version` then advances by exactly one.
    let changed: Bool

    /// - Parameters:
    ///   - recorded: the set the server last reported to this client.
    ///   - current: the set the assignment rule gives now.
    ///   - presented: the scopes in the request's `scopes` map.
    ///   - clientBehind: the request's `scope_set_version` is below the recorded one, so the client
    ///     missed an earlier response (connect or pull) and gets current scopes it lacks again.
    init(recorded: [String], current: [String], presented: [String], clientBehind: Bool) {
        func missing(_ scope: String, from set: [String]) -> Bool { !ClientGate.contains(set, scope) }
        var added = current.filter { missing($0, from: recorded) }
        if clientBehind {
            added += current.filter { missing($0, from: presented) && missing($0, from: added) }
        }
        // A presented scope outside the current set was assigned once (validation checked it) and
        // is answered with its removal even when the recorded set already lacks it.
        var removed = recorded.filter { missing($0, from: current) }
        removed += presented.filter { missing($0, from: current) && missing($0, from: removed) }
        self.added = added.byteOrdered()
        self.removed = removed.byteOrdered()
        changed = recorded.count != current.count || recorded.contains { missing($0, from: current) }
    }
}

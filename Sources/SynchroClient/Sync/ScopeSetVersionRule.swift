/// The `scope_set_version` rule of connect and pull responses (`spec/wire-protocol.md` §13 point 10; upstream
/// enforces only the first part, `docs/upstream/client-behaviour.md` §6.1): the received value is never lower than
/// the one the request presented; it changes only with an assignment delta (`add`/`remove` not both empty); and a
/// delta always comes with a higher value. A violation is a non-retryable contract error raised before anything
/// of the response is committed.
enum ScopeSetVersionRule {
    /// Checks `received` against the `presented` request value; `changed` says whether the response carries a
    /// delta. A first connect (`presented` 0: nothing assigned yet) may start the count anywhere.
    static func check(presented: Int64, received: Int64, changed: Bool, member: String) throws(SyncError) {
        guard received >= presented else { throw .contract(rule: "scope_set_version_lower", member: member) }
        if changed, received == presented {
            throw .contract(rule: "scope_set_delta_without_version_change", member: member)
        }
        if !changed, received != presented, presented != 0 {
            throw .contract(rule: "scope_set_version_change_without_delta", member: member)
        }
    }
}

import SynchroStore
/// Why an atomic write group was rolled back before commit (`spec/integrity.md` §5.3, `seeds/001`).
public enum AtomicGroupInvalidReason: String, Sendable, Equatable, CaseIterable {
    /// Rule 1: a delete of a row is followed by a later entry for that row in the group.
    case deleteFollowedByWrite
    /// Rule 3: the normalized group has more than 1000 mutations.
    case tooManyMutations
    /// Rule 4: a normalized mutation exceeds 65,536 octets in canonical form or 256 authored columns.
    case mutationTooLarge
    /// Rule 5: the worst-case push request body or its RFC 8785 form exceeds 1,048,576 octets.
    case requestTooLarge
}

/// `atomicGroupInvalid(reason)`: the group failed a commit-time rule; the local transaction was rolled back,
/// so no row change and no queue entry remains.
public struct AtomicGroupInvalid: Error, Sendable, Equatable, CustomStringConvertible {
    /// The rule that failed.
    public let reason: AtomicGroupInvalidReason

    /// Creates the error for `reason`.
    public init(reason: AtomicGroupInvalidReason) {
        self.reason = reason
    }

    public var description: String {
        "atomic write group is invalid: \(reason.rawValue)"
    }
}

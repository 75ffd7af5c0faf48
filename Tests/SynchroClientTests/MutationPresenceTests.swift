import SynchroClient
import SynchroProtocol
import Testing

@Suite("Operation presence matrix")
struct MutationPresenceTests {
    @Test("the matrix of the client contract", arguments: [
        // insert: base absent, columns present (possibly empty)
        (PushOperation.insert, nil as String?, 2 as Int?, nil as MutationPresence.Violation?),
        (.insert, nil, 0, nil),
        (.insert, "v1", 1, .baseVersionForbidden),
        (.insert, nil, nil, .columnsMissing),
        // update: base required, nonempty patch
        (.update, "v1", 1, nil),
        (.update, nil, 1, .baseVersionMissing),
        (.update, "", 1, .baseVersionMissing),
        (.update, "v1", 0, .emptyUpdatePatch),
        (.update, "v1", nil, .columnsMissing),
        // delete: base required, columns absent
        (.delete, "v1", nil, nil),
        (.delete, nil, nil, .baseVersionMissing),
        (.delete, "v1", 0, .columnsForbidden),
    ])
    func matrix(
        operation: PushOperation, base: String?, columns: Int?, expected: MutationPresence.Violation?
    ) {
        let violation = MutationPresence.violation(
            operation: operation, baseVersion: base, columnCount: columns,
            clientVersion: "2024-01-01T00:00:00.000000Z")
        #expect(violation == expected)
    }

    @Test("a missing client version breaks the matrix for every operation", arguments: PushOperation.allCases)
    func clientVersion(operation: PushOperation) {
        let violation = MutationPresence.violation(
            operation: operation, baseVersion: operation == .insert ? nil : "v1",
            columnCount: operation == .delete ? nil : 1, clientVersion: nil)
        #expect(violation == .clientVersionMissing)
    }
}

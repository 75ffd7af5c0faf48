import SynchroProtocol
import SynchroStore

/// The operation presence matrix of the client contract (`seeds/000`, "Immutable authored payloads"):
///
/// | operation | base_version | columns | client_version |
/// | --- | --- | --- | --- |
/// | insert | absent | authored writable fields, possibly empty | required |
/// | update | required opaque token | nonempty authored patch | required |
/// | delete | required opaque token | absent | required |
///
/// The ledger checks it before a mutation can be sealed; a violation is never repaired.
public enum MutationPresence {
    /// A broken cell of the matrix.
    public enum Violation: String, Sendable, Equatable, CaseIterable {
        case baseVersionForbidden = "base_version_forbidden"
        case baseVersionMissing = "base_version_missing"
        case columnsMissing = "columns_missing"
        case columnsForbidden = "columns_forbidden"
        case emptyUpdatePatch = "empty_update_patch"
        case clientVersionMissing = "client_version_missing"
    }

    /// The first violation of the matrix, or nil. `columnCount` is nil when the columns member is absent.
    public static func violation(
        operation: PushOperation, baseVersion: String?, columnCount: Int?, clientVersion: String?
    ) -> Violation? {
        guard let clientVersion, !clientVersion.isEmpty else { return .clientVersionMissing }
        switch operation {
        case .insert:
            if baseVersion != nil { return .baseVersionForbidden }
            if columnCount == nil { return .columnsMissing }
        case .update:
            guard let baseVersion, !baseVersion.isEmpty else { return .baseVersionMissing }
            guard let columnCount else { return .columnsMissing }
            if columnCount == 0 { return .emptyUpdatePatch }
        case .delete:
            guard let baseVersion, !baseVersion.isEmpty else { return .baseVersionMissing }
            if columnCount != nil { return .columnsForbidden }
        }
        return nil
    }

    /// The matrix applied to a ledger entry as it would be sent now: a delete sends no columns, any other
    /// operation sends its authored fields.
    public static func violation(of mutation: PendingMutation) -> Violation? {
        violation(
            operation: mutation.operation, baseVersion: mutation.baseVersion,
            columnCount: mutation.operation == .delete ? (mutation.fields.isEmpty ? nil : mutation.fields.count)
                : mutation.fields.count,
            clientVersion: mutation.clientVersion)
    }
}

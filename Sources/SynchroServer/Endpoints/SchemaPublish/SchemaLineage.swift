import SQLiteKit
import SynchroProtocol

/// The published transitions between a client's installed manifest and the current one, followed
/// through the immutable `parent_schema` links (`spec/wire-protocol.md` §3.3, §7.1: parents are
/// never inferred from version numbers).
enum SchemaLineage {
    /// One published manifest on the path: the class of the transition that minted it and, for
    /// Class 3, its declared affected scope entries.
    struct Step {
        let reference: SchemaReference
        let transitionClass: SchemaManifest.TransitionClass
        let affectedScopes: [String]
    }

    /// The transitions after `ancestor` up to and including `current`, oldest first; nil when
    /// `ancestor` is not on the current manifest's lineage (unknown or from another lineage).
    static func steps(from ancestor: SchemaReference, to current: SchemaReference, store: ServerStore) throws
        -> [Step]?
    {
        var steps: [Step] = []
        var reference = current
        while reference != ancestor {
            guard reference.version > ancestor.version,
                  let row = try store.db.cachedStatement(
                      "SELECT manifest, transition_class, affected_scopes FROM manifests WHERE version = ? AND hash = ?"
                  ).rows([.integer(reference.version), .text(reference.hash)]).first,
                  let bytes = row[0].blobValue, let name = row[1].textValue,
                  let transitionClass = SchemaManifest.TransitionClass(wireName: name)
            else { return nil }
            steps.append(Step(
                reference: reference, transitionClass: transitionClass,
                affectedScopes: try affectedScopes(row[2].textValue ?? "[]")))
            // The stored body was validated when published; only its parent link is needed here.
            guard let parent = try StrictJSONParser().parse(bytes).objectValue?["parent_schema"],
                  let parentReference = try? SchemaReference(json: parent)
            else { return nil }
            reference = parentReference
        }
        return steps.reversed()
    }

    private static func affectedScopes(_ text: String) throws -> [String] {
        guard let values = try StrictJSONParser().parse(Array(text.utf8)).arrayValue else {
            throw SyncIntegrityViolation()
        }
        return values.compactMap(\.stringValue)
    }
}

/// The entries of a Class 3 publication's `affected_scopes`: a scope ID, or the pattern of a
/// per-user scope family (such as `user:{user}`) meaning every scope of that family.
///
/// The pattern form exists because per-user scopes are not enumerable — any authenticated user
/// has one — while a change to a per-user table affects all of them. The server issues scope IDs,
/// so it may read its own patterns back; clients never see the entries, only their intersection
/// with their assignment.
enum AffectedScopes {
    static let userPlaceholder = "{user}"

    /// True when `entry` names `scope`: exactly, or as a pattern whose text before and after
    /// `{user}` surrounds a nonempty user part of `scope`.
    static func entry(_ entry: String, covers scope: String) -> Bool {
        guard let (prefix, suffix) = pattern(entry) else { return entry.exactlyEquals(scope) }
        let octets = Array(scope.utf8)
        return octets.count > prefix.count + suffix.count && octets.starts(with: prefix)
            && octets.reversed().starts(with: suffix.reversed())
    }

    /// The assigned scopes any of `entries` covers, byte order.
    static func covered(_ assigned: [String], by entries: [String]) -> [String] {
        assigned.filter { scope in entries.contains { entry($0, covers: scope) } }.byteOrdered()
    }

    /// True when the dataset declares `entry`: a shared scope ID, a per-user family pattern exactly,
    /// or one concrete scope of a per-user family.
    static func isDeclared(_ entry: String, by dataset: Dataset) -> Bool {
        if dataset.sharedScopes.contains(where: { $0.id.exactlyEquals(entry) }) { return true }
        if pattern(entry) != nil {
            return dataset.perUserScopes.contains { $0.idPattern.exactlyEquals(entry) }
        }
        return dataset.perUserScopes.contains { self.entry($0.idPattern, covers: entry) }
    }

    /// The octets around `{user}` when `entry` holds it exactly once.
    private static func pattern(_ entry: String) -> (prefix: [UInt8], suffix: [UInt8])? {
        let octets = Array(entry.utf8)
        let placeholder = Array(userPlaceholder.utf8)
        var found: Int?
        var i = 0
        while i + placeholder.count <= octets.count {
            if octets[i..<(i + placeholder.count)].elementsEqual(placeholder) {
                guard found == nil else { return nil }
                found = i
                i += placeholder.count
            } else {
                i += 1
            }
        }
        guard let start = found else { return nil }
        return (Array(octets[..<start]), Array(octets[(start + placeholder.count)...]))
    }
}

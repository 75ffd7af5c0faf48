import SynchroProtocol

extension SeedRowAudit {
    /// The scope's tally: its edge count, and its digest streamed through ``ScopeDigestAccumulator`` in row-identity
    /// order, so that one entry is built at a time instead of the scope's preimage (`spec/integrity.md` §4.6). As
    /// ``ScopeDigest/compute(schemaHash:scopeID:entries:)`` would, an edge whose row has no identity or digest, or
    /// two edges of one identity, leave the digest unknown.
    func tally(scope: String, members: [ScopeMember], tables: [AuditedRows]) -> ScopeTally {
        var tally = ScopeTally(edges: members.count)
        for member in members where !tables[Int(member.table)].isDigested(Int(member.position)) { return tally }
        let ordered = Self.identityOrder(members, tables)
        guard var accumulator = try? ScopeDigestAccumulator(
            schemaHash: manifest.manifest.schemaHashOctets, scopeID: scope, cardinality: UInt64(ordered.count))
        else { return tally }
        for member in ordered where !tables[Int(member.table)].feed(Int(member.position), into: &accumulator) {
            return tally
        }
        tally.digest = try? accumulator.finalize()
        return tally
    }

    /// `members` (each with an identity) in identity order. When every identity of each table starts with the
    /// table's prefix and no table's prefix starts another's, two rows of different tables compare as their prefixes
    /// do, so each table's rows are sorted by their suffixes and the tables by their prefixes; otherwise the
    /// identities are compared whole.
    private static func identityOrder(_ members: [ScopeMember], _ tables: [AuditedRows]) -> [ScopeMember] {
        var byTable = [[UInt32]](repeating: [], count: tables.count)
        for member in members { byTable[Int(member.table)].append(member.position) }
        let present = byTable.indices.filter { !byTable[$0].isEmpty }
        let prefixes = present.compactMap { index in tables[index].identityPrefix.map { (index, $0) } }
            .sorted { $0.1.lexicographicallyPrecedes($1.1) }
        let separable = prefixes.count == present.count
            && present.allSatisfy { tables[$0].allIdentitiesSharePrefix }
            && zip(prefixes, prefixes.dropFirst()).allSatisfy { !$1.1.starts(with: $0.1) }
        guard separable else {
            return members.sorted { a, b in
                tables[Int(a.table)].identityPrecedes(Int(a.position), tables[Int(b.table)], Int(b.position))
            }
        }
        var ordered: [ScopeMember] = []
        ordered.reserveCapacity(members.count)
        for (index, _) in prefixes {
            tables[index].sortByIdentity(&byTable[index])
            ordered.append(contentsOf: byTable[index].map { ScopeMember(table: UInt32(index), position: $0) })
        }
        return ordered
    }
}

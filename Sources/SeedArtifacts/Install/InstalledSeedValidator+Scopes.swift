import SQLiteKit
import SynchroStore
import SynchroProtocol

extension InstalledSeedValidator {
    struct ScopeRow {
        let id: String
        let digest: [UInt8]?
        let local: [UInt8]?
    }

    struct ReceiptRow {
        let scope: String
        let cardinality: Int64?
        let digest: [UInt8]?
    }

    // MARK: - Items 10 and 11

    func readReceipts(_ reference: SchemaReference, _ connection: Connection) throws -> [ReceiptRow] {
        var seen: Set<String> = []
        return try connection.query(
            "SELECT scope_id, receipt, schema_version, schema_hash, cardinality, checksum FROM _synchro_seed_receipts"
        ) { row -> ReceiptRow? in
            guard case .text(let scope) = try row.value(at: 0), !scope.isEmpty else {
                collector.add(.installerReceipt, table: "_synchro_seed_receipts", "a receipt has an empty scope ID")
                return nil
            }
            if !seen.insert(scope).inserted {
                collector.add(.installerReceipt, scope: scope, "more than one receipt for the scope")
            }
            if (try? row.value(at: 1))?.textValue?.isEmpty != false {
                collector.add(.installerReceipt, scope: scope, "the receipt is empty")
            }
            let storedVersion = try row.value(at: 2)
            let storedHash = try row.value(at: 3)
            if storedVersion.integerValue != reference.version || storedHash.textValue != reference.hash {
                collector.add(.installerReceipt, scope: scope, "the receipt's schema reference is not the seed's")
            }
            var cardinality: Int64?
            if case .integer(let value) = try row.value(at: 4), value >= 0 {
                cardinality = value
            } else {
                collector.add(.installerReceipt, scope: scope, "the receipt cardinality is not an integer ≥ 0")
            }
            let digest = row.isNull(at: 5) ? nil : row.withTextBytes(at: 5, ChecksumText.objectDigest)
            if digest == nil {
                collector.add(.installerReceipt, scope: scope, "the receipt checksum is not a checksum object")
            }
            return ReceiptRow(scope: scope, cardinality: cardinality, digest: digest)
        }.compactMap { $0 }
    }

    func readScopes(_ connection: Connection) throws -> [ScopeRow] {
        try connection.query(
            "SELECT scope_id, cursor, checksum, local_checksum, generation FROM _synchro_scopes"
        ) { row -> ScopeRow? in
            guard case .text(let scope) = try row.value(at: 0), !scope.isEmpty else {
                collector.add(.installerScope, table: "_synchro_scopes", "a scope has an empty scope ID")
                return nil
            }
            if !row.isNull(at: 1) { collector.add(.installerScope, scope: scope, "the scope has a cursor") }
            let digest = row.isNull(at: 2) ? nil : row.withTextBytes(at: 2, ChecksumText.objectDigest)
            let local = row.isNull(at: 3) ? nil : row.withTextBytes(at: 3, ChecksumText.objectDigest)
            if digest == nil || local == nil {
                collector.add(.installerScope, scope: scope,
                              "the scope checksum or local checksum is not a checksum object")
            }
            if case .integer(0) = try row.value(at: 4) {} else {
                collector.add(.installerScope, scope: scope, "the scope generation is not 0")
            }
            return ScopeRow(id: scope, digest: digest, local: local)
        }.compactMap { $0 }
    }

    func matchScopes(_ scopes: [ScopeRow], _ receipts: [ReceiptRow]) {
        let scopeIDs = Set(scopes.map(\.id))
        let receiptIDs = Set(receipts.map(\.scope))
        for scope in scopes.map(\.id).sorted() where !receiptIDs.contains(scope) {
            collector.add(.installerScope, scope: scope, "the scope has no receipt (receipt scope set ≠ scope set)")
        }
        for scope in receipts.map(\.scope).sorted() where !scopeIDs.contains(scope) {
            collector.add(.installerScope, scope: scope, "the receipt has no scope (receipt scope set ≠ scope set)")
        }
    }

    // MARK: - Item 15

    func compareTallies(
        _ audit: RowAuditResult, scopes: [ScopeRow], receipts: [ReceiptRow], manifest: ClientManifest
    ) {
        for receipt in receipts {
            guard let scope = scopes.first(where: { $0.id == receipt.scope }) else { continue }
            let tally = audit.scopes[receipt.scope] ?? ScopeTally(
                edges: 0,
                digest: try? ScopeDigest.compute(
                    schemaHash: manifest.manifest.schemaHashOctets, scopeID: receipt.scope, entries: []
                ).digest)
            if let cardinality = receipt.cardinality, cardinality != Int64(tally.edges) {
                collector.add(.installerScopeDigest, scope: receipt.scope,
                              "\(tally.edges) provenance edges, the receipt cardinality is \(cardinality)")
            }
            if scope.digest == nil || scope.digest != receipt.digest || scope.local != receipt.digest {
                collector.add(.installerScopeDigest, scope: receipt.scope,
                              "the scope checksum or local checksum differs from the receipt checksum")
            }
            if tally.digest == nil || tally.digest != receipt.digest {
                collector.add(.installerScopeDigest, scope: receipt.scope,
                              "the scope digest recomputed from the rows differs from the receipt checksum")
            }
        }
    }
}

import SynchroProtocol

/// The deterministic mutation ID the ledger migration gives each row of the pre-ledger queue
/// (`spec/client-store.md` §4.4): SHA-256 over the domain, a zero octet and the length-prefixed texts,
/// first 16 octets, version nibble 5 and the RFC 4122 variant.
package enum LegacyMutationID {
    package static let domain = "synchro:v3:local-mutation-id:v1"

    package static func make(
        tableName: String, recordID: String, legacyOperation: String, clientVersion: String, localRevision: Int64
    ) -> String {
        var writer = OctetWriter(domain: domain, capacity: 128)
        for text in [tableName, recordID, legacyOperation, clientVersion, String(localRevision)] {
            writer.appendText(text)
        }
        var octets = Array(SHA256.hash(writer.bytes).prefix(16))
        octets[6] = (octets[6] & 0x0f) | 0x50
        octets[8] = (octets[8] & 0x3f) | 0x80
        return formatUUID(octets)
    }

    /// `8-4-4-4-12` lowercase hex of 16 octets.
    package static func formatUUID(_ octets: [UInt8]) -> String {
        let hex = Array(Hex.encode(octets))
        let groups = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32]
        return groups.map { String(hex[$0]) }.joined(separator: "-")
    }
}

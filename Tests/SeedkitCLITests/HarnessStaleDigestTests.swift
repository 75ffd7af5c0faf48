import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Found by the crash harness (docs/reliability.md, "Findings", 1): after a Class 2 schema change that adds a field
/// (`replace`), the stored provenance digests of rows the migration did not re-deliver stay those of the earlier
/// schema. Once such a row has a pending local change, the scope recomputation uses that digest for it (the
/// server-confirmed base the local row no longer shows), so the scope cannot reproduce the checksum verified under
/// the active schema. `StoreValidator` used to report that as `row_digest_mismatch` for every row of the scope and
/// `scope_digest_mismatch`; it now tells rows digested under an earlier schema from damage and reports the edited
/// row as awaiting its push and pull echo (``ScopeMismatchAudit``). The next sync verifies the scope without a rebuild.
@Suite("Harness finding: validation after a schema change with a pending local edit", .serialized)
struct HarnessStaleDigestTests {
    @Test("a pending edit of a row synced before a field was added does not make a sound store invalid")
    func pendingEditAfterFieldAddition() throws {
        let world = try HarnessSyncWorld()
        try world.expectSuccess(try world.sync(world.device, pageLimit: 20, until: true), "the first sync")
        try world.server.publishNoteField("fld_note_harness_1", name: "harness_1")
        try world.expectSuccess(try world.sync(world.device, pageLimit: 20, until: true), "the migrating sync")
        try world.expectSuccess(try world.child(["validate", "--db", world.device]), "validate before the edit")

        let task = try #require(try world.rows("SELECT id FROM tasks ORDER BY id LIMIT 1", []).first)
        let id = try #require(try StrictJSONParser().parse(task).objectValue?["id"]?.stringValue)
        try world.expectSuccess(try world.sql(["UPDATE tasks SET title = ? WHERE id = ?", "edited", id]), "the edit")
        let validate = try world.child(["validate", "--db", world.device, "--json"])
        try world.expectSuccess(validate, "validate after the edit")
        #expect(validate.stdoutText.contains(#""digest":"awaiting_pull""#), "\(validate.stdoutText)")

        // The store was sound all along: the next sync pushes the edit and verifies every scope without a rebuild.
        let sync = try world.sync(world.device, pageLimit: 20)
        try world.expectSuccess(sync, "the sync after the edit")
        #expect(sync.lines.last?.contains(#""scopes_rebuilt":[]"#) == true, "\(sync.stdoutText)")
        try world.expectSuccess(try world.child(["validate", "--db", world.device]), "validate after the sync")
    }
}

import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Found by the crash harness (docs/reliability.md, "Findings"): after a Class 2 schema change that adds a field
/// (`replace`), the stored provenance digests of rows the migration did not re-deliver stay those of the earlier
/// schema. Once such a row has a pending local change, `StoreValidator` combines its old-schema digest with the
/// other rows recomputed under the active schema, and reports `row_digest_mismatch` for every row of the scope and
/// `scope_digest_mismatch` on a store that is sound: the next sync verifies the scope against the server without
/// a rebuild, and `validate` passes again. The known issue fails this test once it is fixed.
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
        withKnownIssue("StoreValidator reads old-schema provenance digests of rows with a pending change") {
            try world.expectSuccess(try world.child(["validate", "--db", world.device]), "validate after the edit")
        }

        // The store was sound all along: the next sync pushes the edit and verifies every scope without a rebuild.
        let sync = try world.sync(world.device, pageLimit: 20)
        try world.expectSuccess(sync, "the sync after the edit")
        #expect(sync.lines.last?.contains(#""scopes_rebuilt":[]"#) == true, "\(sync.stdoutText)")
        try world.expectSuccess(try world.child(["validate", "--db", world.device]), "validate after the sync")
    }
}

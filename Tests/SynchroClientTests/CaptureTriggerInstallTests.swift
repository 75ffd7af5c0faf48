import Foundation
import SQLiteKit
import Testing
import _SeedkitTestSupport
@testable import SynchroClient
@testable import SynchroStore

@Suite("Capture trigger installation")
struct CaptureTriggerInstallTests {
    /// Every trigger of the file with its table and text, in `sqlite_schema` order.
    private func triggers(_ db: Connection) throws -> [[SQLiteValue]] {
        try db.rows("SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY rowid")
    }

    private func schemaVersion(_ db: Connection) throws -> SQLiteValue? {
        try db.scalar("PRAGMA schema_version")
    }

    @Test("regenerating triggers that are already exactly installed writes no schema row")
    func identicalTriggersAreKept() throws {
        let fixture = try SeedMigrationTests.SeedFixture()
        try fixture.inspect { db in
            let before = try triggers(db)
            let version = try schemaVersion(db)
            #expect(before.count == 12)
            try CaptureTriggerInstaller.regenerate(on: db)
            #expect(try schemaVersion(db) == version)
            #expect(try triggers(db) == before)
        }
    }

    @Test("a table with another trigger, or a capture trigger of other text, gets its three triggers recreated")
    func differingTriggersAreRecreated() throws {
        let fixture = try SeedMigrationTests.SeedFixture()
        try fixture.inspect { db in
            let generated = try triggers(db)
            let tasks = generated.filter { $0[1] == "tasks" }
            // A user trigger on tasks: the capture triggers are dropped and created after it, as every regeneration
            // did before.
            try db.execute("CREATE TRIGGER user_tasks AFTER INSERT ON tasks BEGIN SELECT 1; END")
            let version = try schemaVersion(db)
            try CaptureTriggerInstaller.regenerate(on: db)
            #expect(try schemaVersion(db) != version)
            let names = try triggers(db).filter { $0[1] == "tasks" }.map { $0[0] }
            #expect(names == ["user_tasks"] + tasks.map { $0[0] })
            try db.execute("DROP TRIGGER user_tasks")

            // A capture trigger whose text differs (here only by its whitespace) is replaced by the generated text.
            let insert = try #require(tasks.first?[2].textValue)
            try db.execute("DROP TRIGGER _synchro_cdc_insert_tasks")
            try db.execute(insert.replacingOccurrences(of: "\n", with: "\n "))
            try CaptureTriggerInstaller.regenerate(on: db)
            #expect(try triggers(db).filter { $0[1] == "tasks" } == tasks)
            #expect(Set(try triggers(db).map { $0 }) == Set(generated))
        }
    }
}

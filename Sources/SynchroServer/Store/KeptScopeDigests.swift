/// Each portable scope's digest, kept on the PostgreSQL store so that `synchro_portable_seed_manifest` does not
/// digest every scope in SQL (one pass over all of the scope's digest input) at the start of every export.
///
/// What a kept row means: `(scope_id, schema_hash, cardinality, digest)` is exactly what
/// ``SeedExportSQLHelpers`` `seed_scope_digest(scope_id, schema_hash)` returns for the committed `membership` the
/// row was computed from. It stays true for as long as it exists:
///
/// - the digest's preimage is the schema hash (a column of the row, compared by the manifest), the scope ID (the
///   key) and the scope's live members in identity order with their row digests — `membership` alone;
/// - every statement that inserts, updates or deletes `membership` rows (or truncates it) deletes the kept rows of
///   the scopes it touched, in its own transaction, by trigger (``forgetTriggers``): whatever path writes
///   membership — the materializer, the initial load, a schema activation, a migration, a hand-written statement —
///   a snapshot that sees the change does not see the kept row, and a snapshot that sees the kept row does not see
///   the change;
/// - ``keep`` computes rows only while holding `SHARE` on `membership` (no membership write in flight or able to
///   start until it commits) in a `READ COMMITTED` transaction (each statement sees everything committed before
///   it), so a kept row is never computed from a snapshot older than the newest membership change.
///
/// A missing row, or one of another schema hash, makes the manifest compute the digest as before. The kept table is
/// a cache, not a contract: the exporter still recomputes every scope digest from the pages it receives and refuses
/// a manifest that disagrees, so even a damaged row fails closed (tested).
///
/// Crash: the rows are written in one transaction with nothing else; a crash before its commit leaves no row
/// (the next open keeps again), after it leaves rows that the triggers keep honest.
enum KeptScopeDigests {
    /// The table, the triggers that forget, and the keeper; installed with the export functions.
    static let script = [table, forgetTriggers, keeper].joined(separator: "\n")

    static let table = #"""
        CREATE TABLE IF NOT EXISTS seedkit_server.kept_scope_digests(
            scope_id text COLLATE "C" PRIMARY KEY,
            schema_hash text COLLATE "C" NOT NULL,
            cardinality bigint NOT NULL CHECK (cardinality >= 0),
            digest bytea NOT NULL CHECK (length(digest) = 32)
        );
        """#

    /// Statement-level triggers over transition tables: one `DELETE` on the (small) kept table per statement that
    /// changed membership, whatever the number of rows (the initial load writes 500 rows a statement).
    static let forgetTriggers = #"""
        CREATE OR REPLACE FUNCTION seedkit_server.seed_forget_kept_digests() RETURNS trigger
        LANGUAGE plpgsql SET search_path = pg_catalog, seedkit_server AS $f$
        BEGIN
            IF TG_OP = 'TRUNCATE' THEN
                DELETE FROM seedkit_server.kept_scope_digests;
            ELSIF TG_OP = 'INSERT' THEN
                DELETE FROM seedkit_server.kept_scope_digests k
                 WHERE k.scope_id IN (SELECT n.scope_id FROM membership_new n);
            ELSIF TG_OP = 'DELETE' THEN
                DELETE FROM seedkit_server.kept_scope_digests k
                 WHERE k.scope_id IN (SELECT o.scope_id FROM membership_old o);
            ELSE
                DELETE FROM seedkit_server.kept_scope_digests k
                 WHERE k.scope_id IN (SELECT o.scope_id FROM membership_old o
                                      UNION SELECT n.scope_id FROM membership_new n);
            END IF;
            RETURN NULL;
        END
        $f$;
        DROP TRIGGER IF EXISTS membership_insert_forgets_kept_digests ON seedkit_server.membership;
        DROP TRIGGER IF EXISTS membership_update_forgets_kept_digests ON seedkit_server.membership;
        DROP TRIGGER IF EXISTS membership_delete_forgets_kept_digests ON seedkit_server.membership;
        DROP TRIGGER IF EXISTS membership_truncate_forgets_kept_digests ON seedkit_server.membership;
        CREATE TRIGGER membership_insert_forgets_kept_digests AFTER INSERT ON seedkit_server.membership
            REFERENCING NEW TABLE AS membership_new
            FOR EACH STATEMENT EXECUTE FUNCTION seedkit_server.seed_forget_kept_digests();
        CREATE TRIGGER membership_update_forgets_kept_digests AFTER UPDATE ON seedkit_server.membership
            REFERENCING OLD TABLE AS membership_old NEW TABLE AS membership_new
            FOR EACH STATEMENT EXECUTE FUNCTION seedkit_server.seed_forget_kept_digests();
        CREATE TRIGGER membership_delete_forgets_kept_digests AFTER DELETE ON seedkit_server.membership
            REFERENCING OLD TABLE AS membership_old
            FOR EACH STATEMENT EXECUTE FUNCTION seedkit_server.seed_forget_kept_digests();
        CREATE TRIGGER membership_truncate_forgets_kept_digests AFTER TRUNCATE ON seedkit_server.membership
            FOR EACH STATEMENT EXECUTE FUNCTION seedkit_server.seed_forget_kept_digests();
        """#

    /// Keeps the digest of every portable scope that has none for the current schema hash; returns how many it
    /// kept. A scope whose digest cannot be computed (a live member without a valid digest) is left without one:
    /// the export computes it and fails there, as it always did.
    static let keeper = #"""
        CREATE OR REPLACE FUNCTION seedkit_server.seed_keep_scope_digests() RETURNS bigint
        LANGUAGE plpgsql SET search_path = pg_catalog, seedkit_server AS $f$
        DECLARE
            v_hash text;
            v_scope text;
            v_kept bigint := 0;
        BEGIN
            IF current_setting('transaction_isolation') <> 'read committed' THEN
                RAISE EXCEPTION 'keeping scope digests requires READ COMMITTED' USING ERRCODE = 'XX000';
            END IF;
            -- Every membership writer in flight commits first, none starts before this transaction ends, and each
            -- statement below sees all of them.
            LOCK TABLE seedkit_server.membership IN SHARE MODE;
            SELECT hash INTO v_hash FROM seedkit_server.manifests ORDER BY version DESC LIMIT 1;
            IF NOT FOUND THEN
                RETURN 0;
            END IF;
            DELETE FROM seedkit_server.kept_scope_digests k WHERE k.schema_hash <> v_hash;
            FOR v_scope IN
                SELECT s.scope_id FROM seedkit_server.shared_scopes s
                 WHERE s.portable AND NOT EXISTS (
                     SELECT 1 FROM seedkit_server.kept_scope_digests k WHERE k.scope_id = s.scope_id)
                 ORDER BY s.scope_id
            LOOP
                BEGIN
                    INSERT INTO seedkit_server.kept_scope_digests(scope_id, schema_hash, cardinality, digest)
                        SELECT v_scope, v_hash, d.cardinality, d.digest
                          FROM seedkit_server.seed_scope_digest(v_scope, decode(v_hash, 'hex')) d;
                    v_kept := v_kept + 1;
                EXCEPTION WHEN SQLSTATE 'XX000' THEN
                    NULL;
                END;
            END LOOP;
            RETURN v_kept;
        END
        $f$;
        """#

    /// Keeps every portable scope's digest that is missing, in a transaction of its own (``keeper``).
    static func keep(store: ServerStore) throws {
        try store.db.transaction {
            _ = try store.db.execute("SELECT seedkit_server.seed_keep_scope_digests()")
        }
    }
}

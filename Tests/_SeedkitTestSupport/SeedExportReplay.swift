import Foundation
import PostgresKit

/// A STAND-IN for upstream's `synchro` export functions, for tests of the PostgreSQL export source until the
/// reference server provides the real ones (issue #17 item 2). It computes nothing: it REPLAYS an export
/// recorded from the reference server over HTTP (``ExportRecording``), so every manifest, token, receipt, row and
/// digest it returns is the reference server's.
///
/// What it does check is upstream's interface (`docs/upstream/postgresql-extension.md` §1–§3): the functions'
/// names and identity arguments in schema `synchro`, `STRICT`, `SECURITY DEFINER` with a fixed search path; the
/// page-limit range (JSON `invalid_request`); the transaction mode, exactly as upstream reads it (the manifest
/// call raises `XX000` `portable seed transaction is invalid: …`, the scope call answers JSON); that a scope call
/// comes after the manifest call in the same transaction (`synchro.seed_export_state`); the receipt, token,
/// ordinal and limit of each page against the recording. Roles as upstream's finalize block sets them: a
/// `synchro_seed` NOLOGIN group with `USAGE` on the schema and `EXECUTE` on exactly the three functions, PUBLIC
/// with nothing; plus two password logins, one a member of `synchro_seed` and one not.
///
/// Each replay lives in its own database of the cluster, so a test may drop a function or inject faults.
public final class SeedExportReplay: Sendable {
    public let cluster: PostgresCluster
    public let database: String
    /// A login that is a member of `synchro_seed`, and one that is not; both use ``password``.
    public let exporter: String
    public let outsider: String
    public let password: String

    /// Creates the database, the schema, the roles and stores `recording` in it.
    public init(cluster: PostgresCluster, recording: ExportRecording) throws {
        self.cluster = cluster
        let suffix = UUID().uuidString.lowercased().prefix(8)
        database = "replay_\(suffix)"
        exporter = "seed_exporter_\(suffix)"
        outsider = "seed_outsider_\(suffix)"
        password = "replay-password-\(suffix)"
        let admin = try PostgresConnection(connectionString: cluster.socketConnectionString())
        try admin.execute("CREATE DATABASE \(database)")
        try admin.execute("""
            DO $$ BEGIN CREATE ROLE synchro_seed NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$
            """)
        try admin.execute("CREATE ROLE \(exporter) LOGIN PASSWORD '\(password)' IN ROLE synchro_seed")
        try admin.execute("CREATE ROLE \(outsider) LOGIN PASSWORD '\(password)'")
        let connection = try superuser()
        for statement in Self.schema { try connection.execute(statement) }
        try connection.execute(
            "INSERT INTO synchro_replay.schema_manifest VALUES ($1::jsonb)", [text(recording.schemaManifest)])
        try connection.execute(
            "INSERT INTO synchro_replay.export_manifest VALUES ($1::jsonb)", [text(recording.exportManifest)])
        for page in recording.pages {
            try connection.execute("INSERT INTO synchro_replay.pages VALUES ($1, $2, $3::bigint, $4::jsonb)", [
                page.scopeID, page.pageToken, String(page.expectedRowOrdinal), text(page.body),
            ])
        }
    }

    /// A superuser connection to the replay's database (over the socket).
    public func superuser() throws -> PostgresConnection {
        try PostgresConnection(connectionString: cluster.socketConnectionString(database: database))
    }

    /// `postgresql://LOGIN@127.0.0.1:PORT/DB`, without a password (give it through `PGPASSWORD` or the URI).
    public func uri(login: String) -> String {
        cluster.tcpURI(database: database, user: login)
    }

    /// The key/value form over TCP with the password in it.
    public func keyValue(login: String, password: String? = nil) -> String {
        "host=127.0.0.1 port=\(cluster.port) dbname=\(database) user=\(login) password=\(password ?? self.password)"
    }

    /// The page function raises SQLSTATE `40001` on the first page call of each of the next `count` export
    /// attempts of a session (counted with session advisory locks, which survive the rollback that follows).
    public func failSerialization(times count: Int) throws {
        try superuser().execute("UPDATE synchro_replay.faults SET serialization_failures = $1::int", [String(count)])
    }

    /// Drops upstream's page function, as an operator removing or downgrading the extension would.
    public func dropPageFunction() throws {
        try superuser().execute("DROP FUNCTION synchro.synchro_portable_seed_scope(text, text, text, bigint, integer)")
    }

    /// Makes the database claim that `synchro_pg` `version` is installed: one `pg_extension` row written with
    /// `allow_system_table_mods` (upstream's extension files are not installed here), so the exporter's version
    /// check meets a real catalog row.
    public func claimExtension(version: String) throws {
        let connection = try superuser()
        try connection.execute("SET allow_system_table_mods = on")
        try connection.execute("""
            INSERT INTO pg_catalog.pg_extension (oid, extname, extowner, extnamespace, extrelocatable, extversion)
            SELECT (SELECT max(oid::int8) + 1 FROM pg_catalog.pg_extension)::oid, 'synchro_pg', 10,
                   'synchro'::regnamespace, false, $1
            """, [version])
    }

    private func text(_ bytes: [UInt8]) -> String {
        String(decoding: bytes, as: UTF8.self)
    }

    /// The replay's tables (schema `synchro_replay`, owned by the superuser, no privileges for anyone else) and
    /// upstream's three functions in schema `synchro`.
    private static let schema: [String] = [
        "CREATE SCHEMA synchro_replay",
        "REVOKE ALL ON SCHEMA synchro_replay FROM PUBLIC",
        "CREATE TABLE synchro_replay.schema_manifest (body jsonb NOT NULL)",
        "CREATE TABLE synchro_replay.export_manifest (body jsonb NOT NULL)",
        """
        CREATE TABLE synchro_replay.pages (
            scope_id text NOT NULL, page_token text NOT NULL, expected_row_ordinal bigint NOT NULL,
            body jsonb NOT NULL, PRIMARY KEY (scope_id, page_token))
        """,
        "CREATE TABLE synchro_replay.faults (serialization_failures int NOT NULL)",
        "INSERT INTO synchro_replay.faults VALUES (0)",
        """
        CREATE FUNCTION synchro_replay.export_transaction_is_valid() RETURNS boolean LANGUAGE sql AS $$
            SELECT current_setting('transaction_isolation') = 'serializable'
               AND current_setting('transaction_read_only') = 'on'
               AND current_setting('transaction_deferrable') = 'on'
        $$
        """,
        """
        CREATE FUNCTION synchro_replay.refusal(p_message text) RETURNS jsonb LANGUAGE sql AS $$
            SELECT jsonb_build_object('error', jsonb_build_object(
                'code', 'invalid_request', 'message', p_message, 'retryable', false))
        $$
        """,
        "CREATE SCHEMA synchro",
        "REVOKE ALL ON SCHEMA synchro FROM PUBLIC",
        "GRANT USAGE ON SCHEMA synchro TO synchro_seed",
        // Upstream's envelope around the stored manifest; its server_time is fixed: nothing reads it.
        """
        CREATE FUNCTION synchro.synchro_schema_manifest() RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER
        SET search_path = pg_catalog, synchro AS $$
        DECLARE
            v_manifest jsonb := (SELECT body FROM synchro_replay.schema_manifest);
        BEGIN
            RETURN jsonb_build_object('schema_version', v_manifest->'schema_version',
                'schema_hash', v_manifest->'schema_hash', 'server_time', '2026-01-01T00:00:00.000Z',
                'manifest', v_manifest);
        END $$
        """,
        """
        CREATE FUNCTION synchro.synchro_portable_seed_manifest(p_page_limit integer DEFAULT 1000) RETURNS jsonb
        LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
        DECLARE
            v_manifest jsonb := (SELECT body FROM synchro_replay.export_manifest);
        BEGIN
            IF p_page_limit < 1 OR p_page_limit > 1000 THEN
                RETURN synchro_replay.refusal('portable seed limit must be between 1 and 1000');
            END IF;
            IF NOT synchro_replay.export_transaction_is_valid() THEN
                RAISE EXCEPTION 'portable seed transaction is invalid: %',
                    'portable seed requires SERIALIZABLE READ ONLY DEFERRABLE' USING ERRCODE = 'XX000';
            END IF;
            IF p_page_limit <> (v_manifest->>'page_limit')::int THEN
                RETURN synchro_replay.refusal('portable seed page limit is fixed for the export');
            END IF;
            PERFORM set_config('synchro.seed_export_state', 'replay', true);
            RETURN v_manifest;
        END $$
        """,
        """
        CREATE FUNCTION synchro.synchro_portable_seed_scope(
            p_scope_id text, p_page_token text, p_continuation_receipt text, p_expected_row_ordinal bigint,
            p_limit integer DEFAULT 1000) RETURNS jsonb
        LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = pg_catalog, synchro AS $$
        DECLARE
            v_manifest jsonb := (SELECT body FROM synchro_replay.export_manifest);
            v_scope jsonb;
            v_page synchro_replay.pages;
            v_held int;
            v_wanted int;
        BEGIN
            IF p_limit < 1 OR p_limit > 1000 THEN
                RETURN synchro_replay.refusal('portable seed limit must be between 1 and 1000');
            END IF;
            IF p_expected_row_ordinal < 0 THEN
                RETURN synchro_replay.refusal('portable seed expected row ordinal is invalid');
            END IF;
            IF coalesce(current_setting('synchro.seed_export_state', true), '') = '' THEN
                RETURN synchro_replay.refusal('portable seed export transaction is unavailable');
            END IF;
            SELECT s INTO v_scope FROM jsonb_array_elements(v_manifest->'portable_scopes') AS s
                WHERE s->>'id' = p_scope_id;
            IF v_scope IS NULL THEN
                RETURN synchro_replay.refusal(format('scope %s is not portable', p_scope_id));
            END IF;
            IF NOT synchro_replay.export_transaction_is_valid() THEN
                RETURN synchro_replay.refusal('portable seed requires SERIALIZABLE READ ONLY DEFERRABLE');
            END IF;
            IF p_limit <> (v_manifest->>'page_limit')::int THEN
                RETURN synchro_replay.refusal('portable seed page limit does not match the export');
            END IF;
            IF p_continuation_receipt <> v_scope->>'continuation' THEN
                RETURN synchro_replay.refusal('portable seed continuation receipt binding is invalid');
            END IF;
            SELECT * INTO v_page FROM synchro_replay.pages
                WHERE scope_id = p_scope_id AND page_token = p_page_token;
            IF NOT FOUND OR v_page.expected_row_ordinal <> p_expected_row_ordinal THEN
                RETURN synchro_replay.refusal('portable seed page token binding is invalid');
            END IF;
            -- Forced serialization failures: one per export attempt (each attempt's first page call), counted by
            -- session advisory locks (class 1702), which the attempt's rollback does not release.
            SELECT serialization_failures INTO v_wanted FROM synchro_replay.faults;
            SELECT count(*) INTO v_held FROM pg_locks
                WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND classid = 1702 AND objsubid = 2;
            IF v_held < v_wanted AND p_expected_row_ordinal = 0 THEN
                PERFORM pg_advisory_lock(1702, v_held + 1);
                RAISE EXCEPTION 'could not serialize access (replay fixture fault %)', v_held + 1
                    USING ERRCODE = '40001';
            END IF;
            RETURN v_page.body;
        END $$
        """,
        "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA synchro FROM PUBLIC",
        "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA synchro_replay FROM PUBLIC",
        "GRANT EXECUTE ON FUNCTION synchro.synchro_schema_manifest() TO synchro_seed",
        "GRANT EXECUTE ON FUNCTION synchro.synchro_portable_seed_manifest(integer) TO synchro_seed",
        "GRANT EXECUTE ON FUNCTION synchro.synchro_portable_seed_scope(text, text, text, bigint, integer) "
            + "TO synchro_seed",
    ]
}

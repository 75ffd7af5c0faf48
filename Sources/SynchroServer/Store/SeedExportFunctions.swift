/// Upstream's portable-seed SQL interface on the reference server's PostgreSQL store (issue #17): in schema
/// `synchro`, `synchro_schema_manifest()`, `synchro_portable_seed_manifest(p_page_limit)`,
/// `synchro_portable_seed_scope(…)`, `synchro_register_shared_scope` and `synchro_unregister_shared_scope`, with
/// upstream's argument lists, `STRICT`, `SECURITY DEFINER` and `SET search_path = pg_catalog, synchro`, and the
/// NOLOGIN role `synchro_seed` with `EXECUTE` on exactly the three export functions
/// (`docs/upstream/postgresql-extension.md` §1–§4).
///
/// `seedkit export --source postgresql://` then runs against the server's own database exactly as against a real
/// deployment, and gets the same manifest, pages, tokens, receipts and digests as from `POST /operator/seed/*`
/// for the same data: the functions read the same materialized rows (`projection` ∩ `membership`) and sign with the
/// same keys. Unlike the HTTP export they store nothing (the transaction is READ ONLY): the session lives in a
/// signed transaction-local setting, pages are read straight from the snapshot in identity order (keyset on the
/// identity after the previous page, so an export reads each row once), and connect validates a receipt from its
/// own contents (``SeedReceiptValidation``).
///
/// Installed (replaced) every time a server opens the store, under the writer lock.
enum SeedExportFunctions {
    /// The whole installation script.
    static var script: String {
        [sharedScopes, SeedExportSQLHelpers.primitives, SeedExportSQLHelpers.exportPieces, KeptScopeDigests.script,
         schemaManifest, exportManifest, scopePage, registration, grants].joined(separator: "\n")
    }

    /// Which shared scopes are declared and which of them portable: the dataset's, plus any an operator registers.
    static let sharedScopes = #"""
        CREATE SCHEMA IF NOT EXISTS synchro;
        CREATE TABLE IF NOT EXISTS seedkit_server.shared_scopes(
            scope_id text COLLATE "C" PRIMARY KEY,
            portable boolean NOT NULL DEFAULT false
        );
        """#

    static let schemaManifest = #"""
        CREATE OR REPLACE FUNCTION synchro.synchro_schema_manifest() RETURNS jsonb
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, synchro AS $f$
        DECLARE
            v_manifest record;
        BEGIN
            SELECT version, hash, manifest INTO v_manifest FROM seedkit_server.manifests ORDER BY version DESC LIMIT 1;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'loading schema manifest: no manifest is published' USING ERRCODE = 'XX000';
            END IF;
            RETURN jsonb_build_object('schema_version', v_manifest.version, 'schema_hash', v_manifest.hash,
                'server_time', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'manifest', convert_from(v_manifest.manifest, 'UTF8')::jsonb);
        END
        $f$;
        """#

    /// The first call of a transaction fixes the export: boundary (the materialized stream position its snapshot
    /// sees), schema, lineage, every portable scope's cardinality and digest; later calls return the same manifest.
    static let exportManifest = #"""
        CREATE OR REPLACE FUNCTION synchro.synchro_portable_seed_manifest(p_page_limit integer DEFAULT 1000)
        RETURNS jsonb LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = pg_catalog, synchro AS $f$
        DECLARE
            v_state jsonb;
            v_schema record;
            v_scope record;
            v_cardinality bigint;
            v_digest bytea;
            v_entries jsonb := '[]';
            v_digests jsonb := '{}';
            v_body jsonb;
            v_hash text;
            v_full jsonb;
        BEGIN
            IF p_page_limit < 1 OR p_page_limit > 1000 THEN
                RETURN seedkit_server.seed_invalid_request('portable seed limit must be between 1 and 1000');
            END IF;
            IF NOT seedkit_server.seed_transaction_valid() THEN
                RAISE EXCEPTION 'portable seed transaction is invalid: portable seed requires SERIALIZABLE READ ONLY DEFERRABLE'
                    USING ERRCODE = 'XX000';
            END IF;
            v_state := seedkit_server.seed_state_load('synchro.seed_export_state', 'session');
            IF v_state IS NOT NULL THEN
                IF (v_state ->> 'page_limit')::integer <> p_page_limit THEN
                    RETURN seedkit_server.seed_invalid_request('portable seed page limit is fixed for the export');
                END IF;
                RETURN v_state -> 'manifest';
            END IF;
            SELECT version, hash INTO v_schema FROM seedkit_server.manifests ORDER BY version DESC LIMIT 1;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'loading portable seed schema: no manifest is published' USING ERRCODE = 'XX000';
            END IF;
            v_state := jsonb_build_object(
                'kind', 'session',
                'transaction_id', pg_current_xact_id()::text,
                'export_id', gen_random_uuid()::text,
                'transaction_nonce', seedkit_server.seed_base64url(
                    uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid())),
                'schema_version', v_schema.version,
                'schema_hash', v_schema.hash,
                'registry_generation', seedkit_server.seed_meta_integer('registry_generation'),
                'stream_generation', seedkit_server.seed_meta_integer('stream_generation'),
                'membership_generation', seedkit_server.seed_meta_integer('membership_generation'),
                'retention_generation', seedkit_server.seed_meta_integer('retention_generation'),
                'snapshot_boundary', seedkit_server.seed_boundary(
                    coalesce(seedkit_server.seed_meta_integer('stream_position'), 0)),
                'page_limit', p_page_limit,
                'issued_at', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
            -- A scope's kept digest (KeptScopeDigests: forgotten in the transaction of any membership change) is
            -- the digest this snapshot would compute; without one for this schema hash, it is computed here.
            FOR v_scope IN
                SELECT s.scope_id, k.cardinality, k.digest
                FROM seedkit_server.shared_scopes s
                LEFT JOIN seedkit_server.kept_scope_digests k
                       ON k.scope_id = s.scope_id AND k.schema_hash = v_schema.hash
                WHERE s.portable ORDER BY s.scope_id
            LOOP
                v_cardinality := v_scope.cardinality;
                v_digest := v_scope.digest;
                IF v_digest IS NULL THEN
                    SELECT d.cardinality, d.digest INTO v_cardinality, v_digest
                      FROM seedkit_server.seed_scope_digest(v_scope.scope_id, decode(v_schema.hash, 'hex')) d;
                END IF;
                v_entries := v_entries || jsonb_build_array(jsonb_build_object(
                    'id', v_scope.scope_id,
                    'registry_generation', v_state -> 'registry_generation',
                    'membership_generation', v_state -> 'membership_generation',
                    'retention_generation', v_state -> 'retention_generation',
                    'cardinality', v_cardinality,
                    'checksum', seedkit_server.seed_checksum(v_digest)));
                v_digests := v_digests || jsonb_build_object(v_scope.scope_id, jsonb_build_object(
                    'cardinality', v_cardinality, 'digest', encode(v_digest, 'hex')));
            END LOOP;
            v_body := jsonb_build_object(
                'export_id', v_state -> 'export_id', 'schema_version', v_state -> 'schema_version',
                'schema_hash', v_state -> 'schema_hash', 'stream_generation', v_state -> 'stream_generation',
                'snapshot_boundary', v_state -> 'snapshot_boundary', 'page_limit', p_page_limit,
                'portable_scopes', v_entries);
            v_hash := encode(sha256(convert_to('synchro:v3:seed-export-manifest:v1', 'UTF8') || '\x00'::bytea
                || convert_to(seedkit_server.seed_canonical(v_body), 'UTF8')), 'hex');
            v_state := v_state || jsonb_build_object('export_manifest_hash', v_hash, 'scopes', v_digests);
            SELECT coalesce(jsonb_agg(e || jsonb_build_object(
                       'continuation', seedkit_server.seed_receipt(v_state, e ->> 'id'),
                       'page_token', seedkit_server.seed_page_token(v_state, e ->> 'id', 0)) ORDER BY i), '[]')
              INTO v_full FROM jsonb_array_elements(v_entries) WITH ORDINALITY AS a(e, i);
            v_state := v_state || jsonb_build_object('manifest',
                v_body || jsonb_build_object('export_manifest_hash', v_hash, 'portable_scopes', v_full));
            PERFORM seedkit_server.seed_state_save('synchro.seed_export_state', v_state);
            RETURN v_state -> 'manifest';
        END
        $f$;
        """#

    /// Upstream's checks in upstream's order, each answered as upstream answers it (a SQL error or a JSON
    /// `invalid_request`); a page is the slice `[ordinal, ordinal + limit)` of the scope's live rows in identity
    /// order, read after the previous page's last identity when the session remembers it (OFFSET otherwise).
    ///
    /// The page is one set-based query that splices the stored canonical octets (`projection.pk`, `projection.row`,
    /// `projection.row_digest`, written by the materializer in the transaction that materialized the row) into the
    /// exact text the HTTP export's ``SeedExportPage`` writes: no row is parsed, rebuilt or re-canonicalized here.
    /// The result type is `json`, which keeps that text as built (a `jsonb` result would be parsed, reordered and
    /// printed again); the members and their JSON types are upstream's (`docs/decisions.md`).
    static let scopePage = #"""
        DO $drop$ BEGIN
            -- Earlier installations returned jsonb; CREATE OR REPLACE cannot change a result type.
            IF EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
                       WHERE n.nspname = 'synchro' AND p.proname = 'synchro_portable_seed_scope'
                         AND p.prorettype = 'pg_catalog.jsonb'::pg_catalog.regtype) THEN
                DROP FUNCTION synchro.synchro_portable_seed_scope(text, text, text, bigint, integer);
            END IF;
        END $drop$;
        CREATE OR REPLACE FUNCTION synchro.synchro_portable_seed_scope(
            p_scope_id text, p_page_token text, p_continuation_receipt text, p_expected_row_ordinal bigint,
            p_limit integer DEFAULT 1000)
        RETURNS json LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = pg_catalog, synchro AS $f$
        DECLARE
            v_state jsonb;
            v_cardinality bigint;
            v_cursor jsonb;
            v_after bytea;
            v_keys jsonb;
            v_records text;
            v_count bigint;
            v_incomplete bigint;
            v_last bytea;
            v_end bigint;
            v_more boolean;
            v_issued_token text;
            v_first_token text;
            v_issued_receipt text;
            v_next_token text;
        BEGIN
            IF btrim(p_scope_id) = '' THEN
                RAISE EXCEPTION 'shared scope_id must not be empty' USING ERRCODE = 'XX000';
            ELSIF starts_with(btrim(p_scope_id), 'user:') THEN
                RAISE EXCEPTION 'shared scope_id must not use the reserved user: prefix' USING ERRCODE = 'XX000';
            ELSIF p_limit < 1 OR p_limit > 1000 THEN
                RETURN seedkit_server.seed_invalid_request('portable seed limit must be between 1 and 1000')::json;
            ELSIF p_expected_row_ordinal < 0 THEN
                RETURN seedkit_server.seed_invalid_request('portable seed expected row ordinal is invalid')::json;
            END IF;
            v_state := seedkit_server.seed_state_load('synchro.seed_export_state', 'session');
            -- The tokens this export already issued for this scope, read from the signed session and cursor (both
            -- bound to this transaction): the manifest's receipt and first page token, and the previous page's next
            -- token. Each is exactly what seed_receipt / seed_page_token would compute again from the same state,
            -- which they are computed from only when absent (an ordinal no previous page of this call sequence gave).
            v_cursor := seedkit_server.seed_state_load('synchro.seed_export_cursor', 'cursor');
            IF v_cursor ->> 'export_id' = v_state ->> 'export_id' AND v_cursor ->> 'scope_id' = p_scope_id
                AND (v_cursor ->> 'ordinal')::bigint = p_expected_row_ordinal THEN
                v_after := decode(v_cursor ->> 'identity', 'hex');
                v_issued_token := v_cursor ->> 'page_token';
            END IF;
            SELECT e ->> 'continuation', CASE WHEN p_expected_row_ordinal = 0 THEN e ->> 'page_token' END
              INTO v_issued_receipt, v_first_token
              FROM jsonb_array_elements(v_state -> 'manifest' -> 'portable_scopes') e
             WHERE e ->> 'id' = p_scope_id COLLATE "C";
            v_issued_token := coalesce(v_issued_token, v_first_token);
            IF v_state IS NULL THEN
                RETURN seedkit_server.seed_invalid_request('portable seed export transaction is unavailable')::json;
            ELSIF p_page_token = '' THEN
                RETURN seedkit_server.seed_invalid_request('portable seed page token is required')::json;
            ELSIF p_continuation_receipt = '' THEN
                RETURN seedkit_server.seed_invalid_request('portable seed continuation receipt is required')::json;
            ELSIF NOT EXISTS (SELECT 1 FROM seedkit_server.shared_scopes
                              WHERE scope_id = p_scope_id COLLATE "C" AND portable) THEN
                RETURN seedkit_server.seed_invalid_request(format('scope %s is not portable', p_scope_id))::json;
            ELSIF NOT seedkit_server.seed_transaction_valid() THEN
                RETURN seedkit_server.seed_invalid_request(
                    'portable seed requires SERIALIZABLE READ ONLY DEFERRABLE')::json;
            ELSIF v_state -> 'scopes' -> p_scope_id IS NULL THEN
                RETURN seedkit_server.seed_invalid_request('portable seed scope state is missing')::json;
            ELSIF p_limit <> (v_state ->> 'page_limit')::integer THEN
                RETURN seedkit_server.seed_invalid_request('portable seed page limit does not match the export')::json;
            ELSIF NOT seedkit_server.seed_same(p_page_token, coalesce(v_issued_token,
                      seedkit_server.seed_page_token(v_state, p_scope_id, p_expected_row_ordinal))) THEN
                RETURN seedkit_server.seed_invalid_request('portable seed page token binding is invalid')::json;
            ELSIF NOT seedkit_server.seed_same(p_continuation_receipt, coalesce(v_issued_receipt,
                      seedkit_server.seed_receipt(v_state, p_scope_id))) THEN
                RETURN seedkit_server.seed_invalid_request(
                    'portable seed continuation receipt binding is invalid')::json;
            END IF;
            v_cardinality := (v_state -> 'scopes' -> p_scope_id ->> 'cardinality')::bigint;
            IF p_expected_row_ordinal > 0 AND p_expected_row_ordinal >= v_cardinality THEN
                RETURN seedkit_server.seed_invalid_request('portable seed page ordinal is outside the export')::json;
            END IF;
            -- Each table's key field, spelled as a JSON string once per page.
            -- The page is chosen on membership alone (a live member carries its row digest, layout 3) and each of
            -- its identities is then looked up in projection: the plan is a range of membership's key plus one key
            -- lookup a row whatever the table statistics say (a join planned from statistics read projection from
            -- its first row on every page, or worse after ANALYZE). A member whose projection row is missing, not
            -- live, or carries another digest yields no record, and the page fails as incomplete.
            SELECT jsonb_object_agg(t ->> 'table_id', to_json(t ->> 'primary_key_field_id')::text) INTO v_keys
              FROM seedkit_server.manifests m, jsonb_array_elements(convert_from(m.manifest, 'UTF8')::jsonb -> 'tables') t
             WHERE m.version = (v_state ->> 'schema_version')::bigint;
            IF v_after IS NULL THEN
                SELECT string_agg(r.record, ',' ORDER BY r.identity), count(*),
                       count(*) FILTER (WHERE r.record IS NULL), (array_agg(r.identity ORDER BY r.identity DESC))[1]
                  INTO v_records, v_count, v_incomplete, v_last
                  FROM (SELECT k.identity, seedkit_server.seed_record_text(
                                   p.table_id, v_keys ->> p.table_id, p.pk, p.row, p.server_version,
                                   CASE WHEN p.row_digest = k.row_digest THEN p.row_digest END) AS record
                        FROM (SELECT m.identity, m.row_digest FROM seedkit_server.membership m
                              WHERE m.scope_id = p_scope_id COLLATE "C" AND m.row_digest IS NOT NULL
                              ORDER BY m.identity OFFSET p_expected_row_ordinal LIMIT p_limit) k
                        LEFT JOIN LATERAL (SELECT * FROM seedkit_server.projection q
                                           WHERE q.identity = k.identity AND q.state = 0) p ON true) r;
            ELSE
                SELECT string_agg(r.record, ',' ORDER BY r.identity), count(*),
                       count(*) FILTER (WHERE r.record IS NULL), (array_agg(r.identity ORDER BY r.identity DESC))[1]
                  INTO v_records, v_count, v_incomplete, v_last
                  FROM (SELECT k.identity, seedkit_server.seed_record_text(
                                   p.table_id, v_keys ->> p.table_id, p.pk, p.row, p.server_version,
                                   CASE WHEN p.row_digest = k.row_digest THEN p.row_digest END) AS record
                        FROM (SELECT m.identity, m.row_digest FROM seedkit_server.membership m
                              WHERE m.scope_id = p_scope_id COLLATE "C" AND m.row_digest IS NOT NULL
                                AND m.identity > v_after
                              ORDER BY m.identity LIMIT p_limit) k
                        LEFT JOIN LATERAL (SELECT * FROM seedkit_server.projection q
                                           WHERE q.identity = k.identity AND q.state = 0) p ON true) r;
            END IF;
            IF v_incomplete > 0 THEN
                RAISE EXCEPTION 'verifying portable seed scope: a live row is incomplete' USING ERRCODE = 'XX000';
            END IF;
            -- The snapshot is the export's: a page shorter than the export promised means the data is damaged.
            IF v_count <> least(p_limit, greatest(0, v_cardinality - p_expected_row_ordinal)) THEN
                RAISE EXCEPTION 'portable seed scope changed inside its export transaction' USING ERRCODE = 'XX000';
            END IF;
            v_end := p_expected_row_ordinal + p_limit;
            v_more := v_end < v_cardinality;
            IF v_more THEN
                v_next_token := seedkit_server.seed_page_token(v_state, p_scope_id, v_end);
                PERFORM seedkit_server.seed_state_save('synchro.seed_export_cursor', jsonb_build_object(
                    'kind', 'cursor', 'transaction_id', v_state -> 'transaction_id',
                    'export_id', v_state -> 'export_id', 'scope_id', p_scope_id, 'ordinal', v_end,
                    'identity', encode(v_last, 'hex'), 'page_token', v_next_token));
            END IF;
            RETURN ('{"scope":' || to_json(p_scope_id)::text || ',"records":[' || coalesce(v_records, '')
                || '],"page_token":' || CASE WHEN v_more THEN to_json(v_next_token)::text ELSE 'null' END
                || ',"has_more":' || CASE WHEN v_more THEN 'true' ELSE 'false' END || '}')::json;
        END
        $f$;
        """#

    /// Shared-scope declaration, as upstream validates it. The reference server assigns the dataset's scopes to
    /// clients; these change which scopes exist and which are portable for the SQL export.
    static let registration = #"""
        CREATE OR REPLACE FUNCTION seedkit_server.seed_check_scope_id(p_scope_id text) RETURNS void
        LANGUAGE plpgsql IMMUTABLE STRICT AS $f$
        BEGIN
            IF btrim(p_scope_id) = '' THEN
                RAISE EXCEPTION 'shared scope_id must not be empty' USING ERRCODE = 'XX000';
            ELSIF starts_with(btrim(p_scope_id), 'user:') THEN
                RAISE EXCEPTION 'shared scope_id must not use the reserved user: prefix' USING ERRCODE = 'XX000';
            END IF;
        END
        $f$;

        CREATE OR REPLACE FUNCTION synchro.synchro_register_shared_scope(p_scope_id text, p_portable boolean DEFAULT false)
        RETURNS void LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = pg_catalog, synchro AS $f$
        BEGIN
            PERFORM seedkit_server.seed_check_scope_id(p_scope_id);
            PERFORM pg_advisory_xact_lock(\#(PostgresDialect.writerLockKey));
            INSERT INTO seedkit_server.shared_scopes AS s(scope_id, portable) VALUES (p_scope_id, p_portable)
                ON CONFLICT (scope_id) DO UPDATE SET portable = EXCLUDED.portable
                WHERE s.portable IS DISTINCT FROM EXCLUDED.portable;
        END
        $f$;

        CREATE OR REPLACE FUNCTION synchro.synchro_unregister_shared_scope(p_scope_id text)
        RETURNS void LANGUAGE plpgsql STRICT SECURITY DEFINER SET search_path = pg_catalog, synchro AS $f$
        BEGIN
            PERFORM seedkit_server.seed_check_scope_id(p_scope_id);
            PERFORM pg_advisory_xact_lock(\#(PostgresDialect.writerLockKey));
            DELETE FROM seedkit_server.shared_scopes WHERE scope_id = p_scope_id COLLATE "C";
        END
        $f$;
        """#

    /// Roles as upstream's finalize block sets them: PUBLIC loses everything, `synchro_seed` (created when absent;
    /// an administrator may create it first when the server's login lacks CREATEROLE) may use the schema and run
    /// exactly the three export functions.
    static let grants = #"""
        DO $roles$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'synchro_seed') THEN
                CREATE ROLE synchro_seed NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
            END IF;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
        END $roles$;
        REVOKE ALL ON SCHEMA synchro FROM PUBLIC;
        REVOKE ALL ON ALL FUNCTIONS IN SCHEMA synchro FROM PUBLIC;
        REVOKE ALL ON ALL FUNCTIONS IN SCHEMA seedkit_server FROM PUBLIC;
        GRANT USAGE ON SCHEMA synchro TO synchro_seed;
        GRANT EXECUTE ON FUNCTION synchro.synchro_schema_manifest(), synchro.synchro_portable_seed_manifest(integer),
            synchro.synchro_portable_seed_scope(text, text, text, bigint, integer) TO synchro_seed;
        """#

    /// Installs (or replaces) the functions and records the dataset's portable scopes (a scope an operator
    /// unregistered comes back when a server starts with a dataset that declares it).
    static func install(store: ServerStore, dataset: Dataset) throws {
        try store.db.execute(script)
        let insert = try store.db.cachedStatement("INSERT OR IGNORE INTO shared_scopes(scope_id, portable) VALUES (?, true)")
        for scope in dataset.portableScopes {
            try insert.run([.text(scope)])
        }
    }
}

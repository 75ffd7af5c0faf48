/// The private building blocks of the PostgreSQL seed export functions (``SeedExportFunctions``), in the server's
/// own schema: the export role has no `USAGE` on it, so only the `SECURITY DEFINER` functions of `synchro` (running
/// as their owner, the server's login) reach them.
///
/// Everything here reproduces, in SQL, one piece of the HTTP operator export so that both produce the same octets
/// for the same data: RFC 8785 text (``canonical``), HMAC-SHA-256 from `sha256()` (``hmac``), the token envelope
/// of ``TokenSigner``, the key IDs of ``SeedKeyIDs``, the boundary of ``SeedSnapshotBoundary/init(streamPosition:)``,
/// the payloads of ``SeedExportTokens`` and the scope digest of ``ScopeDigestCache``.
enum SeedExportSQLHelpers {
    /// Counters, keys, RFC 8785 text, HMAC and base64url.
    static let primitives = #"""
        CREATE OR REPLACE FUNCTION seedkit_server.seed_meta_integer(p_key text) RETURNS bigint
        LANGUAGE sql STABLE AS $f$
            SELECT convert_from(value, 'UTF8')::bigint FROM seedkit_server.server_meta WHERE key = p_key COLLATE "C"
        $f$;

        CREATE OR REPLACE FUNCTION seedkit_server.seed_key(p_purpose text) RETURNS bytea
        LANGUAGE plpgsql STABLE AS $f$
        DECLARE
            v_key bytea;
        BEGIN
            SELECT value INTO v_key FROM seedkit_server.server_meta WHERE key = ('key:' || p_purpose) COLLATE "C";
            IF v_key IS NULL OR length(v_key) <> 32 THEN
                RAISE EXCEPTION 'portable seed token key is unavailable' USING ERRCODE = 'XX000';
            END IF;
            RETURN v_key;
        END
        $f$;

        -- SeedKeyIDs: "k" || hex(first 8 octets of SHA-256(purpose || 0x00 || key)).
        CREATE OR REPLACE FUNCTION seedkit_server.seed_key_id(p_purpose text) RETURNS text
        LANGUAGE sql STABLE AS $f$
            SELECT 'k' || encode(substring(sha256(convert_to(p_purpose, 'UTF8') || '\x00'::bytea
                || seedkit_server.seed_key(p_purpose)) FROM 1 FOR 8), 'hex')
        $f$;

        -- RFC 2104 over sha256(): the keys are 32 octets, under SHA-256's 64-octet block.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_hmac(p_key bytea, p_message bytea) RETURNS bytea
        LANGUAGE plpgsql IMMUTABLE STRICT AS $f$
        DECLARE
            v_block bytea := CASE WHEN length(p_key) > 64 THEN sha256(p_key) ELSE p_key END;
            v_inner bytea;
            v_outer bytea;
        BEGIN
            v_block := v_block || decode(repeat('00', 64 - length(v_block)), 'hex');
            v_inner := v_block;
            v_outer := v_block;
            FOR i IN 0..63 LOOP
                v_inner := set_byte(v_inner, i, get_byte(v_block, i) # 54);
                v_outer := set_byte(v_outer, i, get_byte(v_block, i) # 92);
            END LOOP;
            RETURN sha256(v_outer || sha256(v_inner || p_message));
        END
        $f$;

        CREATE OR REPLACE FUNCTION seedkit_server.seed_base64url(p_octets bytea) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT AS $f$
            SELECT translate(encode(p_octets, 'base64'), E'+/=\n', '-_')
        $f$;

        -- RFC 8785 text of a value made of objects, arrays, strings, integers, booleans and null (every value these
        -- functions sign or hash): members ordered by their names' octets (all names are ASCII, where UTF-16 order is
        -- the same), strings escaped as PostgreSQL's JSON output escapes them, which is RFC 8785's escaping.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_canonical(p_value jsonb) RETURNS text
        LANGUAGE sql IMMUTABLE STRICT AS $f$
            SELECT CASE jsonb_typeof(p_value)
                WHEN 'object' THEN '{' || coalesce((
                    SELECT string_agg(to_json(k)::text || ':' || seedkit_server.seed_canonical(p_value -> k), ','
                        ORDER BY convert_to(k, 'UTF8'))
                    FROM jsonb_object_keys(p_value) AS k), '') || '}'
                WHEN 'array' THEN '[' || coalesce((
                    SELECT string_agg(seedkit_server.seed_canonical(e), ',' ORDER BY i)
                    FROM jsonb_array_elements(p_value) WITH ORDINALITY AS a(e, i)), '') || ']'
                ELSE p_value::text
            END
        $f$;

        -- TokenSigner: prefix.base64url(P).base64url(HMAC(key, purpose || 0x00 || P)), P the RFC 8785 payload.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_token(p_prefix text, p_purpose text, p_payload jsonb)
        RETURNS text LANGUAGE plpgsql STABLE AS $f$
        DECLARE
            v_octets bytea := convert_to(seedkit_server.seed_canonical(p_payload), 'UTF8');
        BEGIN
            RETURN p_prefix || '.' || seedkit_server.seed_base64url(v_octets) || '.' || seedkit_server.seed_base64url(
                seedkit_server.seed_hmac(seedkit_server.seed_key(p_purpose),
                    convert_to(p_purpose, 'UTF8') || '\x00'::bytea || v_octets));
        END
        $f$;

        -- Compares a presented token with the one these functions would issue, through their hashes: the time taken
        -- says nothing about where a forged MAC first differs.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_same(p_presented text, p_expected text) RETURNS boolean
        LANGUAGE sql IMMUTABLE STRICT AS $f$
            SELECT sha256(convert_to(p_presented, 'UTF8')) = sha256(convert_to(p_expected, 'UTF8'))
        $f$;

        CREATE OR REPLACE FUNCTION seedkit_server.seed_invalid_request(p_message text) RETURNS jsonb
        LANGUAGE sql IMMUTABLE STRICT AS $f$
            SELECT jsonb_build_object('error', jsonb_build_object(
                'code', 'invalid_request', 'message', p_message, 'retryable', false))
        $f$;

        -- Upstream's transaction check: the exact setting texts.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_transaction_valid() RETURNS boolean
        LANGUAGE sql STABLE AS $f$
            SELECT current_setting('transaction_isolation') = 'serializable'
                AND current_setting('transaction_read_only') = 'on'
                AND current_setting('transaction_deferrable') = 'on'
        $f$;
        """#

    /// Boundary, checksum, token payloads, scope digests and the transaction-local export session.
    static let exportPieces = #"""
        -- SeedSnapshotBoundary(streamPosition:): 0 is generation_start; otherwise the position spelled as an LSN.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_boundary(p_position bigint) RETURNS jsonb
        LANGUAGE sql IMMUTABLE STRICT AS $f$
            SELECT CASE WHEN p_position <= 0 THEN jsonb_build_object('position_kind', 'generation_start')
                ELSE jsonb_build_object('position_kind', 'transaction_end', 'commit_lsn',
                    upper(to_hex(p_position >> 32)) || '/' || upper(to_hex(p_position & 4294967295)))
            END
        $f$;

        CREATE OR REPLACE FUNCTION seedkit_server.seed_checksum(p_digest bytea) RETURNS jsonb
        LANGUAGE sql IMMUTABLE STRICT AS $f$
            SELECT jsonb_build_object('algorithm', 'sha256', 'version', 1, 'encoding', 'hex',
                'digest', encode(p_digest, 'hex'))
        $f$;

        -- The lineage members every token binds, counters as decimal strings.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_lineage(p_state jsonb) RETURNS jsonb
        LANGUAGE sql IMMUTABLE STRICT AS $f$
            SELECT jsonb_build_object(
                'registry_generation', p_state ->> 'registry_generation',
                'membership_generation', p_state ->> 'membership_generation',
                'retention_generation', p_state ->> 'retention_generation',
                'stream_generation', p_state ->> 'stream_generation',
                'snapshot_boundary', p_state -> 'snapshot_boundary')
        $f$;

        CREATE OR REPLACE FUNCTION seedkit_server.seed_page_token(p_state jsonb, p_scope text, p_ordinal bigint)
        RETURNS text LANGUAGE sql STABLE AS $f$
            SELECT seedkit_server.seed_token('sp1', 'synchro:v3:seed-page:v1', jsonb_build_object(
                'kind', 'portable_seed_page', 'version', 1,
                'key_id', seedkit_server.seed_key_id('synchro:v3:seed-page:v1'),
                'export_id', p_state ->> 'export_id', 'transaction_nonce', p_state ->> 'transaction_nonce',
                'export_manifest_hash', p_state ->> 'export_manifest_hash', 'schema_hash', p_state ->> 'schema_hash',
                'scope_id', p_scope, 'next_row_ordinal', p_ordinal::text, 'page_limit', p_state ->> 'page_limit')
                || seedkit_server.seed_lineage(p_state))
        $f$;

        CREATE OR REPLACE FUNCTION seedkit_server.seed_receipt(p_state jsonb, p_scope text)
        RETURNS text LANGUAGE sql STABLE AS $f$
            SELECT seedkit_server.seed_token('sc1', 'synchro:v3:seed-continuation:v1', jsonb_build_object(
                'kind', 'portable_seed_continuation', 'version', 1,
                'key_id', seedkit_server.seed_key_id('synchro:v3:seed-continuation:v1'),
                'export_id', p_state ->> 'export_id', 'export_manifest_hash', p_state ->> 'export_manifest_hash',
                'schema_hash', p_state ->> 'schema_hash', 'scope_id', p_scope,
                'cardinality', p_state -> 'scopes' -> p_scope ->> 'cardinality',
                'checksum', seedkit_server.seed_checksum(decode(p_state -> 'scopes' -> p_scope ->> 'digest', 'hex')),
                'issued_at', p_state ->> 'issued_at')
                || seedkit_server.seed_lineage(p_state))
        $f$;

        -- The scope digest of spec/integrity.md §4.6 over the scope's live materialized rows in identity order.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_scope_digest(
            p_scope text, p_schema_hash bytea, OUT cardinality bigint, OUT digest bytea)
        LANGUAGE plpgsql STABLE AS $f$
        DECLARE
            v_bad bigint;
            v_entries bytea;
        BEGIN
            SELECT count(*), count(*) FILTER (WHERE p.row IS NULL OR p.row_digest IS NULL OR length(p.row_digest) <> 32),
                   coalesce(string_agg(int8send(length(m.identity)::bigint) || m.identity || p.row_digest, ''::bytea
                       ORDER BY m.identity), ''::bytea)
              INTO cardinality, v_bad, v_entries
              FROM seedkit_server.membership m JOIN seedkit_server.projection p ON p.identity = m.identity
             WHERE m.scope_id = p_scope COLLATE "C" AND p.state = 0;
            IF v_bad > 0 THEN
                RAISE EXCEPTION 'verifying portable seed scope: a live row has no valid digest' USING ERRCODE = 'XX000';
            END IF;
            digest := sha256(convert_to('synchro:v3:scope-digest:v1', 'UTF8') || '\x00'::bytea || p_schema_hash
                || int8send(length(convert_to(p_scope, 'UTF8'))::bigint) || convert_to(p_scope, 'UTF8')
                || int8send(cardinality) || v_entries);
        END
        $f$;

        -- One record of a page as the HTTP export's SeedExportPage writes it, {table, pk: {key field: value},
        -- row_checksum, server_version, row}, spliced from the stored canonical octets (p_key is the key field as a
        -- JSON string). NULL when anything is missing or the digest is not 32 octets: the page refuses it. A plain
        -- STABLE SQL expression, so the planner inlines it into the page query (no call per row).
        DROP FUNCTION IF EXISTS seedkit_server.seed_record(text, bytea, bytea, text, bytea, jsonb);
        CREATE OR REPLACE FUNCTION seedkit_server.seed_record_text(
            p_table text, p_key text, p_pk bytea, p_row bytea, p_version text, p_digest bytea)
        RETURNS text LANGUAGE sql STABLE AS $f$
            SELECT CASE WHEN length(p_digest) = 32 THEN
                '{"table":' || to_json(p_table)::text || ',"pk":{' || p_key || ':' || convert_from(p_pk, 'UTF8')
                || '},"row_checksum":{"algorithm":"sha256","version":1,"encoding":"hex","digest":"'
                || encode(p_digest, 'hex') || '"},"server_version":' || to_json(p_version)::text
                || ',"row":' || convert_from(p_row, 'UTF8') || '}'
            END
        $f$;

        -- The export session lives in transaction-local settings, which any role can set: each is stored as
        -- hex(HMAC(seed page key, kind domain || 0x00 || P)) ':' P, and bound to the transaction's ID.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_state_save(p_setting text, p_state jsonb) RETURNS void
        LANGUAGE plpgsql VOLATILE AS $f$
        DECLARE
            v_text text := seedkit_server.seed_canonical(p_state);
        BEGIN
            PERFORM set_config(p_setting, encode(seedkit_server.seed_hmac(
                seedkit_server.seed_key('synchro:v3:seed-page:v1'),
                convert_to('synchro:v3:seed-export-session:v1', 'UTF8') || '\x00'::bytea
                    || convert_to(v_text, 'UTF8')), 'hex') || ':' || v_text, true);
        END
        $f$;

        -- The state saved under p_setting in this transaction with kind p_kind, or NULL.
        CREATE OR REPLACE FUNCTION seedkit_server.seed_state_load(p_setting text, p_kind text) RETURNS jsonb
        LANGUAGE plpgsql VOLATILE AS $f$
        DECLARE
            v_saved text := current_setting(p_setting, true);
            v_text text;
            v_state jsonb;
        BEGIN
            IF v_saved IS NULL OR length(v_saved) < 66 OR substring(v_saved FROM 65 FOR 1) <> ':' THEN
                RETURN NULL;
            END IF;
            v_text := substring(v_saved FROM 66);
            IF NOT seedkit_server.seed_same(substring(v_saved FROM 1 FOR 64), encode(seedkit_server.seed_hmac(
                seedkit_server.seed_key('synchro:v3:seed-page:v1'),
                convert_to('synchro:v3:seed-export-session:v1', 'UTF8') || '\x00'::bytea
                    || convert_to(v_text, 'UTF8')), 'hex')) THEN
                RETURN NULL;
            END IF;
            v_state := v_text::jsonb;
            IF v_state ->> 'kind' IS DISTINCT FROM p_kind
                OR v_state ->> 'transaction_id' IS DISTINCT FROM pg_current_xact_id()::text THEN
                RETURN NULL;
            END IF;
            RETURN v_state;
        END
        $f$;
        """#
}

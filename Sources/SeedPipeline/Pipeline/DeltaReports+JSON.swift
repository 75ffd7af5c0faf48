import SeedSources
import SynchroProtocol

/// The JSON of a delta run's export, verification and rehearsal: the pipeline's summary and evidence carry them in
/// the members a Synchro run fills from its own reports (docs/pipelines.md, "Delta source"), and `seedkit rehearse
/// --source delta:… --json` prints the rehearsal the same way. Counts, digests and row keys only: never a cursor,
/// a credential or a row's values.
extension DeltaExportReport {
    /// `{"bytes","entities":[{"digest","entity","pages","resets","rows","table"}],"rows","sha256"}`.
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("rows", PipelineJSON.integer(totalRows)),
            JSONMember("bytes", PipelineJSON.integer(bytes)),
            JSONMember("sha256", .string(sha256)),
            JSONMember("entities", .array(entities.map { entity in
                .object(JSONObject([
                    JSONMember("entity", .string(entity.name)), JSONMember("table", .string(entity.table)),
                    JSONMember("rows", PipelineJSON.integer(entity.rows)), JSONMember("digest", .string(entity.digest)),
                    JSONMember("pages", PipelineJSON.integer(Int64(entity.pages))),
                    JSONMember("resets", PipelineJSON.integer(Int64(entity.resets))),
                ]))
            })),
        ]))
    }

    /// Rows over every entity type.
    public var totalRows: Int64 { entities.reduce(0) { $0 + $1.rows } }

    /// The delta verification of this export's seed: `failures` as ``DeltaExporter/verify(path:)`` gives them
    /// (`check` or `check:entity`). `{"entities":[{"digest_verified","entity","rows"}],"findings":[{"check",
    /// "entity"}],"ok"}`: an entity type's digest is verified when no finding names its digest or row count.
    public func verificationJSON(failures: [String]) -> JSONValue {
        let findings = failures.map { failure in
            let parts = failure.split(separator: ":", maxSplits: 1).map(String.init)
            return (check: parts[0], entity: parts.count > 1 ? parts[1] : nil)
        }
        return .object(JSONObject([
            JSONMember("ok", .bool(findings.isEmpty)),
            JSONMember("findings", .array(findings.map { finding in
                .object(JSONObject([
                    JSONMember("check", .string(finding.check)),
                    JSONMember("entity", finding.entity.map(JSONValue.string) ?? .null),
                ]))
            })),
            JSONMember("entities", .array(entities.map { entity in
                let broken = findings.contains { $0.entity == entity.name && ["digest", "row_count"].contains($0.check) }
                return .object(JSONObject([
                    JSONMember("entity", .string(entity.name)), JSONMember("rows", PipelineJSON.integer(entity.rows)),
                    JSONMember("digest_verified", .bool(!broken)),
                ]))
            })),
        ]))
    }
}

extension DeltaRehearsalReport {
    /// `{"differences":[{"entity","key","kind"}],"entities":[{"entity","full_pages","full_rows","warm_pages",
    /// "warmed_rows"}],"kind":"delta","passed"}`. A difference names the row by its key, never its values.
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("kind", .string("delta")), JSONMember("passed", .bool(passed)),
            JSONMember("entities", .array(entities.map { entity in
                .object(JSONObject([
                    JSONMember("entity", .string(entity.name)),
                    JSONMember("full_pages", PipelineJSON.integer(Int64(entity.fullPages))),
                    JSONMember("full_rows", PipelineJSON.integer(entity.fullRows)),
                    JSONMember("warm_pages", PipelineJSON.integer(Int64(entity.warmPages))),
                    JSONMember("warmed_rows", PipelineJSON.integer(entity.warmedRows)),
                ]))
            })),
            JSONMember("differences", .array(differences.map { difference in
                .object(JSONObject([
                    JSONMember("entity", .string(difference.entity)), JSONMember("key", .string(difference.key)),
                    JSONMember("kind", .string(difference.kind.rawValue)),
                ]))
            })),
        ]))
    }
}

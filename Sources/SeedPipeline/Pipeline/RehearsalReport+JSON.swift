import SynchroClient
import SynchroProtocol

extension RehearsalReport {
    /// Rows the seed carried, over every seeded scope.
    public var seededRows: Int64 {
        scopes.reduce(0) { $0 + $1.seededRows }
    }

    /// `{"first_sync":…,"passed":…,"rebuild":…|null,"scopes":[…],"seconds":…,"seeded_rows":…}`: what a device
    /// would experience, counts only.
    public var json: JSONValue {
        .object(JSONObject([
            JSONMember("passed", .bool(passed)),
            JSONMember("seeded_rows", PipelineJSON.integer(seededRows)),
            JSONMember("scopes", .array(scopes.map(\.json))),
            JSONMember("first_sync", firstSync.rehearsalJSON),
            JSONMember("rebuild", rebuild?.rehearsalJSON ?? .null),
            JSONMember("seconds", PipelineJSON.seconds(seconds)),
        ]))
    }
}

extension RehearsalReport.Scope {
    /// The device outcome of the scope in words: `continued, verified, matches rebuild`.
    public var outcome: String {
        var words = [continued ? "continued" : "not continued"]
        if rebuilt { words.append("rebuilt") }
        words.append(verified ? "verified" : "not verified")
        if let matchesRebuild { words.append(matchesRebuild ? "matches rebuild" : "differs from rebuild") }
        return words.joined(separator: ", ")
    }

    var json: JSONValue {
        .object(JSONObject([
            JSONMember("id", .string(id)),
            JSONMember("seeded_rows", PipelineJSON.integer(seededRows)),
            JSONMember("continued", .bool(continued)),
            JSONMember("rebuilt", .bool(rebuilt)),
            JSONMember("verified", .bool(verified)),
            JSONMember("matches_rebuild", matchesRebuild.map(JSONValue.bool) ?? .null),
        ]))
    }
}

extension SyncSummary {
    /// Requests by endpoint, rows applied and scopes rebuilt or verified.
    var rehearsalJSON: JSONValue {
        .object(JSONObject([
            JSONMember("requests", .object(JSONObject([
                JSONMember("connect", PipelineJSON.integer(connectRequests)),
                JSONMember("pull", PipelineJSON.integer(pullRequests)),
                JSONMember("push", PipelineJSON.integer(pushRequests)),
                JSONMember("rebuild", PipelineJSON.integer(rebuildRequests)),
            ]))),
            JSONMember("rows_applied", PipelineJSON.integer(rowsApplied)),
            JSONMember("retries", PipelineJSON.integer(retries)),
            JSONMember("scopes_rebuilt", .array(scopesRebuilt.map(JSONValue.string))),
            JSONMember("scopes_verified", .array(scopesVerified.map(JSONValue.string))),
        ]))
    }
}

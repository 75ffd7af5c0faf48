import Foundation
import SeedPipeline
import SynchroClient
import SynchroHTTP
import SynchroProtocol

/// Progress and results: progress lines on standard error when it is a terminal (every event with `--verbose`,
/// also with `--json`), JSON Lines events on standard output with `--json`, the summary on standard output
/// unless quiet. Nothing printed carries a token, cursor or row value.
struct SyncOutput: Sendable {
    let json: Bool
    let progress: Bool
    let console: Console
    /// The server's base URL, which names the URL of a retried request.
    let server: String
    /// Attempts of one request (`--retries` + 1), shown with each retry.
    let attempts: Int

    init(json: Bool, console: Console, server: String = "", attempts: Int = 1) {
        self.json = json
        self.console = console
        self.server = server
        self.attempts = attempts
        progress = !json && console.drawsProgress
    }

    var event: @Sendable (SyncEvent) -> Void {
        let (json, progress, console, server, attempts) = (json, progress, console, server, attempts)
        return { event in
            if case .retryScheduled(let phase, let attempt, let status, let delay, let failure) = event {
                // Every retry is visible as it happens: one line on standard error and, with --json, one event.
                let retry = NetworkRetry(
                    attempt: attempt, attempts: max(attempt, attempts),
                    rule: status.map { "http_\($0)" } ?? failure?.rule ?? "transport",
                    url: NetworkFailure.displayURL(server) + "/sync/" + (phase == .renew ? "push" : phase.rawValue),
                    delay: delay)
                if json {
                    Self.line([
                        "event": .string("retry_scheduled"), "phase": .string(phase.rawValue),
                        "attempt": Self.number(attempt), "attempts": Self.number(retry.attempts),
                        "status": status.map(Self.number) ?? .null, "rule": .string(retry.rule),
                        "url": .string(retry.url), "delay_ms": .number(JSONNumber(Self.milliseconds(delay))),
                    ])
                }
                NetworkOptions.announce(
                    retry, command: console.command, json: false, console: console, jsonOnStandardOutput: false)
                return
            }
            if json { Self.line(Self.object(event)) }
            if console.isVerbose {
                console.detail(Self.text(event))
            } else if progress {
                Terminal.err("sync: \(Self.text(event))\n")
            }
        }
    }

    func summary(_ summary: SyncSummary) {
        console.detail("cycle: \(PipelineText.requests(summary)), \(summary.retries) retries")
        guard json else {
            for left in summary.replacedClientIDs {
                console.info("client ID \(left) was left: the server had registered it from a first connect whose "
                    + "answer never arrived; the store now has a new client ID (seedkit inspect)\n")
            }
            console.info("synced: \(summary.rowsApplied) rows, \(summary.scopesVerified.count) scopes verified, "
                + "\(summary.mutationsPushed) mutations pushed\n")
            return
        }
        Self.line([
            "event": .string("summary"),
            "requests": .object(JSONObject([
                "connect": Self.number(summary.connectRequests), "push": Self.number(summary.pushRequests),
                "pull": Self.number(summary.pullRequests), "rebuild": Self.number(summary.rebuildRequests),
            ])),
            "rows_applied": Self.number(summary.rowsApplied),
            "scopes_verified": .array(summary.scopesVerified.map(JSONValue.string)),
            "scopes_rebuilt": .array(summary.scopesRebuilt.map(JSONValue.string)),
            "mutations": .object(JSONObject([
                "pushed": Self.number(summary.mutationsPushed), "accepted": Self.number(summary.mutationsAccepted),
                "rejected": Self.number(summary.mutationsRejected),
            ])),
            "retries": Self.number(summary.retries),
            "replaced_client_ids": .array(summary.replacedClientIDs.map(JSONValue.string)),
        ])
    }

    /// Prints a failed cycle; `nextAttempt` (Unix epoch milliseconds) is the stored backoff deadline after retries
    /// ran out, said in words and as `next_attempt_at_ms`.
    func failure(_ error: SyncCycleError, status: ExitStatus, nextAttempt: Int64? = nil, now: Int64 = 0) {
        var hint = ""
        var members = [
            JSONMember("event", .string("error")), JSONMember("message", .string(error.description)),
            JSONMember("last_rule", Self.lastRule(error).map(JSONValue.string) ?? .null),
            JSONMember("code", .string(error.code)), JSONMember("retryable", .bool(error.isRetryable)),
            JSONMember("rule", .string(error.code)),
            JSONMember("exit_status", .number(JSONNumber(Int64(status.rawValue)))),
        ]
        if let nextAttempt {
            members.append(JSONMember("next_attempt_at_ms", .number(JSONNumber(nextAttempt))))
            hint = "seedkit: backoff stored: the next attempt is allowed at \(Self.instant(nextAttempt)) "
                + "(in \(Self.secondsUntil(nextAttempt, from: now)) s); a run before then waits for it "
                + "when it is at most an hour away, else sends nothing and exits 4\n"
        }
        if case .blocked(let operation, let code, let recoveryAction) = error {
            // A stored blocking error: name it so CI can act on it without parsing the message.
            let recovery = Self.recovery(code: code, action: recoveryAction)
            members.append(JSONMember("blocked", .object(JSONObject([
                "operation": .string(operation), "code": .string(code), "recovery_action": .string(recoveryAction),
                "meaning": .string(Self.meaning(code: code)), "recovery": .string(recovery),
            ]))))
            hint = "seedkit: \(code): \(Self.meaning(code: code))\nseedkit: recovery: \(recovery)\n"
        }
        if json, let bytes = try? CanonicalJSON.encode(.object(JSONObject(members))) {
            Terminal.out(bytes: bytes + [UInt8(ascii: "\n")])
        }
        Terminal.err("seedkit: \(FailureReport.text("sync failed: \(error)", rule: error.code))\n\(hint)")
    }

    /// The kind of the last failure when retries ran out (`connection_refused`, `http_503`, …).
    static func lastRule(_ error: SyncCycleError) -> String? {
        guard case .retriesExhausted(_, _, let status, let failure) = error else { return nil }
        return status.map { "http_\($0)" } ?? failure?.rule
    }

    /// What a stored blocking error's code means (the engine's dispatch table, else the local causes it records).
    static func meaning(code: String) -> String {
        if let refusal = SyncRefusal.named(code) { return refusal.meaning }
        switch code {
        case "incompatible_schema_transition", "unknown_schema_lineage":
            return "the server does not support the schema installed in this store"
        default:
            return "the engine stopped on a non-retryable failure it stored"
        }
    }

    /// The one command that recovers, or why none exists (docs/cli.md, "Stored refusals").
    static func recovery(code: String, action: String) -> String {
        switch (action, code) {
        case ("schema_reset", _):
            return "after upgrading the client: seedkit sync --schema-reset (same --server, --db and credential)"
        case ("retry", "upgrade_required"):
            return "upgrade the client (a newer --app-version), then: seedkit sync --retry-after-error"
        case ("retry", "auth_required"):
            return "with a valid credential: seedkit sync --retry-after-error"
        case ("retry", _):
            return "once the cause is remedied: seedkit sync --retry-after-error"
        case (_, "client_retired"):
            return "none for this store: a retired identity is never reused; sync a new store (another --db)"
        case (_, "idempotency_conflict"):
            return "none: the sealed request is kept for inspection (seedkit inspect) and is never sent again"
        default:
            return "none: the contract defines no recovery for this failure"
        }
    }

    private static func text(_ event: SyncEvent) -> String {
        switch event {
        case .phaseStarted(let phase): "\(phase.rawValue) started"
        case .phaseFinished(let phase): "\(phase.rawValue) finished"
        case .pageApplied(let phase, let scope, let rows):
            "\(phase.rawValue)\(scope.map { " \($0)" } ?? ""): \(rows) \(phase == .push ? "mutations" : "rows")"
        case .scopeVerified(let scope): "\(scope) verified"
        case .retryScheduled(let phase, let attempt, let status, let delay, _):
            "\(phase.rawValue) attempt \(attempt) failed (\(status.map { "HTTP \($0)" } ?? "no response")), "
                + "retrying in \(milliseconds(delay)) ms"
        case .schemaApplied(let action): "schema action \(action) applied"
        case .clientIdentityReplaced(let left, let current):
            "client ID \(left) refused as registered without this store; connecting as \(current)"
        case .mutationAccepted(let id): "mutation \(id) accepted"
        case .mutationRejected(let id, let code): "mutation \(id) rejected (\(code))"
        case .rebuildRequested(let scope): "rebuild of \(scope) requested"
        case .rebuildCompleted(let scope): "rebuild of \(scope) completed"
        case .stateChanged(let state): "state \(state.rawValue)"
        case .failed(let error): "failed: \(error)"
        }
    }

    private static func object(_ event: SyncEvent) -> KeyValuePairs<String, JSONValue> {
        switch event {
        case .phaseStarted(let phase): ["event": .string("phase_started"), "phase": .string(phase.rawValue)]
        case .phaseFinished(let phase): ["event": .string("phase_finished"), "phase": .string(phase.rawValue)]
        case .pageApplied(let phase, let scope, let rows):
            [
                "event": .string("page_applied"), "phase": .string(phase.rawValue),
                "scope": scope.map(JSONValue.string) ?? .null, "rows": number(rows),
            ]
        case .scopeVerified(let scope): ["event": .string("scope_verified"), "scope": .string(scope)]
        case .retryScheduled(let phase, let attempt, let status, let delay, _):
            [
                "event": .string("retry_scheduled"), "phase": .string(phase.rawValue), "attempt": number(attempt),
                "status": status.map(number) ?? .null, "delay_ms": .number(JSONNumber(milliseconds(delay))),
            ]
        case .schemaApplied(let action): ["event": .string("schema_applied"), "action": .string(action)]
        case .clientIdentityReplaced(let left, let current):
            ["event": .string("client_id_replaced"), "left": .string(left), "current": .string(current)]
        case .mutationAccepted(let id): ["event": .string("mutation_accepted"), "mutation_id": .string(id)]
        case .mutationRejected(let id, let code):
            ["event": .string("mutation_rejected"), "mutation_id": .string(id), "code": .string(code)]
        case .rebuildRequested(let scope): ["event": .string("rebuild_requested"), "scope": .string(scope)]
        case .rebuildCompleted(let scope): ["event": .string("rebuild_completed"), "scope": .string(scope)]
        case .stateChanged(let state): ["event": .string("state_changed"), "state": .string(state.rawValue)]
        case .failed(let error): ["event": .string("failed"), "message": .string(error.description)]
        }
    }

    private static func line(_ members: KeyValuePairs<String, JSONValue>) {
        // Canonical JSON of counts, names and phases cannot fail; a failure would only drop one event line.
        guard let bytes = try? CanonicalJSON.encode(.object(JSONObject(members))) else { return }
        Terminal.out(bytes: bytes + [UInt8(ascii: "\n")])
    }

    /// `2024-03-01T12:00:00Z` for Unix epoch milliseconds.
    private static func instant(_ milliseconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// Whole seconds from `now` until `deadline`, rounded up (both Unix epoch milliseconds).
    private static func secondsUntil(_ deadline: Int64, from now: Int64) -> Int64 {
        let (left, overflow) = deadline.subtractingReportingOverflow(now)
        guard !overflow else { return Int64.max / 1000 }
        return left <= 0 ? 0 : left / 1000 + (left % 1000 > 0 ? 1 : 0)
    }

    private static func number(_ value: Int) -> JSONValue {
        .number(JSONNumber(Int64(value)))
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}

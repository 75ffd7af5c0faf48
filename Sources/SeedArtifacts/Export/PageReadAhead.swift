import Dispatch
import SynchroProtocol

/// One scope page after its parse and its record checks: the records that passed, in page order, and the first
/// record that broke a rule, if any. Every other check of a page (size, tokens, identity order, the scope digest)
/// stays with ``ScopeExport``, which applies them in the order it always did.
struct VerifiedPage: Sendable {
    /// The records before the first failure (all of them when none failed).
    let records: [VerifiedSeedRecord]
    /// The index within the page of the first record that broke a rule, with the rule.
    let failure: (index: Int, RecordFailure)?
    /// How many records the page holds.
    let count: Int
    let nextToken: String?
    let hasMore: Bool
}

/// The next page of a scope requested, parsed and its records checked on a thread of its own while the exporter
/// writes the page before it (docs/decisions.md, "Export: indexes built at the end, pages verified ahead"): the
/// server's work, the parse and the row digests overlap the SQLite writes, and the two halves of a page are checked
/// side by side. At most one page is ahead, so memory stays two pages; a page that fails is only reported when the
/// exporter reaches it, after everything before it.
final class PageReadAhead: Sendable {
    private let outcome: Eventual<Result<VerifiedPage, SeedExportError>>

    /// Starts reading the page `request` names; `checker` is used by that read alone until ``wait()`` returns.
    init(source: any SeedExportSource, request: SeedPageRequest, checker: CheckerSlot) {
        outcome = Eventual(onThread: {
            Result { () throws(SeedExportError) in
                let bytes = try source.scopePage(request)
                return try Self.read(bytes, scope: request.scopeID, ordinal: request.expectedRowOrdinal, checker: checker)
            }
        })
    }

    /// The page, or the first failure of its request or parse.
    func wait() throws(SeedExportError) -> VerifiedPage {
        try outcome.wait().get()
    }

    private static func read(
        _ bytes: [UInt8], scope: String, ordinal: Int64, checker: CheckerSlot
    ) throws(SeedExportError) -> VerifiedPage {
        let json: JSONValue
        do {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw .malformedJSON(route: "scope page", rule: error.rule.rawValue, offset: error.offset)
        }
        guard case .object(let object) = json, object.count == 4, case .string(let pageScope)? = object["scope"],
              case .array(let records)? = object["records"], case .bool(let hasMore)? = object["has_more"],
              let tokenValue = object["page_token"]
        else { throw .page(scope: scope, ordinal: ordinal, rule: "page_shape") }
        guard pageScope.exactlyEquals(scope) else {
            throw .page(scope: scope, ordinal: ordinal, rule: "page_scope_mismatch")
        }
        let nextToken: String?
        switch tokenValue {
        case .null: nextToken = nil
        case .string(let next): nextToken = next
        default: throw .page(scope: scope, ordinal: ordinal, rule: "page_shape")
        }
        let (verified, failure) = checkHalves(of: records, checker: checker)
        return VerifiedPage(
            records: verified, failure: failure, count: records.count, nextToken: nextToken, hasMore: hasMore)
    }

    /// Checks the records, the two halves of a page of at least ``minimumSplit`` side by side (each with its own
    /// checker); the result is what checking them in order would give: the records before the first failure.
    private static func checkHalves(
        of records: [JSONValue], checker: CheckerSlot
    ) -> ([VerifiedSeedRecord], (index: Int, RecordFailure)?) {
        guard records.count >= minimumSplit else {
            let whole = CheckedRun(records[...])
            whole.check(with: checker.checkers[0])
            return (whole.verified, whole.failure)
        }
        let middle = records.count / 2
        let runs = [CheckedRun(records[..<middle]), CheckedRun(records[middle...])]
        DispatchQueue.concurrentPerform(iterations: 2) { part in
            runs[part].check(with: checker.checkers[part])
        }
        if let failure = runs[0].failure { return (runs[0].verified, failure) }
        return (runs[0].verified + runs[1].verified, runs[1].failure)
    }

    /// Below this many records a page is checked on one thread (a second one would cost more than it saves).
    private static let minimumSplit = 64
}

/// A run of a page's records and what checking it in order found: the records before its first failure.
///
/// `@unchecked Sendable`: each run is checked by exactly one thread of `concurrentPerform`, which returns only after
/// every iteration finished, so the reads that follow see every write.
private final class CheckedRun: @unchecked Sendable {
    let records: ArraySlice<JSONValue>
    private(set) var verified: [VerifiedSeedRecord] = []
    private(set) var failure: (index: Int, RecordFailure)?

    init(_ records: ArraySlice<JSONValue>) {
        self.records = records
    }

    func check(with slot: CheckerOfOneThread) {
        verified.reserveCapacity(records.count)
        for index in records.indices {
            switch slot.checker.verify(records[index]) {
            case .success(let value): verified.append(value)
            case .failure(let broken):
                failure = (index, broken)
                return
            }
        }
    }
}

/// The record checkers of one scope's read-ahead (one per half of a page), handed from page to page.
///
/// Only the one page being read ahead uses them, and ``ScopeExport`` starts the next read only after
/// ``PageReadAhead/wait()`` returned the previous one, which orders every use before the next.
final class CheckerSlot: Sendable {
    let checkers: [CheckerOfOneThread]

    init(_ checker: SeedRecordChecker) {
        checkers = [CheckerOfOneThread(checker), CheckerOfOneThread(checker)]
    }
}

/// One record checker (its digester's buffers are reused from row to row), used by one thread at a time.
///
/// `@unchecked Sendable`: see ``CheckerSlot``; within a page, each half has its own.
final class CheckerOfOneThread: @unchecked Sendable {
    var checker: SeedRecordChecker

    init(_ checker: SeedRecordChecker) {
        self.checker = checker
    }
}

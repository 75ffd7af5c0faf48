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
/// server's work, the parse and the row digests overlap the SQLite writes. At most one page is ahead, so memory
/// stays two pages; a page that fails is only reported when the exporter reaches it, after everything before it.
final class PageReadAhead: Sendable {
    private let outcome: Eventual<Result<VerifiedPage, SeedExportError>>

    /// Starts reading the page `request` names; `checker` is used by that thread alone until ``wait()`` returns.
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
        var verified: [VerifiedSeedRecord] = []
        verified.reserveCapacity(records.count)
        var failure: (index: Int, RecordFailure)?
        for (index, record) in records.enumerated() {
            switch checker.checker.verify(record) {
            case .success(let value): verified.append(value)
            case .failure(let broken): failure = (index, broken)
            }
            if failure != nil { break }
        }
        return VerifiedPage(
            records: verified, failure: failure, count: records.count, nextToken: nextToken, hasMore: hasMore)
    }
}

/// The record checker of one scope's read-ahead, handed from page to page.
///
/// `@unchecked Sendable`: only the thread of the one page being read ahead uses it, and ``ScopeExport`` starts the
/// next read only after ``PageReadAhead/wait()`` returned the previous one, which orders every use before the next.
final class CheckerSlot: @unchecked Sendable {
    var checker: SeedRecordChecker

    init(_ checker: SeedRecordChecker) {
        self.checker = checker
    }
}

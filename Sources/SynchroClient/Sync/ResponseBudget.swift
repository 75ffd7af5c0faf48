import SynchroProtocol

/// What one reply of a server may cost the client, per route (issue #19): the octets of its body — checked by the
/// transport on the wire before decoding and on the decoded body, and again here — and the JSON values the strict
/// parser may build from it. A 64 MiB body of `[0,0,…]` holds 32 million values, gigabytes once parsed; the value
/// budget stops the parse long before, so a hostile server cannot grow the client past a few hundred megabytes.
///
/// The bounds are far above what the reference server sends: a pull or rebuild page of 1000 rows of 100 fields
/// is about 10⁵ values and a few megabytes.
public struct ResponseBudget: Sendable, Equatable {
    /// Largest body accepted, octets, before and after content decoding.
    public let maximumBytes: Int
    /// Most JSON values (``JSONLimits/maxValues``) the body may hold.
    public let maximumValues: Int

    /// Connect: a manifest, a scope list and a few tokens.
    public static let connect = ResponseBudget(maximumBytes: 8 << 20, maximumValues: 500_000)
    /// Push: one result per submitted mutation (at most the batch the client sent) and its row.
    public static let push = ResponseBudget(maximumBytes: 32 << 20, maximumValues: 1_000_000)
    /// Pull and rebuild pages, and any other route: the protocol's 64 MiB body guard (wire-protocol §9).
    public static let page = ResponseBudget(maximumBytes: 64 << 20, maximumValues: 2_000_000)
    /// Error bodies (non-200): an envelope is a few members.
    public static let error = ResponseBudget(maximumBytes: 64 << 20, maximumValues: 10_000)

    /// The budget of a reply to `path` (`/sync/connect`, `/sync/push`, …).
    public static func forPath(_ path: String) -> ResponseBudget {
        let route = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        switch route {
        case "/sync/connect": return .connect
        case "/sync/push": return .push
        default: return .page
        }
    }

    /// The strict parser bounded by this budget.
    var parser: StrictJSONParser {
        StrictJSONParser(limits: JSONLimits(
            maxBytes: maximumBytes, maxDepth: JSONLimits.protocolDefault.maxDepth, maxValues: maximumValues))
    }
}

/// Thrown by a ``SyncTransport`` whose reply passed the route's ``ResponseBudget/maximumBytes`` (on the wire or
/// decoded): the server's answer, not a lost one, so it is a contract violation (`response_too_large`) and not
/// sent again.
public struct ResponseTooLarge: Error, Sendable, Equatable {
    /// The budget that was passed, octets.
    public let limit: Int

    public init(limit: Int) {
        self.limit = limit
    }
}

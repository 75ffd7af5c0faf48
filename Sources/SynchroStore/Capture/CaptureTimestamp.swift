import SynchroProtocol

/// The timestamp form the upstream client writes everywhere (ledger `client_version`, `created_at`, archive
/// rows): a millisecond clock padded to the protocol's microsecond form, `YYYY-MM-DDTHH:MM:SS.mmm000Z`
/// (`spec/client-store.md` §1, §16 point 5).
package enum CaptureTimestamp {
    /// The SQLite expression the capture triggers evaluate (27 characters, millisecond precision).
    package static let sqlExpression = "substr(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 1, 23) || '000Z'"

    /// Formats Unix epoch milliseconds; sub-millisecond digits are always `000`.
    package static func format(unixMilliseconds: Int64) -> String {
        CivilTime.formatDateTime(unixMilliseconds * 1000)
    }
}

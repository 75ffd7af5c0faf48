/// A deterministic pull-response-shaped document (`spec/wire-protocol.md` §5.2–§5.3) for parser
/// benchmarks: change objects wrapping rows of ten fields, laid out the way the upstream server
/// writes JSONB text (a space after every `:` and `,`).
///
/// The rows mix what real tables hold: identifiers, short and long text (some non-ASCII, some
/// escapes), integers, floats, ISO timestamps, nulls, booleans, int64 and decimal values as
/// strings, and small JSON documents stored in string columns.
enum PullDocument {
    /// The UTF-8 octets of a response with `rows` changes, identical for identical arguments.
    static func make(rows: Int, seed: UInt64 = 0x5EED_C0DE) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        var out: [UInt8] = []
        out.reserveCapacity(rows * 720)
        out += #"{"changes": ["#.utf8
        for index in 0..<rows {
            if index > 0 { out += ", ".utf8 }
            appendChange(index: index, to: &out, rng: &rng)
        }
        out += #"], "rebuild": [], "has_more": true, "scope_cursors": {"user:u_42": "ic1.dXNlcjp1XzQy.b0Qm"}, "#.utf8
        out += #""scope_updates": {"add": [], "remove": []}, "scope_set_version": 7}"#.utf8
        return out
    }

    /// `count` change objects as separate documents, the size of typical request envelopes.
    static func changes(count: Int, seed: UInt64 = 0xC4A9_6E5) -> [[UInt8]] {
        var rng = SplitMix64(seed: seed)
        return (0..<count).map { index in
            var out: [UInt8] = []
            appendChange(index: index, to: &out, rng: &rng)
            return out
        }
    }

    private static let titles = [
        "Buy oat milk", "Call Sam at 5", "Book flights", "Crème brûlée recipe", "Überprüfung der Daten",
        "東京の天気", "Réunion à 14h", "Quarterly report — final", "Fix the \\\"sync\\\" bug",
        "Line one\\nLine two", "Tab\\tseparated", "naïve café ☕", "Ελληνικά κείμενα",
        "emoji 🚀 launch",
    ]

    private static let owners = ["u_42", "u_7", "u_1024", "u_314159", "team:ops", "team:design"]

    private static func appendChange(index: Int, to out: inout [UInt8], rng: inout SplitMix64) {
        let id = "n-\(index)-\(hex(rng.next() & 0xFFFF_FFFF))"
        let version = "rv-\(pad(index + 1000, width: 9))"
        out += #"{"op": "upsert", "pk": {"fld_notes_id": ""#.utf8
        out += id.utf8
        out += #""}, "row": {"#.utf8
        appendRow(id: id, to: &out, rng: &rng)
        out += #"}, "scope": "user:u_42", "table": "tbl_notes", "row_checksum": {"digest": ""#.utf8
        out += hex(rng.next()).utf8
        out += hex(rng.next()).utf8
        out += hex(rng.next()).utf8
        out += hex(rng.next()).utf8
        out += #"", "version": 1, "encoding": "hex", "algorithm": "sha256"}, "server_version": ""#.utf8
        out += version.utf8
        out += #""}"#.utf8
    }

    private static func appendRow(id: String, to out: inout [UInt8], rng: inout SplitMix64) {
        let roll = rng.next()
        out += #""fld_notes_id": ""#.utf8
        out += id.utf8
        out += #"", "fld_notes_body": ""#.utf8
        out += titles[Int(roll % UInt64(titles.count))].utf8
        out += #"", "fld_notes_color": "#.utf8
        out += (roll & 0x100 == 0 ? "null" : String(rng.next() % 16)).utf8
        out += #", "fld_notes_owner": ""#.utf8
        out += owners[Int((roll >> 12) % UInt64(owners.count))].utf8
        out += #"", "fld_notes_score": ""#.utf8
        out += String(Int64(bitPattern: rng.next()) >> 12).utf8
        out += #"", "fld_notes_pinned": "#.utf8
        out += (roll & 0x200 == 0 ? "false" : "true").utf8
        out += #", "fld_notes_weight": "#.utf8
        out += String(Double(rng.next() % 1_000_000) / 128).utf8
        out += #", "fld_notes_updated_at": ""#.utf8
        out += timestamp(rng.next()).utf8
        out += #"", "fld_notes_deleted_at": "#.utf8
        out += (roll & 0x400 == 0 ? "null" : "\"\(timestamp(rng.next()))\"").utf8
        out += #", "fld_notes_attributes": "{\"tags\": [\"home\", \"p"#.utf8
        out += String(rng.next() % 5).utf8
        out += #"\"], \"rev\": "#.utf8
        out += String(rng.next() % 100).utf8
        out += #", \"shared\": false}""#.utf8
    }

    private static func timestamp(_ bits: UInt64) -> String {
        let month = pad(Int(bits % 12) + 1, width: 2)
        let day = pad(Int((bits >> 4) % 28) + 1, width: 2)
        let hour = pad(Int((bits >> 9) % 24), width: 2)
        let minute = pad(Int((bits >> 14) % 60), width: 2)
        let second = pad(Int((bits >> 20) % 60), width: 2)
        let micros = pad(Int((bits >> 26) % 1_000_000), width: 6)
        return "2026-\(month)-\(day)T\(hour):\(minute):\(second).\(micros)Z"
    }

    private static func pad(_ value: Int, width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

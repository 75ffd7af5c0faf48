import Foundation
import Testing

/// `docs/conformance.md` stays true: its summary counts are the rows' statuses, and every test file a row names
/// exists (a renamed or removed test shows up here instead of in the next audit).
@Suite("Conformance page")
struct ConformancePageTests {
    /// Where the page's abbreviations point.
    static let prefixes = [
        "SCT/": "Tests/SynchroClientTests/", "CLI/": "Tests/SeedkitCLITests/", "SPT/": "Tests/SynchroProtocolTests/",
        "HTTPT/": "Tests/SynchroHTTPTests/",
    ]
    static let statuses = ["done", "partial", "untested", "missing", "argued", "in progress"]

    struct Row {
        let id: String
        let testedBy: String
        let status: String
    }

    static func page() throws -> (root: URL, rows: [Row], summary: [String: Int]) {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/conformance.md"), encoding: .utf8)
        var rows: [Row] = []
        var summary: [String: Int] = [:]
        for line in text.split(separator: "\n") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4 else { continue }
            let first = cells[1]
            if first.range(of: #"^(C-[0-9.]+-[0-9]+|S1-[0-9]+)$"#, options: .regularExpression) != nil {
                let last = cells[cells.count - 2]
                let status = statuses.first { last.hasPrefix($0) } ?? "unknown: \(last.prefix(20))"
                rows.append(Row(id: first, testedBy: cells[cells.count - 3], status: status))
            } else if statuses.contains(first), cells.count == 6, let total = Int(cells[4]) {
                summary[first] = total
            }
        }
        return (root, rows, summary)
    }

    @Test("the summary table counts exactly the statuses of the rows")
    func summaryMatchesRows() throws {
        let (_, rows, summary) = try Self.page()
        #expect(rows.count > 200)
        var counted: [String: Int] = [:]
        for row in rows { counted[row.status, default: 0] += 1 }
        for status in Self.statuses { counted[status] = counted[status] ?? 0 }
        #expect(counted == summary, "rows give \(counted), the summary says \(summary)")
        #expect(Set(rows.map(\.id)).count == rows.count, "an ID appears twice")
    }

    @Test("every test file a row names exists")
    func namedTestFilesExist() throws {
        let (root, rows, _) = try Self.page()
        var missing: [String] = []
        for row in rows {
            for match in row.testedBy.matches(of: /`((?:SCT|CLI|SPT|HTTPT)\/[A-Za-z0-9+]+\.swift)/) {
                let named = String(match.1)
                guard let prefix = Self.prefixes.keys.first(where: named.hasPrefix) else { continue }
                let path = Self.prefixes[prefix]! + named.dropFirst(prefix.count)
                if !FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path) {
                    missing.append("\(row.id): \(path)")
                }
            }
        }
        #expect(missing.isEmpty, "\(missing.joined(separator: "\n"))")
    }
}

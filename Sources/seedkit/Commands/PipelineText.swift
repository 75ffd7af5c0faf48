import Foundation
import SeedPipeline
import SynchroClient

/// Text renderings shared by `pipeline run` and `rehearse`.
enum PipelineText {
    /// `100,040`.
    static func count(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(digit)
        }
        return (value < 0 ? "-" : "") + grouped
    }

    /// `33.2 MB` (powers of 1000), `812 B`.
    static func bytes(_ value: Int64) -> String {
        let units = ["B", "kB", "MB", "GB", "TB"]
        var amount = Double(value)
        var unit = 0
        while amount >= 1000 && unit < units.count - 1 {
            amount /= 1000
            unit += 1
        }
        return unit == 0 ? "\(value) B" : String(format: "%.1f %@", amount, units[unit])
    }

    /// `0.42 s`, `12.3 s`, `2 min 5 s`.
    static func seconds(_ value: Double) -> String {
        if value < 10 { return String(format: "%.2f s", value) }
        if value < 60 { return String(format: "%.1f s", value) }
        let whole = Int(value.rounded())
        return "\(whole / 60) min \(whole % 60) s"
    }

    static func seconds(between start: ContinuousClock.Instant, and end: ContinuousClock.Instant) -> Double {
        let elapsed = end - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    static func stepLine(_ result: PipelineStepResult) -> String {
        var line = "\(result.step.rawValue): \(result.outcome.rawValue)"
        if let rows = result.rows { line += ", \(count(rows)) rows" }
        if let bytes = result.bytes { line += ", \(self.bytes(bytes))" }
        line += ", \(seconds(result.seconds))"
        if let failure = result.failure { line += " — \(failure.rule): \(failure.message)" }
        return line
    }

    /// The summary table, the rehearsal and the publication; a dry run's checks.
    static func report(_ report: PipelineReport) -> String {
        // Reused and planned steps have no rows, sizes or times: the closing line names them instead.
        let ran = report.outcome != .upToDate && report.outcome != .validated && report.checks.isEmpty
        var text = ran ? table(report.steps) : ""
        for check in report.checks {
            text += check.passed
                ? "ok    \(check.name): \(check.message)\n"
                : "FAIL  \(check.name): \(FailureReport.text(check.message, rule: check.rule ?? "check_failed"))\n"
        }
        if let rehearsal = report.rehearsal { text += "\n" + self.rehearsal(rehearsal) }
        if let seed = report.seed { text += (text.isEmpty ? "" : "\n") + publication(seed) }
        return text
    }

    static func table(_ steps: [PipelineStepResult]) -> String {
        let rows = [["step", "outcome", "rows", "size", "time"]] + steps.map { result in
            let ran = result.outcome == .passed || result.outcome == .failed
            return [
                result.step.rawValue, result.outcome.rawValue, result.rows.map(count) ?? "",
                result.bytes.map(bytes) ?? "", ran ? seconds(result.seconds) : "",
            ]
        }
        let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                let padding = String(repeating: " ", count: widths[column] - cell.count)
                return column >= 2 ? padding + cell : cell + padding
            }.joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
        }.joined(separator: "\n") + "\n"
    }

    /// What a device experienced on its first sync after installing the seed.
    static func rehearsal(_ report: RehearsalReport) -> String {
        var text = "rehearsal (\(report.passed ? "passed" : "failed")): a device installing the seed starts with "
            + "\(count(report.seededRows)) rows\n"
        let width = report.scopes.map(\.id.count).max() ?? 0
        for scope in report.scopes {
            text += "  \(scope.id.padding(toLength: width, withPad: " ", startingAt: 0))  "
                + "\(count(scope.seededRows)) seeded rows, \(scope.outcome)\n"
        }
        text += "  first sync: " + requests(report.firstSync) + ", \(count(Int64(report.firstSync.rowsApplied))) rows "
            + "applied after the seed"
        if !report.firstSync.scopesRebuilt.isEmpty {
            text += " (rebuilt: \(report.firstSync.scopesRebuilt.joined(separator: ", ")))"
        }
        text += "\n"
        if let rebuild = report.rebuild {
            text += "  without the seed: " + requests(rebuild) + ", \(count(Int64(rebuild.rowsApplied))) rows\n"
        }
        return text
    }

    static func requests(_ summary: SyncSummary) -> String {
        "\(summary.connectRequests) connect, \(summary.pullRequests) pull, \(summary.pushRequests) push, "
            + "\(summary.rebuildRequests) rebuild requests"
    }

    /// Where the publication is and what it holds.
    static func publication(_ seed: PublishedSeed) -> String {
        var text = "published in \(seed.directory):\n"
        let width = seed.files.map(\.name.count).max() ?? 0
        for file in seed.files {
            text += "  \(file.name.padding(toLength: width, withPad: " ", startingAt: 0))  "
                + "\(bytes(file.bytes)) (\(count(file.bytes)) bytes)  sha256 \(file.sha256)\n"
        }
        text += "  evidence.json, SHA256SUMS\n"
        let scopes = "\(seed.scopes.count) portable scope\(seed.scopes.count == 1 ? "" : "s")"
        text += "seed: \(count(seed.rows)) rows in \(scopes), schema version \(seed.schemaVersion)\n"
        for scope in seed.scopes {
            text += "  \(scope.id): \(count(scope.cardinality)) rows, checksum \(scope.checksum)\n"
        }
        return text
    }

    /// The closing line.
    static func result(_ report: PipelineReport) -> String {
        switch report.outcome {
        case .published: "published \(report.name) to \(report.publishDirectory) in \(seconds(report.seconds))\n"
        case .upToDate:
            "up to date: \(report.publishDirectory) already holds this publication; nothing was redone or rewritten\n"
        case .completed: "every step passed (the pipeline does not publish)\n"
        case .validated:
            "pipeline \(report.name) is valid; steps: "
                + report.steps.filter { $0.outcome != .skipped }.map(\.step.rawValue).joined(separator: ", ")
                + (report.upToDate ? "; the publication is up to date\n" : "; a run would build a new publication\n")
        case .failed where !report.checks.isEmpty: "dry run of \(report.name): a run would fail; nothing was written\n"
        case .failed: "pipeline \(report.name) failed; nothing was published\n"
        // Said on standard error, with the rule, by the closing error.
        case .interrupted: ""
        }
    }
}

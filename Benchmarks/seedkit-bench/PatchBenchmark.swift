import Foundation
import SeedArtifacts
import SeedSources
import SynchroProtocol
import SynchroServer

extension Benchmark {
    static let seedPatch = Benchmark(
        name: "seed.patch",
        summary: "pack --patch-from between two exports of the 100,000-row demo scope with 1% of the products changed "
            + "at the server in between, at the release level 19; baselines: the full pack of the new seed (goal: "
            + "patch ≤ 5% of it) and a full unpack (patch apply time)"
    ) { options in
        try PatchBenchmark(options: options).figures()
    }
}

/// A release update: export, change 1% of the catalog at the source, export again; the patch against the first
/// seed next to the full frame of the second, and applying it next to unpacking the full frame.
private struct PatchBenchmark {
    let options: BenchmarkOptions

    func figures() throws -> [BenchmarkFigure] {
        let rows = max(1_000, Int(100_000 * options.scale))
        let server = try BenchServer(catalogRows: rows)
        let source = try HTTPExportSource(baseURL: server.baseURL, operatorToken: BenchServer.operatorToken)
        let previous = server.scratchPath("previous.db"), next = server.scratchPath("next.db")
        let export = SeedExportOptions(pageLimit: 1000, verify: false)
        _ = try SeedExporter.export(from: source, to: previous, options: export)
        let changed = try changeOnePercent(server, rows: rows)
        _ = try SeedExporter.export(from: source, to: next, options: export)

        let full = server.scratchPath("next.db.zst"), patch = server.scratchPath("next.db.patch.zst")
        let level = PackOptions.defaultLevel
        let fullReport = try SeedPacker.pack(next, to: full, options: PackOptions(level: level, overwrite: true))
        let patchReport = try SeedPacker.pack(
            next, to: patch, options: PackOptions(level: level, overwrite: true, patchFrom: previous))

        // Alternated, so that both see the same machine load.
        var unpackRuns: [Duration] = [], applyRuns: [Duration] = []
        let clock = ContinuousClock()
        let copy = server.scratchPath("copy.db")
        var apply = UnpackOptions(overwrite: true, requireSQLiteDatabase: true)
        apply.patchFrom = previous
        apply.expectedSHA256 = fullReport.uncompressedSHA256
        for _ in 0..<max(3, options.iterations) {
            var start = clock.now
            let whole = UnpackOptions(overwrite: true, requireSQLiteDatabase: true)
            _ = try SeedPacker.unpack(full, to: copy, options: whole)
            unpackRuns.append(start.duration(to: clock.now))
            start = clock.now
            let applied = try SeedPacker.unpack(patch, to: copy, options: apply)
            applyRuns.append(start.duration(to: clock.now))
            guard applied.uncompressedSHA256 == fullReport.uncompressedSHA256 else {
                throw BenchmarkFailure("seed.patch: the patch did not rebuild the new seed")
            }
        }
        let percent = Double(patchReport.compressedBytes) * 100 / Double(max(fullReport.compressedBytes, 1))
        print("seed.patch: \(changed) of \(rows) products changed; patch \(patchReport.compressedBytes) bytes, full "
            + "pack \(fullReport.compressedBytes) bytes (\(BenchmarkFigure.format(percent, digits: 2))%), seed "
            + "\(fullReport.uncompressedBytes) bytes")
        let unpackTime = Samples(durations: unpackRuns).median, applyTime = Samples(durations: applyRuns).median
        return [
            BenchmarkFigure(
                name: "seed.patch.size (1% of rows changed)", value: Double(patchReport.compressedBytes) / 1000,
                unit: "kB", baseline: .init(value: Double(fullReport.compressedBytes) / 1000, unit: "kB full pack")),
            BenchmarkFigure(name: "seed.patch.size, share of the full pack", value: percent, unit: "% (goal ≤ 5%)"),
            BenchmarkFigure(
                name: "seed.patch.apply (median)", value: applyTime.seconds * 1000, unit: "ms",
                baseline: .init(value: unpackTime.seconds * 1000, unit: "ms full unpack")),
        ]
    }

    /// Rewrites every hundredth product at the source (title and stock), as an operator would; returns how many.
    private func changeOnePercent(_ server: BenchServer, rows: Int) throws -> Int {
        let dataset = try Dataset(directory: try BenchServer.demoDirectory())
        let generated = try DatasetGenerator(dataset: dataset).rows(for: "tbl_products", rowsOverride: rows)
        var changed = 0
        for index in stride(from: 7, to: generated.count, by: 100) {
            let (pk, row) = generated[index]
            guard let object = row.objectValue else { continue }
            let members = object.members.map { member -> JSONMember in
                switch member.key {
                case "fld_product_title": JSONMember(member.key, .string((member.value.stringValue ?? "") + " (v2)"))
                case "fld_product_stock":
                    JSONMember(member.key, .number(JSONNumber((member.value.numberValue?.exactInt64 ?? 0) + 1)))
                default: member
                }
            }
            try server.engine.operatorWrite(table: "tbl_products", pk: pk, row: .object(JSONObject(members)))
            changed += 1
        }
        return changed
    }
}

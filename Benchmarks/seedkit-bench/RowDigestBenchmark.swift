import CCrypto
import SynchroProtocol

extension Benchmark {
    /// Row digests (validation, typed encoding, preimage, SHA-256) next to OpenSSL SHA-256 over
    /// exactly the preimage octets those digests hash: the part no implementation can avoid.
    static let rowDigest = Benchmark(
        name: "integrity.row-digest",
        summary: "RowDigester over 200,000 parsed catalog rows (11 fields, every portable type); "
            + "baseline: OpenSSL SHA-256 (low-level context calls) over the same preimages"
    ) { options in
        try RowDigestBenchmark(options: options).figures()
    }
}

private struct RowDigestBenchmark {
    let options: BenchmarkOptions

    func figures() throws -> [BenchmarkFigure] {
        let manifest = try CatalogManifest.make()
        let rows = CatalogManifest.rows(count: max(1, Int(200_000 * options.scale)))
        var digester = RowDigester(manifest: manifest)

        // The exact preimages the digester hashes, for the baseline.
        var preimages: [[UInt8]] = []
        preimages.reserveCapacity(rows.count)
        for row in rows {
            let result = try digester.compute(
                tableID: CatalogManifest.tableID, primaryKey: row.pk, row: row.row, serverVersion: row.version)
            preimages.append(result.preimage)
        }
        let totalBytes = preimages.reduce(0) { $0 + $1.count }

        let digests = try Stopwatch.samples(iterations: options.iterations) { () throws -> UInt8 in
            var check: UInt8 = 0
            for row in rows {
                let d = try digester.digest(
                    tableID: CatalogManifest.tableID, primaryKey: row.pk, row: row.row, serverVersion: row.version)
                check ^= d.digest[0]
            }
            return check
        }
        // The strictest per-row baseline: OpenSSL's low-level context functions on a stack context,
        // which skip the algorithm lookup (and its lock) that the one-shot `SHA256()` pays per call.
        let perRowSHA = Stopwatch.samples(iterations: options.iterations) { () -> UInt8 in
            var check: UInt8 = 0
            var out = [UInt8](repeating: 0, count: 32)
            var context = SHA256_CTX()
            for preimage in preimages {
                preimage.withUnsafeBufferPointer { p in
                    out.withUnsafeMutableBufferPointer { o in
                        SHA256_Init(&context)
                        SHA256_Update(&context, p.baseAddress, p.count)
                        SHA256_Final(o.baseAddress, &context)
                    }
                }
                check ^= out[0]
            }
            return check
        }
        let contiguous = preimages.flatMap { $0 }
        let oneBufferSHA = Stopwatch.samples(iterations: options.iterations) { SynchroProtocol.SHA256.hash(contiguous) }

        let count = Double(rows.count)
        return [
            BenchmarkFigure(name: "integrity.row-digest.rows", value: count, unit: "rows"),
            BenchmarkFigure(
                name: "integrity.row-digest.preimage-bytes", value: Double(totalBytes) / 1_000_000, unit: "MB"),
            BenchmarkFigure(
                name: "integrity.row-digest.rate", value: count / digests.median.seconds, unit: "rows/s",
                baseline: .init(value: count / perRowSHA.median.seconds, unit: "SHA-256 calls/s")),
            .throughput(
                "integrity.row-digest.preimage-throughput", bytes: totalBytes, digests.median,
                baseline: perRowSHA.median),
            BenchmarkFigure(
                name: "integrity.row-digest.time-vs-sha256", value: digests.median.seconds / perRowSHA.median.seconds,
                unit: "x (goal ≤ 3)"),
            .throughput(
                "integrity.sha256.one-buffer", bytes: totalBytes, oneBufferSHA.median, baseline: perRowSHA.median),
        ]
    }
}

/// A catalog table that carries every portable type, as a seed's shared scope would.
enum CatalogManifest {
    static let tableID = "tbl_products"

    static let fields: [(id: String, type: String, extra: String)] = [
        ("fld_product_id", "int64", ""),
        ("fld_product_sku", "string", ""),
        ("fld_product_title", "string", ""),
        ("fld_product_price", "decimal", ",\"precision\":12,\"scale\":2"),
        ("fld_product_stock", "int", ""),
        ("fld_product_rating", "float", ""),
        ("fld_product_active", "boolean", ""),
        ("fld_product_updated", "datetime", ""),
        ("fld_product_release", "date", ""),
        ("fld_product_attrs", "json", ""),
        ("fld_product_thumb", "bytes", ""),
    ]

    static func make() throws -> SchemaManifest {
        let fieldText = fields.map { f in
            let key = f.id == "fld_product_id"
            return "{\"field_id\":\"\(f.id)\",\"name\":\"\(f.id.dropFirst(12))\",\"type\":\"\(f.type)\","
                + "\"nullable\":\(key ? "false" : "true"),\"writable\":\(key ? "false" : "true")\(f.extra)}"
        }.joined(separator: ",")
        let body = "{\"schema_version\":1,\"parent_schema\":null,\"transition_class\":\"initial\","
            + "\"compatibility_floor\":1,\"tables\":[{\"table_id\":\"\(tableID)\",\"relation_id\":\"rel_products\","
            + "\"name\":\"products\",\"composition\":\"single_scope\",\"primary_key_field_id\":\"fld_product_id\","
            + "\"lifecycle\":{\"created_at_field_id\":null,\"updated_at_field_id\":null,\"deleted_at_field_id\":null},"
            + "\"fields\":[\(fieldText)],\"indexes\":[]}]}"
        let json = try StrictJSONParser().parse(body)
        let hash = try SchemaManifest.computeHash(json: json)
        guard case .object(let object) = json else { throw BenchmarkFailure("manifest is not an object") }
        return try SchemaManifest(json: .object(JSONObject(object.members + [JSONMember("schema_hash", .string(hash))])))
    }

    /// Deterministic rows, already parsed: what pull apply and seed export hold after parsing.
    static func rows(count: Int) -> [(pk: JSONValue, row: JSONValue, version: String)] {
        var random = SplitMix64(seed: 0x5EED_0001)
        let words = ["alpha", "Brücke", "café", "delta", "echo", "Ωmega", "gamma", "hotel", "india", "juliet"]
        return (0..<count).map { i in
            let id = JSONValue.string(String(1_000_000 + i))
            func pick() -> String { words[Int(random.next() % UInt64(words.count))] }
            let cents = random.next() % 1_000_000
            let fraction = cents % 100
            let price = fraction == 0 ? "\(cents / 100)" : fraction % 10 == 0
                ? "\(cents / 100).\(fraction / 10)" : "\(cents / 100).\(fraction < 10 ? "0" : "")\(fraction)"
            let rating = Double(random.next() % 50) / 10 + 0.25
            let day = 1 + Int(random.next() % 28)
            let dayText = day < 10 ? "0\(day)" : "\(day)"
            let row: [(String, JSONValue)] = [
                ("fld_product_title", .string("\(pick()) \(pick()) \(pick())")),
                ("fld_product_id", id),
                ("fld_product_sku", .string("SKU-\(i)")),
                ("fld_product_price", .string(price)),
                ("fld_product_stock", .number(JSONNumber(Int64(random.next() % 10_000)))),
                ("fld_product_rating", .number(JSONNumber(rating)!)),
                ("fld_product_active", .bool(random.next() % 2 == 0)),
                ("fld_product_updated", .string("2026-03-\(dayText)T10:20:30.123456Z")),
                ("fld_product_release", i % 7 == 0 ? .null : .string("2025-11-\(dayText)")),
                ("fld_product_attrs", .string("{\"color\":\"\(pick())\",\"size\":\(random.next() % 50)}")),
                ("fld_product_thumb", .string(Base64URL.encode((0..<24).map { _ in UInt8(random.next() & 0xFF) }))),
            ]
            let object = JSONValue.object(JSONObject(row.map { JSONMember($0.0, $0.1) }))
            return (id, object, "v-\(i)-\(random.next() % 100_000)")
        }
    }
}

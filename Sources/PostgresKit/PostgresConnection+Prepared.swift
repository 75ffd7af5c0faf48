import CPQ
import Foundation

/// One parameter of a prepared or binary statement: text parameters go in PostgreSQL's text format and take the
/// type the statement gives them (an integer for a `bigint` column, digits for an integer); `bytea` goes in binary
/// format, so octets travel as they are instead of doubled into hex.
public enum PostgresParameter: Sendable, Equatable {
    case null
    case text(String)
    case bytea([UInt8])
}

extension PostgresConnection {
    /// Prepares `sql` as the named statement `name` for this connection's lifetime, letting the server infer
    /// every parameter's type from its use (`$1`, `$2`, …).
    public func prepare(_ name: String, _ sql: String) throws(PostgresError) {
        let handle = try live()
        guard let result = PQprepare(handle, name, sql, 0, nil) else { throw failure(nil) }
        defer { PQclear(result) }
        do {
            try PostgresResultReader.check(result)
        } catch {
            throw failure(error)
        }
    }

    /// Runs a script of statements without parameters (DDL), in one round trip; results are discarded.
    public func executeScript(_ script: String) throws(PostgresError) {
        let handle = try live()
        guard let result = PQexec(handle, script) else { throw failure(nil) }
        defer { PQclear(result) }
        do {
            try PostgresResultReader.check(result)
        } catch {
            throw failure(error)
        }
    }

    /// Runs the prepared statement `name` with `parameters` and returns its result with every column in binary
    /// format (``PostgresResult`` decodes the common types).
    public func executePrepared(_ name: String, _ parameters: [PostgresParameter]) throws(PostgresError) -> PostgresResult {
        let handle = try live()
        let result = Self.withBinaryParameters(parameters) { values, lengths, formats in
            PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 1)
        }
        return try finish(result)
    }

    /// Runs one statement with `parameters` (unprepared) and returns its result in binary format.
    public func executeBinary(_ sql: String, _ parameters: [PostgresParameter] = []) throws(PostgresError) -> PostgresResult {
        let handle = try live()
        let result = Self.withBinaryParameters(parameters) { values, lengths, formats in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values, lengths, formats, 1)
        }
        return try finish(result)
    }

    private func finish(_ result: OpaquePointer?) throws(PostgresError) -> PostgresResult {
        guard let result else { throw failure(nil) }
        do {
            try PostgresResultReader.check(result)
        } catch {
            PQclear(result)
            throw failure(error)
        }
        return PostgresResult(result)
    }

    private static func withBinaryParameters<Result>(
        _ parameters: [PostgresParameter],
        _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) -> Result
    ) -> Result {
        var copies: [UnsafeMutableRawPointer?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        copies.reserveCapacity(parameters.count)
        for parameter in parameters {
            switch parameter {
            case .null:
                copies.append(nil)
                lengths.append(0)
                formats.append(0)
            case .text(let text):
                copies.append(UnsafeMutableRawPointer(strdup(text)))
                lengths.append(0)
                formats.append(0)
            case .bytea(let bytes):
                let copy = malloc(max(1, bytes.count))
                bytes.withUnsafeBytes { if let base = $0.baseAddress, let copy { copy.copyMemory(from: base, byteCount: $0.count) } }
                copies.append(copy)
                lengths.append(Int32(bytes.count))
                formats.append(1)
            }
        }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { $0.map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) } }
        return body(pointers, lengths, formats)
    }
}

/// A finished result in binary format, owned until this object goes away. Values are read in place; the
/// integer reader accepts `int2`, `int4`, `int8` and `bool` columns (SQL's boolean expressions and `SELECT 1`).
public final class PostgresResult {
    let result: OpaquePointer

    init(_ result: OpaquePointer) {
        self.result = result
    }

    deinit {
        PQclear(result)
    }

    /// The type OIDs this reader decodes.
    public enum TypeOID {
        public static let bool: UInt32 = 16
        public static let bytea: UInt32 = 17
        public static let name: UInt32 = 19
        public static let int8: UInt32 = 20
        public static let int2: UInt32 = 21
        public static let int4: UInt32 = 23
        public static let text: UInt32 = 25
        public static let oid: UInt32 = 26
        public static let json: UInt32 = 114
        public static let float4: UInt32 = 700
        public static let float8: UInt32 = 701
        public static let unknown: UInt32 = 705
        public static let varchar: UInt32 = 1043
    }

    public var rowCount: Int { Int(PQntuples(result)) }
    public var columnCount: Int { Int(PQnfields(result)) }

    /// The command tag's row count (`PQcmdTuples`), 0 when the command reports none.
    public var affectedRows: Int { Int(String(cString: PQcmdTuples(result))) ?? 0 }

    /// The type OID of `column`.
    public func type(ofColumn column: Int) -> UInt32 { UInt32(PQftype(result, Int32(column))) }

    public func isNull(row: Int, column: Int) -> Bool {
        PQgetisnull(result, Int32(row), Int32(column)) == 1
    }

    /// Calls `body` with the octets of one value (empty for NULL), valid only inside `body`.
    public func withBytes<Value>(
        row: Int, column: Int, _ body: (UnsafeRawBufferPointer) throws -> Value
    ) rethrows -> Value {
        let length = Int(PQgetlength(result, Int32(row), Int32(column)))
        guard length > 0, let start = PQgetvalue(result, Int32(row), Int32(column)) else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: start, count: length))
    }

    /// An integer or boolean value (NULL reads as 0); nil for a column of another type.
    public func integer(row: Int, column: Int) -> Int64? {
        let type = type(ofColumn: column)
        return withBytes(row: row, column: column) { bytes -> Int64? in
            guard !bytes.isEmpty else { return 0 }
            switch type {
            case TypeOID.int8: return bytes.count == 8 ? Self.bigEndian(bytes) : nil
            case TypeOID.int4, TypeOID.oid: return bytes.count == 4 ? Int64(Int32(truncatingIfNeeded: Self.bigEndian(bytes))) : nil
            case TypeOID.int2: return bytes.count == 2 ? Int64(Int16(truncatingIfNeeded: Self.bigEndian(bytes))) : nil
            case TypeOID.bool: return Int64(bytes[0])
            default: return nil
            }
        }
    }

    /// A `float4` or `float8` value; nil for a column of another type.
    public func real(row: Int, column: Int) -> Double? {
        let type = type(ofColumn: column)
        return withBytes(row: row, column: column) { bytes -> Double? in
            switch (type, bytes.count) {
            case (TypeOID.float8, 8): return Double(bitPattern: UInt64(bitPattern: Self.bigEndian(bytes)))
            case (TypeOID.float4, 4): return Double(Float(bitPattern: UInt32(truncatingIfNeeded: Self.bigEndian(bytes))))
            default: return nil
            }
        }
    }

    /// Whether `column` holds text in its binary format (its octets are the UTF-8 text).
    public func isTextual(column: Int) -> Bool {
        switch type(ofColumn: column) {
        case TypeOID.text, TypeOID.varchar, TypeOID.name, TypeOID.unknown, TypeOID.json: true
        default: false
        }
    }

    private static func bigEndian(_ bytes: UnsafeRawBufferPointer) -> Int64 {
        var value: UInt64 = 0
        for byte in bytes { value = value << 8 | UInt64(byte) }
        return Int64(bitPattern: value)
    }
}

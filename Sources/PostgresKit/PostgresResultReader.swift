import CPQ

/// Turning a `PGresult` into values or an error: one place for the status checks every statement needs.
enum PostgresResultReader {
    /// The rows of a finished result, or the error it reports. Does not free `result`.
    static func rows(_ result: OpaquePointer) throws(PostgresError) -> PostgresRows {
        try check(result)
        let rowCount = PQntuples(result)
        let columnCount = PQnfields(result)
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        var rows: [[[UInt8]?]] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            rows.append((0..<columnCount).map { value(result, row: row, column: $0) })
        }
        let tag = String(cString: PQcmdTuples(result))
        let types = (0..<columnCount).map { UInt32(PQftype(result, $0)) }
        return PostgresRows(columns: columns, rows: rows, affectedRows: Int(tag), columnTypes: types)
    }

    /// Throws the error a result reports; returns for a command or tuple result.
    static func check(_ result: OpaquePointer) throws(PostgresError) {
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_SINGLE_TUPLE, PGRES_EMPTY_QUERY, PGRES_COPY_OUT, PGRES_COPY_IN:
            return
        default:
            throw error(of: result)
        }
    }

    /// The typed error of a failed result: its SQLSTATE and, where shareable, the primary message.
    static func error(of result: OpaquePointer) -> PostgresError {
        guard let state = field(result, UInt8(ascii: "C")) else {
            let message = String(cString: PQresultErrorMessage(result))
            return .client(reason: firstLine(message))
        }
        let message = PostgresError.messageIsShareable(sqlState: state)
            ? field(result, UInt8(ascii: "M")) ?? "" : "(message withheld: it may quote data)"
        return .server(sqlState: state, message: message)
    }

    /// The octets of one value, nil for NULL.
    static func value(_ result: OpaquePointer, row: Int32, column: Int32) -> [UInt8]? {
        guard PQgetisnull(result, row, column) == 0 else { return nil }
        let length = Int(PQgetlength(result, row, column))
        guard length > 0, let start = PQgetvalue(result, row, column) else { return [] }
        return start.withMemoryRebound(to: UInt8.self, capacity: length) { Array(UnsafeBufferPointer(start: $0, count: length)) }
    }

    static func firstLine(_ text: String) -> String {
        String(text.split(separator: "\n", omittingEmptySubsequences: true).first ?? "")
            .trimmingCharacters(in: " \t")
    }

    private static func field(_ result: OpaquePointer, _ code: UInt8) -> String? {
        PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var scalars = Substring(self)
        while let first = scalars.first, set.contains(first) { scalars.removeFirst() }
        while let last = scalars.last, set.contains(last) { scalars.removeLast() }
        return String(scalars)
    }
}

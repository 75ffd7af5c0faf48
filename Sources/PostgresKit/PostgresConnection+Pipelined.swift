import CPQ

extension PostgresConnection {
    /// Sends one statement with text parameters without waiting for it (libpq's asynchronous `PQsendQueryParams`):
    /// the server runs it while the caller does other work, and ``receive()`` collects its result. Until then the
    /// connection runs nothing else: the caller keeps at most one statement outstanding and receives it before any
    /// other call on this connection.
    public func send(_ sql: String, _ parameters: [String?] = []) throws(PostgresError) {
        let handle = try live()
        let sent = Self.withParameters(parameters) { values in
            PQsendQueryParams(handle, sql, Int32(values.count), nil, values, nil, nil, 0)
        }
        guard sent == 1 else { throw failure(nil) }
    }

    /// The rows of the statement ``send(_:_:)`` started, exactly as ``execute(_:_:)`` would have returned them
    /// (or its error); waits until the server has answered, and leaves the connection idle.
    public func receive() throws(PostgresError) -> PostgresRows {
        let handle = try live()
        var rows: PostgresRows?
        var pending: PostgresError?
        var results = 0
        while let result = PQgetResult(handle) {
            defer { PQclear(result) }
            results += 1
            guard pending == nil, rows == nil else { continue }
            do {
                rows = try PostgresResultReader.rows(result)
            } catch {
                pending = error
            }
        }
        if let pending { throw failure(pending) }
        guard let rows, results > 0 else { throw failure(nil) }
        return rows
    }
}

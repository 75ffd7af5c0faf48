import CSQLite

extension Connection {
    /// Whether SQLite interprets every `file:` filename as a URI, even when the connection is opened without
    /// ``init(path:mode:uri:)``'s `uri` (the library was built with `SQLITE_USE_URI`, as Debian's is). Only then
    /// can code that opens a plain path — a client store, for instance — be pointed at an in-memory database
    /// (`file:/name?vfs=memdb`).
    public static var interpretsFileURIsByDefault: Bool {
        sqlite3_compileoption_used("USE_URI") == 1
    }

    /// The `file:` URI of the in-memory database `name` (SQLite's `memdb` VFS), shared by every connection of the
    /// process that opens the same URI while at least one of them stays open. `name` must start with `/` to be
    /// shared and must not contain `?` or `#`.
    public static func memoryDatabaseURI(named name: String) -> String {
        "file:" + name + "?vfs=memdb"
    }

    /// The name of the process's default VFS (`unix` on Linux): what an `ATTACH` from a connection to an in-memory
    /// database must name in its URI (`&vfs=`) to reach a file, since attached databases otherwise inherit the
    /// connection's VFS.
    public static var defaultVFSName: String? {
        sqlite3_vfs_find(nil).flatMap { $0.pointee.zName.map { String(cString: $0) } }
    }

    /// Reads `buffer.count` octets at `offset` of the `schema` database's file straight through its VFS
    /// (`SQLITE_FCNTL_FILE_POINTER`, then the file's `xRead`), past the page cache: how the pages of an in-memory
    /// database are compared without serializing it. False when the database has no open file, or the read fails
    /// or comes up short. The caller makes sure no transaction writes to the file meanwhile.
    public func readFile(
        schema: String = "main", at offset: Int64, into buffer: UnsafeMutableRawBufferPointer
    ) -> Bool {
        guard let database = handle, let base = buffer.baseAddress, offset >= 0 else { return false }
        var file: UnsafeMutablePointer<sqlite3_file>?
        guard sqlite3_file_control(database, schema, SQLITE_FCNTL_FILE_POINTER, &file) == SQLITE_OK, let file,
              let read = file.pointee.pMethods?.pointee.xRead
        else { return false }
        return read(file, base, Int32(clamping: buffer.count), offset) == SQLITE_OK
    }
}

import SynchroStore
/// What the SDK reads from one application statement before SQLite compiles it (`spec/client-store.md` §13):
/// its kind, the write target, an INSERT's column list, and the forms the application SQL limits refuse.
///
/// SQLite remains the parser of record: anything not recognised here is compiled by SQLite under the
/// authorizer, which sees the resolved objects.
struct ApplicationStatement {
    enum Kind: Equatable {
        /// `SELECT` or `VALUES` (optionally after `WITH`).
        case read
        /// `INSERT`, `UPDATE` or `DELETE` (optionally after `WITH`).
        case write(WriteOperation)
        /// Anything else (DDL, PRAGMA, EXPLAIN…), left to SQLite and the authorizer.
        case other
    }

    enum WriteOperation: String {
        case insert, update, delete
    }

    /// The statement kind.
    let kind: Kind
    /// The table an INSERT, UPDATE or DELETE targets (the last part of a qualified name).
    let targetTable: String?
    /// An INSERT's column list: nil without a list (all columns), empty for `DEFAULT VALUES`.
    let insertColumns: [String]?
    /// Whether an INSERT carries an upsert clause (`ON CONFLICT … DO …`).
    let hasUpsert: Bool

    private static let transactionKeywords: Set<String> = ["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"]

    /// Classifies `sql`, refusing what the application SQL limits forbid lexically: no statement, several
    /// statements, transaction control and conflict clauses.
    static func classify(_ sql: String) throws(ApplicationSQLError) -> ApplicationStatement {
        let tokens: [SQLLexer.Token]
        do {
            tokens = try SQLLexer.tokens(sql)
        } catch {
            throw .invalidSQL
        }
        var parser = Parser(tokens: try singleStatement(tokens))
        try parser.skipWith()
        guard let head = parser.keyword() else {
            return ApplicationStatement(kind: .other, targetTable: nil, insertColumns: nil, hasUpsert: false)
        }
        if transactionKeywords.contains(head) {
            throw .transactionControl(keyword: head)
        }
        switch head {
        case "SELECT", "VALUES":
            return ApplicationStatement(kind: .read, targetTable: nil, insertColumns: nil, hasUpsert: false)
        case "REPLACE":
            throw .conflictClause("REPLACE")
        case "INSERT":
            return try parser.insert()
        case "UPDATE":
            return try parser.update()
        case "DELETE":
            return try parser.delete()
        default:
            return ApplicationStatement(kind: .other, targetTable: nil, insertColumns: nil, hasUpsert: false)
        }
    }

    /// The tokens of the one statement: at most one `;`, and only trailing ones. A `CREATE TRIGGER` body holds
    /// semicolons of its own, so for it SQLite's compiler (which refuses any second statement) decides.
    private static func singleStatement(_ tokens: [SQLLexer.Token]) throws(ApplicationSQLError) -> [SQLLexer.Token] {
        if isCreateTrigger(tokens) {
            return tokens
        }
        guard let end = tokens.firstIndex(where: { $0.isSymbol(";") }) else {
            guard !tokens.isEmpty else { throw .emptyStatement }
            return tokens
        }
        guard tokens[end...].allSatisfy({ $0.isSymbol(";") }) else { throw .multipleStatements }
        guard end > 0 else { throw .emptyStatement }
        return Array(tokens[..<end])
    }

    private static func isCreateTrigger(_ tokens: [SQLLexer.Token]) -> Bool {
        guard tokens.first?.keyword == "CREATE" else { return false }
        let next = tokens.dropFirst().first?.keyword
        let kind = next == "TEMP" || next == "TEMPORARY" ? tokens.dropFirst(2).first?.keyword : next
        return kind == "TRIGGER"
    }

    private struct Parser {
        let tokens: [SQLLexer.Token]
        var index = 0

        init(tokens: [SQLLexer.Token]) {
            self.tokens = tokens
        }

        func keyword(at offset: Int = 0) -> String? {
            index + offset < tokens.count ? tokens[index + offset].keyword : nil
        }

        func isSymbol(_ character: Character) -> Bool {
            index < tokens.count && tokens[index].isSymbol(character)
        }

        mutating func consume(_ keyword: String) -> Bool {
            guard self.keyword() == keyword else { return false }
            index += 1
            return true
        }

        mutating func require(_ keyword: String) throws(ApplicationSQLError) {
            guard consume(keyword) else { throw .invalidSQL }
        }

        mutating func identifier() throws(ApplicationSQLError) -> String {
            guard index < tokens.count, let name = tokens[index].identifier else { throw .invalidSQL }
            index += 1
            return name
        }

        /// `schema.name` resolves to `name`.
        mutating func objectName() throws(ApplicationSQLError) -> String {
            var name = try identifier()
            while isSymbol(".") {
                index += 1
                name = try identifier()
            }
            return name
        }

        mutating func skipParentheses() throws(ApplicationSQLError) {
            guard isSymbol("(") else { throw .invalidSQL }
            var depth = 0
            while index < tokens.count {
                if tokens[index].isSymbol("(") { depth += 1 }
                if tokens[index].isSymbol(")") { depth -= 1 }
                index += 1
                if depth == 0 { return }
            }
            throw .invalidSQL
        }

        /// `WITH [RECURSIVE] name [(columns)] AS [[NOT] MATERIALIZED] (body), …`.
        mutating func skipWith() throws(ApplicationSQLError) {
            guard consume("WITH") else { return }
            _ = consume("RECURSIVE")
            repeat {
                _ = try identifier()
                if isSymbol("(") { try skipParentheses() }
                try require("AS")
                if consume("NOT") { try require("MATERIALIZED") } else { _ = consume("MATERIALIZED") }
                try skipParentheses()
            } while consumeSymbol(",")
        }

        mutating func consumeSymbol(_ character: Character) -> Bool {
            guard isSymbol(character) else { return false }
            index += 1
            return true
        }

        /// Conflict clauses have no portable capture semantics: `OR REPLACE` deletes and re-inserts.
        mutating func refuseConflictClause() throws(ApplicationSQLError) {
            guard consume("OR") else { return }
            throw .conflictClause("OR \(keyword() ?? "")")
        }

        mutating func insert() throws(ApplicationSQLError) -> ApplicationStatement {
            try require("INSERT")
            try refuseConflictClause()
            try require("INTO")
            let table = try objectName()
            if consume("AS") { _ = try identifier() }
            var columns: [String]?
            if isSymbol("(") {
                index += 1
                var names: [String] = []
                repeat { names.append(try identifier()) } while consumeSymbol(",")
                guard consumeSymbol(")") else { throw .invalidSQL }
                columns = names
            } else if keyword() == "DEFAULT" {
                columns = []
            }
            return ApplicationStatement(
                kind: .write(.insert), targetTable: table, insertColumns: columns, hasUpsert: hasUpsertClause())
        }

        mutating func update() throws(ApplicationSQLError) -> ApplicationStatement {
            try require("UPDATE")
            try refuseConflictClause()
            let table = try objectName()
            if consume("AS") { _ = try identifier() }
            if consume("INDEXED") { try require("BY"); _ = try identifier() } else if consume("NOT") {
                try require("INDEXED")
            }
            try require("SET")
            return ApplicationStatement(kind: .write(.update), targetTable: table, insertColumns: nil, hasUpsert: false)
        }

        mutating func delete() throws(ApplicationSQLError) -> ApplicationStatement {
            try require("DELETE")
            try require("FROM")
            let table = try objectName()
            return ApplicationStatement(kind: .write(.delete), targetTable: table, insertColumns: nil, hasUpsert: false)
        }

        /// `ON CONFLICT … DO` at nesting depth 0 after the INSERT head.
        func hasUpsertClause() -> Bool {
            var depth = 0
            var sawOnConflict = false
            for position in index..<tokens.count {
                let token = tokens[position]
                if token.isSymbol("(") { depth += 1 }
                if token.isSymbol(")") { depth -= 1 }
                guard depth == 0 else { continue }
                if token.keyword == "ON", position + 1 < tokens.count, tokens[position + 1].keyword == "CONFLICT" {
                    sawOnConflict = true
                }
                if sawOnConflict && token.keyword == "DO" {
                    return true
                }
            }
            return false
        }
    }
}

import Foundation
import SQLiteKit
import SynchroClient
import SynchroProtocol
import SystemKit

/// `seedkit sql`: one statement through the client store's application SQL API, exactly as an app runs it.
///
/// The API classifies the statement: it is tried as a read (`query`), and a statement the API calls a write
/// runs through `execute`, so a write to a synced table is captured as a pending mutation. A refusal prints the
/// broken rule and the error's message, which never holds values or SQL literals.
enum SqlCommand {
    static let spec = CommandSpec(
        "sql", "one application SQL statement on a client store",
        positionals: [
            PositionalSpec(placeholder: "SQL", help: "the statement", kind: .text),
            PositionalSpec(
                placeholder: "ARG", help: "a value bound to the next ? (null, integer, real or text)", optional: true,
                repeatable: true, kind: .text),
        ],
        options: [
            .value("db", "FILE", .path, "the client store", required: true),
            .json("the rows or the change count as one JSON object"),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        guard let path = arguments.values["db"], !path.isEmpty else {
            throw Arguments.UsageError(message: "sql needs --db FILE")
        }
        guard let sql = arguments.positionals.first, !sql.isEmpty else {
            throw Arguments.UsageError(message: "sql needs an SQL statement")
        }
        let bindings = arguments.positionals.dropFirst().map(binding)
        let json = arguments.flags.contains("json")
        if let status = FailureReport.missing(path, command: "sql", json: json) { return status }
        let console = arguments.console("sql")

        let store: ClientStore
        do {
            store = try openExistingStore(path: path)
        } catch {
            return error.report(command: "sql", json: json)
        }
        defer { store.close() }
        console.detail("store \(path), \(bindings.count) bound parameter(s)")
        do throws(ApplicationSQLError) {
            return try runStatement(sql, bindings, on: store, json: json, console: console)
        } catch {
            // A closed store or a store failure is not the statement's fault. Compared by rule, not by pattern:
            // matching typed errors by pattern crashes the 6.3 compiler (see SyncCommand).
            let status: ExitStatus = error.rule == "closed" || error.rule == "store" ? .checkFailed : .invalidInput
            return FailureReport(
                rule: error.rule, message: "statement refused (\(error.rule)): \(redactingLiterals(error.description))",
                status: status
            ).print(command: "sql", json: json)
        }
    }

    /// Reads through `query`; what the API classifies as a write goes through `execute` instead. The rows read
    /// are the result; a write's `N rows changed` is a status line that `--quiet` drops (as `psql -q` does).
    private static func runStatement(
        _ sql: String, _ bindings: [SQLiteValue], on store: ClientStore, json: Bool, console: Console
    ) throws(ApplicationSQLError) -> ExitStatus {
        let start = ContinuousClock.now
        let rows: [Row]
        do {
            rows = try store.query(sql, bindings)
        } catch {
            guard error == .writeInQuery else { throw error }
            console.detail("a write: runs through execute in its own managed transaction")
            let changed = try store.execute(sql, bindings)
            console.detail("\(changed) row(s) changed", since: start)
            if json {
                return JSONLines.write(["changed": .number(JSONNumber(Int64(changed)))]) ? .success : .checkFailed
            }
            console.info("\(changed) \(changed == 1 ? "row" : "rows") changed\n")
            return .success
        }
        console.detail("a read: \(rows.count) row(s)", since: start)
        if json {
            for row in rows where !JSONLines.write(object(row)) {
                Terminal.err("seedkit: a row has no I-JSON form (a text holds a Unicode noncharacter)\n")
                return .checkFailed
            }
        } else {
            console.result(RowTable(rows).text)
        }
        return .success
    }

    /// `message` with the token of a SQLite syntax error (`near "'abc'": syntax error`) replaced when it is not a
    /// keyword, a name or punctuation: SQLite quotes the offending token, which can be a string or number literal.
    static func redactingLiterals(_ message: String) -> String {
        guard let start = message.range(of: "near \""),
              let end = message.range(
                  of: "\": syntax error", options: .backwards, range: start.upperBound..<message.endIndex)
        else { return message }
        let token = message[start.upperBound..<end.lowerBound]
        let isName = token.first.map { $0.isLetter || $0 == "_" } == true
            && token.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
        let isPunctuation = !token.isEmpty && token.allSatisfy { "(),;*=<>!|+-/%&.~".contains($0) }
        guard !isName && !isPunctuation else { return message }
        return message.replacingCharacters(in: start.lowerBound..<end.upperBound, with: "near a literal: syntax error")
    }

    /// A positional argument as a parameter: `null`, a canonical integer, a decimal real, else text.
    ///
    /// Integers must be spelled canonically (`007` and `+7` stay text) so identifiers that look numeric keep
    /// their spelling; reals need a digit, a point or an exponent and nothing but decimal notation (`1.5`, `2e3`;
    /// `inf` and `nan` stay text).
    static func binding(_ word: String) -> SQLiteValue {
        if word == "null" { return .null }
        if let integer = Int64(word), String(integer) == word { return .integer(integer) }
        let isDecimal = word.contains(where: \.isNumber) && word.contains(where: { ".eE".contains($0) })
            && word.allSatisfy { $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }
        if isDecimal, let real = Double(word), real.isFinite { return .real(real) }
        return .text(word)
    }

    /// One row as a JSON object, column name → value; a repeated column name keeps its first value.
    private static func object(_ row: Row) -> [(String, JSONValue)] {
        var seen: Set<String> = []
        var members: [(String, JSONValue)] = []
        for (name, value) in zip(row.columns, row.values) where seen.insert(name).inserted {
            members.append((name, jsonValue(value)))
        }
        return members
    }

    /// Integers and finite reals as numbers, text as strings, blobs as base64url strings; a non-finite real
    /// (SQLite keeps infinities) as the string `Infinity` or `-Infinity`, since JSON has no such number.
    static func jsonValue(_ value: SQLiteValue) -> JSONValue {
        switch value {
        case .null: .null
        case .integer(let integer): .number(JSONNumber(integer))
        case .real(let real): JSONNumber(real).map(JSONValue.number) ?? .string(real < 0 ? "-Infinity" : "Infinity")
        case .text(let text): .string(text)
        case .blob(let bytes): .string(Base64URL.encode(bytes))
        }
    }

    /// Why a store could not be opened.
    struct StoreOpenError: Error {
        let message: String
        /// The rule, as the JSON error object names it.
        var rule: String = "store_unusable"
        /// `locked` when another process owns the store, else `checkFailed`.
        var exitStatus: ExitStatus = .checkFailed

        /// Prints the failure for `command` and returns its exit status.
        func report(command: String, json: Bool) -> ExitStatus {
            FailureReport(rule: rule, message: message, status: exitStatus).print(command: command, json: json)
        }
    }

    /// Opens an existing store (never creating one) with the client ID it is bound to. Opening migrates an
    /// older layout, as every open of the store does.
    static func openExistingStore(path: String) throws(StoreOpenError) -> ClientStore {
        guard FileManager.default.fileExists(atPath: path) else {
            throw StoreOpenError(
                message: SystemError(operation: "open", path: path, code: ENOENT).description, rule: "not_found",
                exitStatus: .invalidInput)
        }
        // A fresh store has no bound ID yet; any clean placeholder opens it, and nothing here persists it.
        let placeholder = "seedkit-cli"
        do {
            let store = try ClientStore(configuration: ClientStoreConfiguration(path: path, clientID: placeholder))
            guard let bound = try store.meta(.clientServerID), !bound.isEmpty, bound != placeholder else {
                return store
            }
            store.close()
            return try ClientStore(configuration: ClientStoreConfiguration(path: path, clientID: bound))
        } catch {
            if StoreInUse.matches(error) {
                throw StoreOpenError(
                    message: "\(error)\nseedkit: a store has one owner at a time; run again once it has finished",
                    rule: "store_in_use", exitStatus: .locked)
            }
            throw StoreOpenError(message: "cannot open the client store (\(error.rule)): \(error)", rule: error.rule)
        }
    }
}

/// Rows as an aligned text table: a header, a rule, one line per row and a row count. NULL prints as `NULL`,
/// blobs as base64url, and control characters in text are escaped so each row stays on one line.
struct RowTable {
    let rows: [Row]

    init(_ rows: [Row]) {
        self.rows = rows
    }

    var text: String {
        let count = "(\(rows.count) \(rows.count == 1 ? "row" : "rows"))\n"
        guard let columns = rows.first?.columns else { return count }
        let cells = rows.map { $0.values.map(Self.cell) }
        let widths = columns.indices.map { index in
            cells.reduce(columns[index].count) { max($0, $1[index].count) }
        }
        func line(_ fields: [String]) -> String {
            zip(fields, widths).map { $0 + String(repeating: " ", count: $1 - $0.count) }
                .joined(separator: "  ").trimmingTrailingSpaces() + "\n"
        }
        return line(columns) + line(widths.map { String(repeating: "-", count: $0) })
            + cells.map(line).joined() + count
    }

    private static func cell(_ value: SQLiteValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let integer): String(integer)
        case .real(let real): "\(real)"
        case .text(let text):
            text.unicodeScalars.map {
                $0.properties.generalCategory == .control ? $0.escaped(asASCII: true) : String($0)
            }.joined()
        case .blob(let bytes): Base64URL.encode(bytes)
        }
    }
}

/// One canonical JSON object per line on standard output.
enum JSONLines {
    /// Writes one line; false when the object has no canonical form (nothing is written then).
    static func write(_ members: [(String, JSONValue)]) -> Bool {
        let object = JSONObject(members.map { JSONMember($0.0, $0.1) })
        guard let bytes = try? CanonicalJSON.encode(.object(object)) else { return false }
        Terminal.out(bytes: bytes + [UInt8(ascii: "\n")])
        return true
    }

    static func write(_ members: KeyValuePairs<String, JSONValue>) -> Bool {
        write(members.map { ($0.key, $0.value) })
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

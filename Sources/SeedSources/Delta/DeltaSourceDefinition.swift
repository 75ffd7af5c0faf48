import Foundation
import SynchroProtocol

/// A delta source definition (docs/delta-sources.md): where a non-Synchro backend's delta endpoints are, how to
/// authenticate, and per entity type its table, key, typed columns and paging shape. Parsed with the strict JSON
/// parser; every violation names its member. Credentials are never in the file: `auth.bearer_env` names the
/// environment variable that holds the token.
public struct DeltaSourceDefinition: Sendable {
    /// The `format` member every definition carries.
    public static let format = "seedkit-delta-source/1"

    /// One column: its name in the row JSON and the table, and its portable type.
    public struct Column: Sendable, Equatable {
        public let name: String
        public let type: PortableType
        public let nullable: Bool
    }

    /// How an entity type pages (seed 003's change feed or seed 004's declarative list).
    public enum Paging: Sendable, Equatable {
        /// `GET path?since=S&limit=L` answering `{changes, next_cursor, has_more, reset?, server_time?}`.
        case changes(path: String, limit: Int, maxResets: Int)
        /// `GET basePath?<template>` answering a JSON array of rows; the cursor is the last row's
        /// `deletedField ?? cursorField`; a full page means more.
        case list(
            basePath: String, template: DeltaListQueryTemplate, cursorField: String, deletedField: String,
            pageSize: Int, maxPagesPerSession: Int, initialSince: String)
    }

    /// One entity type.
    public struct Entity: Sendable {
        public let name: String
        public let table: String
        public let primaryKey: String
        public let columns: [Column]
        public let paging: Paging
        /// Extra request headers of this entity, after the source's (values never printed).
        public let headers: [(String, String)]

        /// The index of the primary key column.
        public var keyIndex: Int { columns.firstIndex { $0.name == primaryKey } ?? 0 }
    }

    public let baseURL: String
    /// The environment variable holding the bearer token, when the API needs one.
    public let bearerEnvironmentVariable: String?
    public let headers: [(String, String)]
    public let entities: [Entity]

    /// Parses and validates a definition file's octets; a header given as `{"env": "VAR"}` takes its value from
    /// `environment` (so an API key need not be written in the file).
    public init(
        bytes: [UInt8], environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(DeltaSourceError) {
        let json: JSONValue
        do {
            json = try StrictJSONParser().parse(bytes)
        } catch {
            throw .definition(member: "$", rule: "not_strict_json: \(error.rule.rawValue) at octet \(error.offset)")
        }
        var reader = try MemberReader(json, path: "$")
        guard try reader.string("format") == Self.format else {
            throw .definition(member: "format", rule: "unsupported_format")
        }
        let base = try reader.string("base_url")
        guard base.hasPrefix("http://") || base.hasPrefix("https://"), !base.contains("@"), !base.contains("?"),
              !base.contains("#"), !base.contains(" ")
        else { throw .definition(member: "base_url", rule: "not_an_http_url_without_credentials_query_or_fragment") }
        baseURL = base.hasSuffix("/") ? String(base.dropLast()) : base
        if let auth = try reader.optionalObject("auth") {
            var authReader = try MemberReader(.object(auth), path: "auth")
            let variable = try authReader.string("bearer_env")
            guard !variable.isEmpty, variable.utf8.allSatisfy({ $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39)
                || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) })
            else { throw .definition(member: "auth.bearer_env", rule: "not_an_environment_variable_name") }
            try authReader.finish()
            bearerEnvironmentVariable = variable
        } else {
            bearerEnvironmentVariable = nil
        }
        headers = try Self.headers(reader.optionalObject("headers"), path: "headers", environment: environment)
        guard let list = try reader.optionalArray("entities"), !list.isEmpty else {
            throw .definition(member: "entities", rule: "missing_or_empty")
        }
        var entities: [Entity] = []
        for (index, value) in list.enumerated() {
            let entity = try Self.entity(value, path: "entities[\(index)]", environment: environment)
            if entities.contains(where: { $0.name == entity.name }) {
                throw .definition(member: "entities[\(index)].name", rule: "duplicate_entity")
            }
            if entities.contains(where: { $0.table.lowercased() == entity.table.lowercased() }) {
                throw .definition(member: "entities[\(index)].table", rule: "duplicate_table")
            }
            entities.append(entity)
        }
        try reader.finish()
        self.entities = entities
    }

    private static func entity(
        _ value: JSONValue, path: String, environment: [String: String]
    ) throws(DeltaSourceError) -> Entity {
        var reader = try MemberReader(value, path: path)
        let name = try reader.string("name")
        guard !name.isEmpty, name.utf8.count <= 128 else { throw .definition(member: "\(path).name", rule: "empty") }
        let table = try reader.string("table")
        guard isIdentifier(table), !table.lowercased().hasPrefix("sqlite_"), !table.lowercased().hasPrefix("_delta")
        else { throw .definition(member: "\(path).table", rule: "not_a_plain_identifier_or_reserved") }
        let key = try reader.string("primary_key")
        guard let columnList = try reader.optionalArray("columns"), !columnList.isEmpty else {
            throw .definition(member: "\(path).columns", rule: "missing_or_empty")
        }
        var columns: [Column] = []
        for (index, item) in columnList.enumerated() {
            let columnPath = "\(path).columns[\(index)]"
            var columnReader = try MemberReader(item, path: columnPath)
            let columnName = try columnReader.string("name")
            guard isIdentifier(columnName) else {
                throw .definition(member: "\(columnPath).name", rule: "not_a_plain_identifier")
            }
            guard !columns.contains(where: { $0.name.lowercased() == columnName.lowercased() }) else {
                throw .definition(member: "\(columnPath).name", rule: "duplicate_column")
            }
            guard let type = PortableType(wireName: try columnReader.string("type")) else {
                throw .definition(member: "\(columnPath).type", rule: "unknown_portable_type")
            }
            let nullable = try columnReader.optionalBool("nullable") ?? false
            try columnReader.finish()
            columns.append(Column(name: columnName, type: type, nullable: nullable))
        }
        guard let keyColumn = columns.first(where: { $0.name == key }) else {
            throw .definition(member: "\(path).primary_key", rule: "not_a_declared_column")
        }
        guard keyColumn.type.isKeyType, !keyColumn.nullable else {
            throw .definition(member: "\(path).primary_key", rule: "key_must_be_non_null_string_int_or_int64")
        }
        let headers = try Self.headers(
            reader.optionalObject("headers"), path: "\(path).headers", environment: environment)
        guard let pagingObject = try reader.optionalObject("paging") else {
            throw .definition(member: "\(path).paging", rule: "missing")
        }
        let paging = try Self.paging(pagingObject, path: "\(path).paging")
        try reader.finish()
        return Entity(name: name, table: table, primaryKey: key, columns: columns, paging: paging, headers: headers)
    }

    private static func paging(_ object: JSONObject, path: String) throws(DeltaSourceError) -> Paging {
        var reader = try MemberReader(.object(object), path: path)
        let shape = try reader.string("shape")
        let paging: Paging
        switch shape {
        case "changes":
            let route = try reader.string("path")
            try checkPath(route, member: "\(path).path")
            let limit = try reader.optionalInt("limit", in: 1...2000) ?? 500
            let resets = try reader.optionalInt("max_resets", in: 0...100) ?? 3
            paging = .changes(path: route, limit: limit, maxResets: resets)
        case "list":
            let base = try reader.string("base_path")
            try checkPath(base, member: "\(path).base_path")
            let template = try DeltaListQueryTemplate(
                try reader.string("list_query_template"), member: "\(path).list_query_template")
            let cursor = try reader.optionalString("cursor_field") ?? "updatedAt"
            let deleted = try reader.optionalString("deleted_field") ?? "deletedAt"
            guard !cursor.isEmpty, !deleted.isEmpty else { throw .definition(member: path, rule: "empty_field_name") }
            let size = try reader.optionalInt("page_size", in: 1...2000) ?? 50
            let pages = try reader.optionalInt("max_pages_per_session", in: 1...1_000_000) ?? 20
            let since = try reader.optionalString("initial_since") ?? "1970-01-01T00:00:00.000Z"
            paging = .list(
                basePath: base, template: template, cursorField: cursor, deletedField: deleted, pageSize: size,
                maxPagesPerSession: pages, initialSince: since)
        default:
            throw .definition(member: "\(path).shape", rule: "not_changes_or_list")
        }
        try reader.finish()
        return paging
    }

    private static func checkPath(_ route: String, member: String) throws(DeltaSourceError) {
        guard route.hasPrefix("/"), !route.contains("?"), !route.contains("#"),
              route.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
        else { throw .definition(member: member, rule: "not_an_absolute_path_without_query") }
    }

    private static func headers(
        _ object: JSONObject?, path: String, environment: [String: String]
    ) throws(DeltaSourceError) -> [(String, String)] {
        guard let object else { return [] }
        var headers: [(String, String)] = []
        for member in object.members {
            let value: String
            if let text = member.value.stringValue {
                value = text
            } else if let reference = member.value.objectValue, reference.count == 1,
                      let variable = reference["env"]?.stringValue {
                guard let text = environment[variable], !text.isEmpty else {
                    throw .definition(member: "\(path).\(member.key).env", rule: "environment_variable_not_set")
                }
                value = text
            } else {
                throw .definition(member: "\(path).\(member.key)", rule: "not_a_string_or_env_reference")
            }
            let tokenOK = !member.key.isEmpty && member.key.unicodeScalars.allSatisfy {
                $0.value > 0x20 && $0.value < 0x7F && !"()<>@,;:\\\"/[]?={}".unicodeScalars.contains($0)
            }
            guard tokenOK, member.key.lowercased() != "authorization", member.key.lowercased() != "host" else {
                throw .definition(member: "\(path).\(member.key)", rule: "not_an_allowed_header_name")
            }
            guard value.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }) else {
                throw .definition(member: "\(path).\(member.key)", rule: "control_character_in_value")
            }
            headers.append((member.key, value))
        }
        return headers
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.utf8.first, name.utf8.count <= 64, !(0x30...0x39).contains(first) else { return false }
        return name.utf8.allSatisfy { $0 == 0x5F || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0)
            || (0x61...0x7A).contains($0) }
    }
}

/// Reads an object's members by name, each failure naming the member; ``finish()`` refuses members nobody read.
struct MemberReader {
    private let object: JSONObject
    private let path: String
    private var read: Set<String> = []

    init(_ value: JSONValue, path: String) throws(DeltaSourceError) {
        guard let object = value.objectValue else { throw .definition(member: path, rule: "not_an_object") }
        var seen = Set<String>()
        for member in object.members where !seen.insert(member.key).inserted {
            throw .definition(member: Self.join(path, member.key), rule: "duplicate_member")
        }
        self.object = object
        self.path = path
    }

    private static func join(_ path: String, _ key: String) -> String { path == "$" ? key : "\(path).\(key)" }

    private func failure(_ key: String, _ rule: String) -> DeltaSourceError {
        .definition(member: Self.join(path, key), rule: rule)
    }

    private mutating func value(_ key: String) -> JSONValue? {
        read.insert(key)
        return object[key]
    }

    mutating func string(_ key: String) throws(DeltaSourceError) -> String {
        guard let value = try optionalString(key) else { throw failure(key, "missing") }
        return value
    }

    mutating func optionalString(_ key: String) throws(DeltaSourceError) -> String? {
        guard let value = value(key) else { return nil }
        guard let text = value.stringValue else { throw failure(key, "not_a_string") }
        return text
    }

    mutating func optionalBool(_ key: String) throws(DeltaSourceError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let flag = value.boolValue else { throw .definition(member: Self.join(path, key), rule: "not_a_boolean") }
        return flag
    }

    mutating func optionalInt(_ key: String, in range: ClosedRange<Int>) throws(DeltaSourceError) -> Int? {
        guard let value = value(key) else { return nil }
        guard let number = value.numberValue?.exactInt64, let int = Int(exactly: number), range.contains(int) else {
            throw failure(key, "not_an_integer_in_\(range.lowerBound)_\(range.upperBound)")
        }
        return int
    }

    mutating func optionalObject(_ key: String) throws(DeltaSourceError) -> JSONObject? {
        guard let value = value(key) else { return nil }
        guard let object = value.objectValue else { throw failure(key, "not_an_object") }
        return object
    }

    mutating func optionalArray(_ key: String) throws(DeltaSourceError) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard let array = value.arrayValue else { throw failure(key, "not_an_array") }
        return array
    }

    func finish() throws(DeltaSourceError) {
        for member in object.members where !read.contains(member.key) {
            throw .definition(member: Self.join(path, member.key), rule: "unknown_member")
        }
    }
}

@testable import SynchroServer
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Fuzz-style intake tests of the four protocol routes (`spec/wire-protocol.md` §1.4, §2.1, §2.2,
/// §8.4 step 3, §9): a fixed set of malformed bodies per route, then a bounded set of seeded
/// random mutations of a valid body. Every rejection must be a 4xx error envelope — never a 5xx,
/// never a dropped connection — and must leave every table of the database unchanged.
@Suite("Malformed requests")
struct MalformedRequestTests {
    enum Route: String, CaseIterable, Sendable {
        case connect, push, pull, rebuild

        var path: String { "/sync/\(rawValue)" }

        /// The random stream of this route's mutations: fixed, so every run sends the same bodies.
        var seed: UInt64 {
            switch self {
            case .connect: 0x5EED_F022_0001
            case .push: 0x5EED_F022_0002
            case .pull: 0x5EED_F022_0003
            case .rebuild: 0x5EED_F022_0004
            }
        }
    }

    @Test("every malformed body is a 4xx error envelope and changes no durable state", arguments: Route.allCases)
    func malformedBodies(_ route: Route) throws {
        let fixture = try Fixture(route)
        let cases = MalformedBodies.all(valid: fixture.valid)
        #expect(cases.count > 60)
        var fingerprint = try fixture.server.engine.stateFingerprint()
        for (name, body) in cases {
            let reply = try fixture.post(body)
            // The protocol gate decides before structural validation (§8.4 steps 2–3): any connect
            // `protocol_version` other than the integer 3 is 426 (§3.3 row 1).
            let gated = route == .connect && name.hasPrefix("protocol_version ") && !name.hasSuffix("(not JSON)")
            let allowed: Set<Int> = gated ? [426] : [400]
            expectRejection(reply, allowed: allowed, "\(route.rawValue): \(name)")
            let after = try fixture.server.engine.stateFingerprint()
            #expect(after == fingerprint, "\(route.rawValue): \(name) changed \(changedTables(fingerprint, after))")
            fingerprint = after
        }
        try fixture.expectStillServing()
    }

    @Test("seeded random mutations never get a 5xx or a dropped connection; every rejection changes nothing",
          arguments: Route.allCases)
    func randomMutations(_ route: Route) throws {
        let fixture = try Fixture(route)
        var random = SplitMix64(state: route.seed)
        var fingerprint = try fixture.server.engine.stateFingerprint()
        var rejected = 0
        for round in 0..<Self.mutationsPerRoute {
            let body = Mutator.mutate(fixture.valid, using: &random)
            let reply = try fixture.post(body)
            if reply.status == 200 {
                // A mutation can still be a valid request (a flipped letter in a platform name):
                // it may then change state like any accepted request.
                fingerprint = try fixture.server.engine.stateFingerprint()
                continue
            }
            rejected += 1
            // 409: a still well-formed body can meet an identity or generation gate (§8.4 4–6).
            expectRejection(reply, allowed: [400, 401, 409, 422, 426], "\(route.rawValue) mutation \(round)")
            let after = try fixture.server.engine.stateFingerprint()
            let changed = changedTables(fingerprint, after)
            #expect(after == fingerprint, "\(route.rawValue) mutation \(round) changed \(changed)")
        }
        // Most mutations break the body; the few that do not still prove nothing here.
        #expect(rejected > Self.mutationsPerRoute / 2)
        try fixture.expectStillServing()
    }

    static let mutationsPerRoute = 150

    /// The shape every rejection must have: an allowed 4xx status, JSON, exactly the error object
    /// with a known code of that status, not retryable, and no `Retry-After` (§1.3, §8.1, §8.2).
    func expectRejection(
        _ reply: RunningServer.Reply, allowed: Set<Int>, _ context: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(allowed.contains(reply.status), "\(context): status \(reply.status)", sourceLocation: sourceLocation)
        #expect(reply.header("Content-Type") == "application/json", "\(context)", sourceLocation: sourceLocation)
        #expect(reply.header("Retry-After") == nil, "\(context)", sourceLocation: sourceLocation)
        #expect(reply.object.keys == ["error"], "\(context): \(reply.text)", sourceLocation: sourceLocation)
        let code = reply.errorCode.flatMap(WireErrorCode.init(rawValue:))
        #expect(code?.httpStatus == reply.status, "\(context): code \(reply.errorCode ?? "none")",
                sourceLocation: sourceLocation)
        #expect(reply.error?["retryable"] == .bool(false), "\(context)", sourceLocation: sourceLocation)
    }

    func changedTables(_ before: [String: String], _ after: [String: String]) -> [String] {
        Set(before.keys).union(after.keys).filter { before[$0] != after[$0] }.sorted()
    }
}

/// A server with one connected client of user alice and a valid request body for one route.
struct MalformedRequestFixture {
    let route: MalformedRequestTests.Route
    let server: RunningServer
    /// The members of a body the server answers with 200, in order, as parsed values.
    let valid: JSONObject
    /// A valid body with identities of its own (batch, mutations, rebuild attempt), so that a
    /// random mutation that happened to stay valid cannot have claimed them first.
    let health: JSONObject

    init(_ route: MalformedRequestTests.Route) throws {
        self.route = route
        server = try RunningServer(rows: 10)
        let client = try WireClient.connect(server, clientID: "fuzz-client")
        let body: JSONValue
        var health: JSONValue?
        switch route {
        case .connect:
            body = object([
                "client_id": .string(client.clientID), "client_generation": .number(JSONNumber(client.generation)),
                "platform": .string("ios"), "app_version": .string("2.4.0"), "protocol_version": .number(JSONNumber(3)),
                "schema": client.schema, "scope_set_version": .number(JSONNumber(client.scopeSetVersion)),
                "known_scopes": object(["catalog": object(["cursor": .null])]),
            ])
            // The identity is known from its first connect (upstream `synchro_connect`), so a body without the
            // generation is the 400 of a known identity.
        case .push:
            let pusher = PushTestClient(
                server: server, user: client.user, clientID: client.clientID, generation: client.generation,
                schema: try CanonicalJSON.string(client.schema), manifest: client.manifest,
                scopeSetVersion: client.scopeSetVersion)
            let text = pusher.body(batch: 7, [
                pusher.insertNote(1, note: "fuzz-1"),
                pusher.mutation(
                    2, "update", pk: pusher.notePK("fuzz-2"), base: "v1", columns: #"{"fld_note_pinned":true}"#),
            ])
            body = try StrictJSONParser().parse(Array(text.utf8))
            let healthText = pusher.body(batch: 0x7777, [pusher.insertNote(0x7700, note: "fuzz-health")])
            health = try StrictJSONParser().parse(Array(healthText.utf8))
        case .pull:
            let cursor = try client.rebuild(scope: "catalog", limit: 100).finalCursor
            body = client.pullBody(scopes: [("catalog", cursor), ("user:alice", nil)], limit: 10)
        case .rebuild:
            body = client.rebuildBody(
                scope: "catalog", rebuildID: "0193f0a4-6a20-7c3e-9b11-4d2e8f7a6b01", cursor: nil, limit: 10)
            health = client.rebuildBody(
                scope: "catalog", rebuildID: "0193f0a4-6a20-7c3e-9b11-4d2e8f7a6bff", cursor: nil, limit: 10)
        }
        valid = try #require(body.objectValue)
        self.health = try #require((health ?? body).objectValue)
    }

    func post(_ body: [UInt8]) throws -> RunningServer.Reply {
        try server.post(route.path, bytes: body)
    }

    /// A valid body is still answered with 200: no malformed request broke the server.
    func expectStillServing() throws {
        let reply = try post(RawJSON.value(.object(health)))
        #expect(reply.status == 200, "the valid \(route.rawValue) body now gets \(reply.status): \(reply.text)")
    }
}

extension MalformedRequestTests {
    typealias Fixture = MalformedRequestFixture
}

/// JSON text built member by member, so that tests can write what no encoder would: number
/// literals as given (`1.0`, `-0`), duplicate names, invalid UTF-8, lone surrogate escapes.
enum RawJSON {
    typealias Member = (key: [UInt8], value: [UInt8])

    static func object(_ members: [Member]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (index, member) in members.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out += member.key + [UInt8(ascii: ":")] + member.value
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// A member name as an escaped JSON string.
    static func key(_ name: String) -> [UInt8] {
        var out: [UInt8] = []
        try? CanonicalJSON.appendString(name, to: &out)
        return out
    }

    /// A value with every number written as its literal.
    static func value(_ value: JSONValue) -> [UInt8] {
        switch value {
        case .null: return Array("null".utf8)
        case .bool(let flag): return Array((flag ? "true" : "false").utf8)
        case .number(let number): return Array(number.literal.utf8)
        case .string(let text): return key(text)
        case .array(let items):
            var out: [UInt8] = [UInt8(ascii: "[")]
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += Self.value(item)
            }
            return out + [UInt8(ascii: "]")]
        case .object(let members):
            return object(members.members.map { (key($0.key), Self.value($0.value)) })
        }
    }
}

/// The fixed malformed bodies derived from one valid body.
enum MalformedBodies {
    static func all(valid: JSONObject) -> [(String, [UInt8])] {
        let members = valid.members.map { (key: RawJSON.key($0.key), value: RawJSON.value($0.value)) }
        let body = RawJSON.value(.object(valid))
        var cases: [(String, [UInt8])] = envelopes(body)
        cases += memberShapes(valid, members)
        cases += numberForms(valid, members)
        cases += encodings(valid, members)
        cases += nesting(members)
        return cases
    }

    /// Not one JSON object: empty, scalars, an array, trailing content, truncation, oversize.
    static func envelopes(_ body: [UInt8]) -> [(String, [UInt8])] {
        [
            ("empty body", []),
            ("whitespace only", Array("  \n".utf8)),
            ("null envelope", Array("null".utf8)),
            ("number envelope", Array("42".utf8)),
            ("string envelope", Array(#""request""#.utf8)),
            ("array envelope", Array("[".utf8) + body + Array("]".utf8)),
            ("trailing garbage", body + Array("x".utf8)),
            ("a second value", body + Array(" {}".utf8)),
            ("trailing NUL", body + [0]),
            ("truncated", Array(body.prefix(body.count / 2))),
            ("unclosed", Array(body.dropLast())),
            ("byte order mark", [0xEF, 0xBB, 0xBF] + body),
            // Over the 1 MiB limit (§9) only by whitespace, which JSON allows.
            ("oversized body", Array("{".utf8) + [UInt8](repeating: 0x20, count: 1_048_577) + body.dropFirst()),
        ]
    }

    /// Duplicate, unknown, missing and mistyped members at the top and inside `schema`.
    static func memberShapes(_ valid: JSONObject, _ members: [RawJSON.Member]) -> [(String, [UInt8])] {
        var cases: [(String, [UInt8])] = []
        let first = members[0]
        cases.append(("duplicate \(valid.members[0].key)", RawJSON.object(members + [first])))
        cases.append(("duplicate after unescaping", RawJSON.object(members + [
            (Array(#""\u0063lient_id""#.utf8), RawJSON.value(.string("other"))),
        ])))
        cases.append(("unknown member", RawJSON.object(members + [(RawJSON.key("unknown_member"), Array("1".utf8))])))
        cases.append(("unknown empty-named member", RawJSON.object(members + [(RawJSON.key(""), Array("1".utf8))])))
        let wrongTypes: [JSONValue] = [
            .number(JSONNumber(7)), .string("x"), .bool(true), .null, .array([]), .object(JSONObject([])),
        ]
        for (index, member) in valid.members.enumerated() {
            var without = members
            without.remove(at: index)
            cases.append(("missing \(member.key)", RawJSON.object(without)))
            for wrong in wrongTypes where wrong.typeName != member.value.typeName {
                var replaced = members
                replaced[index].value = RawJSON.value(wrong)
                cases.append(("\(member.key) as \(wrong.typeName)", RawJSON.object(replaced)))
            }
        }
        if let index = valid.members.firstIndex(where: { $0.key == "schema" }),
           case .object(let schema) = valid.members[index].value {
            let inner = schema.members.map { (key: RawJSON.key($0.key), value: RawJSON.value($0.value)) }
            for (name, replacement) in [
                ("duplicate schema.version", RawJSON.object(inner + [inner[0]])),
                ("unknown member in schema", RawJSON.object(inner + [(RawJSON.key("extra"), Array("1".utf8))])),
                ("missing schema.hash", RawJSON.object(inner.filter { $0.key != RawJSON.key("hash") })),
                ("upper-case schema.hash", RawJSON.object(inner.map { member in
                    guard member.key == RawJSON.key("hash") else { return member }
                    return (member.key, Array(String(decoding: member.value, as: UTF8.self).uppercased().utf8))
                })),
            ] {
                var replaced = members
                replaced[index].value = replacement
                cases.append((name, RawJSON.object(replaced)))
            }
        }
        return cases
    }

    /// Integers written as `1.0`, `1e0`, `-0`, out of range, or as strings (§2.2).
    static func numberForms(_ valid: JSONObject, _ members: [RawJSON.Member]) -> [(String, [UInt8])] {
        var cases: [(String, [UInt8])] = []
        for (index, member) in valid.members.enumerated() {
            guard case .number(let number) = member.value else { continue }
            let literals = [
                "\(number.literal).0", "\(number.literal)e0", "\(number.literal)E+0", "-0", "9007199254740992",
                "-1", "\"\(number.literal)\"",
            ]
            for literal in literals + ["0x1", "+\(number.literal)", "0\(number.literal)"] {
                var replaced = members
                replaced[index].value = Array(literal.utf8)
                let suffix = literals.contains(literal) ? "" : " (not JSON)"
                cases.append(("\(member.key) = \(literal)\(suffix)", RawJSON.object(replaced)))
            }
        }
        return cases
    }

    /// Invalid UTF-8 and lone surrogates inside the first string member's value and name.
    static func encodings(_ valid: JSONObject, _ members: [RawJSON.Member]) -> [(String, [UInt8])] {
        guard let index = valid.members.firstIndex(where: { $0.value.stringValue != nil }) else { return [] }
        let name = valid.members[index].key
        let quote = UInt8(ascii: "\"")
        let values: [(String, [UInt8])] = [
            ("truncated two-octet sequence", [quote, 0x61, 0xC3, 0x28, quote]),
            ("octet FF", [quote, 0xFF, quote]),
            ("overlong slash", [quote, 0xC0, 0xAF, quote]),
            ("UTF-8 encoded surrogate", [quote, 0xED, 0xA0, 0x80, quote]),
            ("lone high surrogate escape", Array(#""\ud800""#.utf8)),
            ("lone low surrogate escape", Array(#""a\udc00b""#.utf8)),
            ("reversed surrogate pair", Array(#""\udc00\ud800""#.utf8)),
            ("high surrogate then letter", Array(#""\ud83dx""#.utf8)),
            ("invalid escape", Array(#""\x41""#.utf8)),
            ("raw control character", [quote, 0x61, 0x0A, quote]),
        ]
        var cases = values.map { label, bytes in
            var replaced = members
            replaced[index].value = bytes
            return ("\(name) with \(label)", RawJSON.object(replaced))
        }
        var badName = members
        badName[index].key = [quote, 0xFF] + Array(name.utf8) + [quote]
        cases.append(("invalid UTF-8 in a member name", RawJSON.object(badName)))
        return cases
    }

    /// Nesting past the intake's depth limit, as an extra member and inside a known one.
    static func nesting(_ members: [RawJSON.Member]) -> [(String, [UInt8])] {
        [65, 200].flatMap { depth -> [(String, [UInt8])] in
            let deep = [UInt8](repeating: UInt8(ascii: "["), count: depth)
                + [UInt8](repeating: UInt8(ascii: "]"), count: depth)
            var replaced = members
            replaced[replaced.count - 1].value = deep
            return [
                ("nesting \(depth) as an extra member", RawJSON.object(members + [(RawJSON.key("deep"), deep)])),
                ("nesting \(depth) in the last member", RawJSON.object(replaced)),
            ]
        }
    }
}

/// Byte-level mutations of a valid body: flips, truncations, insertions of JSON-significant or
/// invalid octets, deletions and duplicated spans.
enum Mutator {
    static let interesting: [UInt8] = Array(#"{}[]",:\"-.0e"#.utf8) + [0x00, 0x20, 0x7F, 0x80, 0xC3, 0xED, 0xFF]

    static func mutate(_ valid: JSONObject, using random: inout SplitMix64) -> [UInt8] {
        var body = RawJSON.value(.object(valid))
        let edits = 1 + Int(random.next(below: 3))
        for _ in 0..<edits where !body.isEmpty {
            let position = Int(random.next(below: UInt64(body.count)))
            switch random.next(below: 5) {
            case 0: body[position] ^= UInt8(1) << UInt8(random.next(below: 8))
            case 1: body.removeSubrange(position...)
            case 2: body.insert(interesting[Int(random.next(below: UInt64(interesting.count)))], at: position)
            case 3: body.remove(at: position)
            default:
                let end = min(body.count, position + 1 + Int(random.next(below: 16)))
                body.insert(contentsOf: body[position..<end], at: position)
            }
        }
        return body
    }
}

import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Seeded mutation fuzzing of the protocol layer's input boundaries (docs/reliability.md): real server bodies and
/// seed tokens, mutated by bit flips, byte insertion and deletion, splicing, truncation and structure-aware JSON
/// edits, for `SEEDKIT_FUZZ_SECONDS` per target. Every input must end in a value or a typed error; a crash ends
/// the test process, a hang is reported, and what is accepted must survive its own round trip.
@Suite("Fuzz: protocol parsers and validators", .serialized)
struct FuzzProtocolTests {
    typealias Violation = FuzzCampaign.Violation

    @Test("mutated protocol documents parse or fail with a typed error, and whatever parses re-encodes stably")
    func strictJSONParser() throws {
        let corpus = try FuzzCorpus.all()
        let mutator = FuzzMutator(corpus: corpus)
        let report = FuzzCampaign(target: "strict_json_parser").run { random in
            mutator.mutate(random.pick(corpus) ?? [], using: &random).bytes
        } execute: { input throws(Violation) in
            try Self.parseAndRoundTrip(input)
        }
        #expect(report.executions > 0)
        #expect(report.outcomes.count > 3, "the mutations reach several parser rules")
        #expect(report.findings.isEmpty, "\(report.findings.prefix(3))")
    }

    @Test("mutated seed tokens decode or fail with a typed error, and every decoded token re-encodes to itself")
    func seedTokenDecoder() throws {
        let tokens = try FuzzCorpus.recorded.get().tokens
        let textMutator = FuzzMutator(corpus: tokens.map { Array($0.utf8) }, structureAware: false)
        let payloads = tokens.compactMap { try? SeedToken.decode($0) }
        let payloadMutator = FuzzMutator(corpus: payloads.map(\.payloadOctets))
        let report = FuzzCampaign(target: "seed_token_decoder").run { random in
            let token = random.pick(tokens) ?? "sp1.e30.AA"
            guard random.chance(0.5), let decoded = random.pick(payloads) else {
                return textMutator.mutate(Array(token.utf8), using: &random).bytes
            }
            // Keep the envelope valid so that the payload checks behind it are reached.
            var payload = payloadMutator.mutate(decoded.payloadOctets, using: &random).bytes
            if random.chance(0.3), let canonical = try? StrictJSONParser().parse(payload) {
                payload = (try? CanonicalJSON.encode(canonical)) ?? payload
            }
            let mac = random.chance(0.9) ? decoded.mac : Array(decoded.mac.prefix(random.below(40)))
            return Array("\(decoded.kind.prefix).\(Base64URL.encode(payload)).\(Base64URL.encode(mac))".utf8)
        } execute: { input throws(Violation) in
            try Self.decodeToken(String(decoding: input, as: UTF8.self))
        }
        #expect(report.executions > 0)
        #expect(report.outcomes.keys.contains { $0.hasPrefix("accepted") }, "some mutated tokens still decode")
        #expect(report.findings.isEmpty, "\(report.findings.prefix(3))")
    }

    @Test("mutated connect, push, pull and rebuild requests validate or fail with a typed rule, and round-trip")
    func wireRequestValidators() throws {
        let requests = try FuzzCorpus.recorded.get().requests
        let routes = requests.keys.sorted()
        let mutator = FuzzMutator(corpus: Array(requests.values))
        let report = FuzzCampaign(target: "wire_request_validators").run { random in
            let route = random.pick(routes) ?? "pull"
            let mutated = mutator.mutate(requests[route] ?? [], using: &random).bytes
            return Array(route.utf8) + [0] + mutated
        } execute: { input throws(Violation) in
            let split = input.firstIndex(of: 0) ?? input.endIndex
            let route = String(decoding: input[..<split], as: UTF8.self)
            return try Self.validateRequest(route: route, body: Array(input[min(split + 1, input.endIndex)...]))
        }
        #expect(report.executions > 0)
        #expect(report.findings.isEmpty, "\(report.findings.prefix(3))")
    }

    @Test("mutated schema and export manifests validate or fail with a typed rule")
    func manifestValidators() throws {
        let bodies = try FuzzCorpus.recorded.get()
        let seeds = [bodies.manifest, bodies.exportManifest]
        let mutator = FuzzMutator(corpus: seeds)
        let report = FuzzCampaign(target: "manifest_validators").run { random in
            let index = random.below(seeds.count)
            return [UInt8(index)] + mutator.mutate(seeds[index], using: &random).bytes
        } execute: { input throws(Violation) in
            guard let kind = input.first else { return "empty" }
            let body = Array(input.dropFirst())
            guard kind == 1 else {
                do throws(ManifestError) {
                    let manifest = try SchemaManifest(bytes: body)
                    return manifest.tables.isEmpty ? "accepted_empty" : "accepted"
                } catch {
                    return "schema.\(error.rule)"
                }
            }
            let json: JSONValue
            do throws(JSONParseError) {
                json = try StrictJSONParser().parse(body)
            } catch {
                return "json.\(error.rule.rawValue)"
            }
            do throws(SeedExportManifestError) {
                _ = try SeedExportManifest(json: json)
                return "accepted"
            } catch {
                return "export.\(error.rule)"
            }
        }
        #expect(report.executions > 0)
        #expect(report.findings.isEmpty, "\(report.findings.prefix(3))")
    }

    // MARK: - Targets

    /// Parses `input`; an accepted document must re-encode canonically to text that parses to the same form.
    static func parseAndRoundTrip(_ input: [UInt8]) throws(Violation) -> String {
        let value: JSONValue
        do throws(JSONParseError) {
            value = try StrictJSONParser().parse(input)
        } catch {
            guard (0...max(input.count, 0)).contains(error.offset) else {
                throw Violation("error offset \(error.offset) outside an input of \(input.count) bytes")
            }
            return error.rule.rawValue
        }
        let canonical: [UInt8]
        do throws(CanonicalJSON.Failure) {
            canonical = try CanonicalJSON.encode(value)
        } catch {
            return "accepted_not_canonical(\(error))"
        }
        let again: JSONValue
        do throws(JSONParseError) { again = try StrictJSONParser().parse(canonical) } catch {
            throw Violation("the canonical form of an accepted document does not parse: \(error)")
        }
        guard (try? CanonicalJSON.encode(again)) == canonical else {
            throw Violation("the canonical form is not stable under parse and encode")
        }
        return "accepted"
    }

    /// Decodes a token; a decoded token must re-encode to exactly its text, and its payload must read or fail
    /// with a typed payload rule.
    static func decodeToken(_ text: String) throws(Violation) -> String {
        let token: SeedToken
        do throws(SeedTokenError) { token = try SeedToken.decode(text) } catch { return "token.\(error.rule)" }
        let encoded: String
        do throws(SeedTokenError) {
            encoded = try SeedToken.encode(kind: token.kind, payload: token.payload, mac: token.mac)
        } catch {
            throw Violation("a decoded token does not encode again: \(error.rule)")
        }
        guard encoded == text else { throw Violation("a decoded token re-encodes to different text") }
        do throws(SeedPayloadError) {
            switch token.kind {
            case .page: _ = try SeedPagePayload(token: token)
            case .continuation: _ = try SeedContinuationPayload(token: token)
            }
            return "accepted.\(token.kind.prefix)"
        } catch {
            return "payload.\(error.rule)"
        }
    }

    /// Validates a request body as the server does; an accepted request must read back from its own JSON.
    static func validateRequest(route: String, body: [UInt8]) throws(Violation) -> String {
        if route == "push" {
            let request: PushRequest
            do throws(PushValidationError) {
                request = try PushRequest.parse(body: body, shape: .wire)
            } catch { return "push.\(error.rule)" }
            let again = try? PushRequest.parse(json: request.json(shape: .wire), shape: .wire)
            guard again == request else { throw Violation("an accepted push request does not read back") }
            return "push.accepted"
        }
        let json: JSONValue
        do throws(JSONParseError) {
            json = try StrictJSONParser().parse(body)
        } catch {
            return "json.\(error.rule.rawValue)"
        }
        switch route {
        case "connect":
            let request: ConnectRequest
            do throws(ConnectRequest.Failure) { request = try ConnectRequest.parse(json: json) } catch {
                switch error {
                case .unsupportedProtocol: return "connect.unsupported_protocol"
                case .invalidSchemaReference: return "connect.invalid_schema_reference"
                case .invalid(let violation): return "connect.\(violation.rule)"
                }
            }
            guard (try? ConnectRequest.parse(json: request.json)) == request else {
                throw Violation("an accepted connect request does not read back")
            }
        case "pull":
            let request: PullRequest
            do throws(ExactObjectReader.Violation) {
                request = try PullRequest.parse(json: json)
            } catch {
                return "pull.\(error.rule)"
            }
            guard (try? PullRequest.parse(json: request.json)) == request else {
                throw Violation("an accepted pull request does not read back")
            }
        default:
            let request: RebuildRequest
            do throws(ExactObjectReader.Violation) {
                request = try RebuildRequest.parse(json: json)
            } catch {
                return "rebuild.\(error.rule)"
            }
            guard (try? RebuildRequest.parse(json: request.json)) == request else {
                throw Violation("an accepted rebuild request does not read back")
            }
        }
        return "\(route).accepted"
    }
}

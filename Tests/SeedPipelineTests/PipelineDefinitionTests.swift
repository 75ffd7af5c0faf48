import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedPipeline

/// docs/pipelines.md: every member, its default, and every validation rule with the member path it names.
@Suite struct PipelineDefinitionTests {
    static let environment = ["OPERATOR_TOKEN": "op-secret-1", "USER_TOKEN": "user-secret-2", "EMPTY": ""]

    func definition(_ json: String, environment: [String: String] = environment) throws -> PipelineDefinition {
        try PipelineDefinition(bytes: Array(json.utf8), baseDirectory: "/work/repo/pipelines", environment: environment)
    }

    func error(_ json: String, environment: [String: String] = environment) -> PipelineDefinitionError? {
        do {
            _ = try definition(json, environment: environment)
            return nil
        } catch let error as PipelineDefinitionError {
            return error
        } catch {
            return nil
        }
    }

    static let minimal = #"""
        {"source": {"embedded": {"dataset": "../seeds/demo"}}, "rehearsal": {"user": "alice"},
         "publish": {"directory": "../out/demo"}}
        """#

    @Test func aMinimalEmbeddedDefinitionGetsTheDocumentedDefaults() throws {
        let pipeline = try definition(Self.minimal)
        #expect(pipeline.name == "pipeline")
        #expect(pipeline.steps == PipelineStep.allCases.filter { $0 != .sign })
        #expect(pipeline.pageLimit == 1000)
        #expect(pipeline.packLevel == 19)
        #expect(pipeline.scopes == nil)
        #expect(pipeline.rehearsal.user == "alice")
        #expect(pipeline.rehearsal.rebuildCompare == false)
        #expect(pipeline.rehearsal.appVersion == "1.0.0")
        guard case .embedded(let dataset, let rows) = pipeline.source else {
            Issue.record("expected an embedded source")
            return
        }
        #expect(dataset == "/work/repo/seeds/demo")
        #expect(rows == nil)
        #expect(pipeline.publishDirectory == "/work/repo/out/demo")
    }

    @Test func everyMemberIsRead() throws {
        let pipeline = try definition(#"""
            {"name": "catalog-eu", "source": {"embedded": {"dataset": "/srv/datasets/demo", "rows": 250}},
             "scopes": ["catalog"], "page_limit": 200, "pack": {"level": 7},
             "rehearsal": {"user": "bob", "rebuild_compare": true, "app_version": "2.1.0-rc.1"},
             "publish": {"directory": "/srv/seeds/catalog"}, "steps": ["publish", "export", "verify"]}
            """#)
        #expect(pipeline.name == "catalog-eu")
        #expect(pipeline.scopes == ["catalog"])
        #expect(pipeline.pageLimit == 200)
        #expect(pipeline.packLevel == 7)
        #expect(pipeline.rehearsal.user == "bob")
        #expect(pipeline.rehearsal.rebuildCompare)
        #expect(pipeline.rehearsal.appVersion == "2.1.0-rc.1")
        #expect(pipeline.steps == [.export, .verify, .publish], "steps run in pipeline order whatever the listed order")
        #expect(pipeline.publishDirectory == "/srv/seeds/catalog")
        guard case .embedded(let dataset, let rows) = pipeline.source else {
            Issue.record("expected an embedded source")
            return
        }
        #expect(dataset == "/srv/datasets/demo")
        #expect(rows == 250)
    }

    @Test func relativePathsResolveAgainstThePipelineFilesDirectoryWhateverTheWorkingDirectory() throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-pipeline-definition")
        try FileManager.default.createDirectory(
            atPath: directory.path("repo/pipelines"), withIntermediateDirectories: true)
        let file = try directory.write("repo/pipelines/nightly.json", Array(#"""
            {"source": {"embedded": {"dataset": "../seeds/./demo"}}, "rehearsal": {"user": "alice"},
             "publish": {"directory": "published/nightly"}}
            """#.utf8))
        let pipeline = try PipelineDefinition.load(file: file, environment: [:])
        let root = URL(fileURLWithPath: directory.path("repo")).standardizedFileURL.path
        #expect(pipeline.name == "nightly", "the name defaults to the file name")
        #expect(pipeline.baseDirectory == root + "/pipelines")
        #expect(pipeline.publishDirectory == root + "/pipelines/published/nightly")
        guard case .embedded(let dataset, _) = pipeline.source else {
            Issue.record("expected an embedded source")
            return
        }
        #expect(dataset == root + "/seeds/demo")
    }

    @Test func aServerSourceTakesItsCredentialsFromTheNamedVariables() throws {
        let pipeline = try definition(#"""
            {"source": {"server": {"url": "https://staging.example.com/", "operator_token_env": "OPERATOR_TOKEN",
                                   "user_token_env": "USER_TOKEN"}},
             "publish": {"directory": "../out/staging"}}
            """#)
        guard case .server(let server) = pipeline.source else {
            Issue.record("expected a server source")
            return
        }
        #expect(server.url == "https://staging.example.com")
        #expect(server.operatorToken.value == "op-secret-1")
        #expect(server.operatorToken.variable == "OPERATOR_TOKEN")
        #expect(server.userToken?.value == "user-secret-2")
        #expect(pipeline.rehearsal.user == nil, "a server source's user is a label and may be absent")
        let shown = "\(server.operatorToken) \(String(describing: server.userToken))"
        #expect(!shown.contains("op-secret-1") && !shown.contains("user-secret-2"))
    }

    @Test func theUserTokenIsNeitherRequiredNorReadWithoutARehearsal() throws {
        let pipeline = try definition(#"""
            {"source": {"server": {"url": "http://127.0.0.1:8080", "operator_token_env": "OPERATOR_TOKEN",
                                   "user_token_env": "NOT_SET_ANYWHERE"}},
             "publish": {"directory": "../out/x"}, "steps": ["export", "verify", "publish"]}
            """#)
        guard case .server(let server) = pipeline.source else {
            Issue.record("expected a server source")
            return
        }
        #expect(server.userToken == nil)
        #expect(error(#"""
            {"source": {"server": {"url": "http://127.0.0.1:8080", "operator_token_env": "OPERATOR_TOKEN"}},
             "publish": {"directory": "../out/x"}}
            """#) == .missingMember(member: "source.server.user_token_env"))
    }

    /// One row per documented rule: the document, the rule and the member path the error names.
    static let invalidDocuments: [(String, String, String?)] = [
        (#"{"source": "#, "malformed_json", nil),
        (#"{"name": "a", "name": "b"}"#, "malformed_json", nil),
        (#"[]"#, "wrong_type", ""),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "extra": 1}"#,
         "unknown_member", "extra"),
        (#"{"publish": {"directory": "o"}}"#, "missing_member", "source"),
        (#"{"source": {}, "publish": {"directory": "o"}}"#, "invalid_value", "source"),
        (#"{"source": {"embedded": {"dataset": "d"}, "server": {"url": "http://h"}}, "publish": {"directory": "o"}}"#,
         "conflicting_members", "source"),
        (#"{"source": {"local": {}}, "publish": {"directory": "o"}}"#, "unknown_member", "source.local"),
        (#"{"source": {"embedded": {"dataset": "d", "row": 5}}, "publish": {"directory": "o"}}"#,
         "unknown_member", "source.embedded.row"),
        (#"{"source": {"embedded": {}}, "publish": {"directory": "o"}}"#, "missing_member", "source.embedded.dataset"),
        (#"{"source": {"embedded": {"dataset": 7}}, "publish": {"directory": "o"}}"#,
         "wrong_type", "source.embedded.dataset"),
        (#"{"source": {"embedded": {"dataset": ""}}, "publish": {"directory": "o"}}"#,
         "invalid_value", "source.embedded.dataset"),
        (#"{"source": {"embedded": {"dataset": "d", "rows": -1}}, "publish": {"directory": "o"}}"#,
         "out_of_range", "source.embedded.rows"),
        (#"{"source": {"embedded": {"dataset": "d", "rows": 1.5}}, "publish": {"directory": "o"}}"#,
         "wrong_type", "source.embedded.rows"),
        (#"{"source": {"embedded": {"dataset": "d", "rows": "10"}}, "publish": {"directory": "o"}}"#,
         "wrong_type", "source.embedded.rows"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "page_limit": 0}"#,
         "out_of_range", "page_limit"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "page_limit": 1001}"#,
         "out_of_range", "page_limit"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "pack": {"level": 23}}"#,
         "out_of_range", "pack.level"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "pack": {"level": 0}}"#,
         "out_of_range", "pack.level"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "pack": {"workers": 2}}"#,
         "unknown_member", "pack.workers"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "pack": 19}"#,
         "wrong_type", "pack"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "scopes": []}"#,
         "invalid_value", "scopes"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "scopes": "catalog"}"#,
         "wrong_type", "scopes"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "scopes": [1]}"#,
         "wrong_type", "scopes[0]"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "scopes": ["a", "a"]}"#,
         "duplicate_value", "scopes[1]"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "steps": ["export", "deploy"]}"#,
         "invalid_value", "steps[1]"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "steps": ["export", "export"]}"#,
         "duplicate_value", "steps[1]"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "steps": ["verify"]}"#,
         "step_requires", "steps"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "steps": ["export", "sign"]}"#,
         "step_requires", "steps"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"},"#
            + #" "steps": ["export", "verify", "sign"]}"#,
         "missing_member", "sign"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"},"#
            + #" "sign": {"key_file": "k", "key_env": "K"}}"#,
         "conflicting_members", "sign"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "sign": {"key": "k"}}"#,
         "unknown_member", "sign.key"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"},"#
            + #" "sign": {"key_env": "UNSET_K"}}"#,
         "missing_environment_variable", "sign.key_env"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "steps": ["export", "install"]}"#,
         "step_requires", "steps"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "steps": ["export", "publish"]}"#,
         "step_requires", "steps"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}}"#, "missing_member", "rehearsal"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"}, "rehearsal": {}}"#,
         "missing_member", "rehearsal.user"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"},"#
            + #" "rehearsal": {"user": "alice", "rebuild_compare": "yes"}}"#,
         "wrong_type", "rehearsal.rebuild_compare"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"},"#
            + #" "rehearsal": {"user": "alice", "app_version": "1.0"}}"#,
         "invalid_value", "rehearsal.app_version"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"},"#
            + #" "rehearsal": {"user": "alice", "token": "x"}}"#,
         "unknown_member", "rehearsal.token"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "rehearsal": {"user": "a"}}"#, "missing_member", "publish"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "rehearsal": {"user": "a"}, "publish": {}}"#,
         "missing_member", "publish.directory"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "rehearsal": {"user": "a"}, "publish": "out"}"#,
         "wrong_type", "publish"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "rehearsal": {"user": "a"}, "publish": {"directory": "."}}"#,
         "invalid_value", "publish.directory"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "rehearsal": {"user": "a"}, "publish": {"directory": ".."}}"#,
         "invalid_value", "publish.directory"),
        (#"{"source": {"embedded": {"dataset": "d"}}, "rehearsal": {"user": "a"}, "publish": {"directory": "/"}}"#,
         "invalid_value", "publish.directory"),
        (#"{"source": {"server": {"operator_token_env": "OPERATOR_TOKEN"}}, "publish": {"directory": "o"},"#
            + #" "steps": ["export"]}"#,
         "missing_member", "source.server.url"),
        (#"{"source": {"server": {"url": "ftp://h", "operator_token_env": "OPERATOR_TOKEN"}},"#
            + #" "publish": {"directory": "o"}, "steps": ["export"]}"#,
         "invalid_value", "source.server.url"),
        (#"{"source": {"server": {"url": "http://h?x=1", "operator_token_env": "OPERATOR_TOKEN"}},"#
            + #" "publish": {"directory": "o"}, "steps": ["export"]}"#,
         "invalid_value", "source.server.url"),
        (#"{"source": {"server": {"url": "http://h"}}, "publish": {"directory": "o"}, "steps": ["export"]}"#,
         "missing_member", "source.server.operator_token_env"),
        (#"{"source": {"server": {"url": "http://h", "operator_token_env": "NOT_SET_ANYWHERE"}},"#
            + #" "publish": {"directory": "o"}, "steps": ["export"]}"#,
         "missing_environment_variable", "source.server.operator_token_env"),
        (#"{"source": {"server": {"url": "http://h", "operator_token_env": "EMPTY"}},"#
            + #" "publish": {"directory": "o"}, "steps": ["export"]}"#,
         "missing_environment_variable", "source.server.operator_token_env"),
        (#"{"source": {"server": {"url": "http://h", "operator_token_env": "1TOKEN"}},"#
            + #" "publish": {"directory": "o"}, "steps": ["export"]}"#,
         "invalid_value", "source.server.operator_token_env"),
        (#"{"source": {"server": {"url": "http://h", "operator_token_env": "OPERATOR_TOKEN","#
            + #" "user_token_env": "NOT_SET_ANYWHERE"}}, "publish": {"directory": "o"}}"#,
         "missing_environment_variable", "source.server.user_token_env"),
    ]

    @Test(arguments: invalidDocuments)
    func anInvalidDocumentNamesTheRuleAndTheMember(_ json: String, rule: String, member: String?) {
        let found = error(json)
        #expect(found?.rule == rule, "\(json)")
        #expect(found?.member == member, "\(json)")
        if let found {
            #expect(found.description.contains(rule))
            #expect(found.description.contains(member.map { $0.isEmpty ? "the document" : $0 } ?? "pipeline file"))
        }
    }

    @Test func aMissingVariableIsNamedAndACredentialIsNeverEchoed() {
        let missing = error(#"""
            {"source": {"server": {"url": "http://h", "operator_token_env": "SEEDKIT_NOT_SET"}},
             "publish": {"directory": "o"}, "steps": ["export"]}
            """#)
        #expect(missing == .missingEnvironmentVariable(
            member: "source.server.operator_token_env", variable: "SEEDKIT_NOT_SET"))
        #expect(missing?.description.contains("SEEDKIT_NOT_SET") == true)

        let pasted = [
            #"{"source": {"server": {"url": "http://h", "operator_token": "pasted-secret-42"}}}"#,
            #"{"source": {"server": {"url": "http://admin:pasted-secret-42@h","#
                + #" "operator_token_env": "OPERATOR_TOKEN"}}, "publish": {"directory": "o"}, "steps": ["export"]}"#,
            #"{"source": {"embedded": {"dataset": "d"}}, "publish": {"directory": "o"},"#
                + #" "page_limit": "pasted-secret-42"}"#,
        ]
        for json in pasted {
            let found = error(json)
            #expect(found != nil)
            #expect(found?.description.contains("pasted-secret-42") == false, "\(json)")
        }
    }

    @Test func anUnreadableFileIsItsOwnRule() {
        #expect(throws: PipelineDefinitionError.unreadableFile(path: "/nonexistent/pipeline.json")) {
            try PipelineDefinition.load(file: "/nonexistent/pipeline.json", environment: [:])
        }
    }

    @Test func theShippedPipelinesAreValid() throws {
        let pipelines = RepositoryLayout.root.appendingPathComponent("pipelines")
        let demo = try PipelineDefinition.load(
            file: pipelines.appendingPathComponent("demo.json").path, environment: [:])
        #expect(demo.steps == PipelineStep.allCases.filter { $0 != .sign })
        guard case .embedded(let dataset, _) = demo.source else {
            Issue.record("the demo pipeline uses the embedded source")
            return
        }
        #expect(dataset == RepositoryLayout.root.appendingPathComponent("seeds/demo").standardizedFileURL.path)
        let staging = try PipelineDefinition.load(
            file: pipelines.appendingPathComponent("staging.example.json").path,
            environment: ["SEEDKIT_STAGING_OPERATOR_TOKEN": "o", "SEEDKIT_STAGING_USER_TOKEN": "u"])
        guard case .server = staging.source else {
            Issue.record("the staging example uses a server source")
            return
        }
    }
}

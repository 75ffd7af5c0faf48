import Foundation
import Testing

/// The module graph of `docs/architecture.md` is the rule: every `import` of every Swift file in the package
/// must be an edge that table allows, and every target must declare in `Package.swift` each package module its
/// files import (so nothing builds only because a sibling happened to pull the module in first).
@Suite("Architecture: the documented module graph")
struct ImportRuleTests {
    @Test("every import of every source, benchmark and test file is an edge of the documented graph")
    func importsFollowTheGraph() throws {
        let repository = try Repository.current()
        let graph = try repository.documentedGraph()
        let targets = try repository.packageTargets()
        var violations: [String] = []
        for target in targets {
            guard let rule = graph[target.name] else {
                violations.append("\(target.name): not in the module graph of docs/architecture.md")
                continue
            }
            for (file, module) in try repository.imports(under: target.directory) {
                if graph[module] != nil || module.hasPrefix("C") && targets.contains(where: { $0.name == module }) {
                    if !rule.modules.contains(module) {
                        violations.append("\(file): imports \(module), which \(target.name) may not import")
                    }
                } else if !rule.system {
                    violations.append("\(file): imports \(module); \(target.name) imports no system module")
                }
            }
        }
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    @Test("every target declares in Package.swift each package module its files import, and no edge outside the graph")
    func packageDeclaresImports() throws {
        let repository = try Repository.current()
        let graph = try repository.documentedGraph()
        let targets = try repository.packageTargets()
        let names = Set(targets.map(\.name))
        var violations: [String] = []
        for target in targets {
            let imported = Set(try repository.imports(under: target.directory).map(\.module)).intersection(names)
            for module in imported.subtracting(target.dependencies).sorted() {
                violations.append("\(target.name) imports \(module) without declaring it")
            }
            for module in target.dependencies.sorted() where graph[target.name]?.modules.contains(module) == false {
                violations.append("\(target.name) declares \(module), which the graph does not allow")
            }
        }
        #expect(violations.isEmpty, "\(violations.joined(separator: "\n"))")
    }

    @Test("the rule reads real files: the graph has every library module and the scan finds imports")
    func ruleIsNotVacuous() throws {
        let repository = try Repository.current()
        let graph = try repository.documentedGraph()
        let targets = try repository.packageTargets()
        for module in ["SynchroProtocol", "SQLiteKit", "SynchroStore", "SynchroClient", "SeedArtifacts", "SeedSources"] {
            #expect(graph[module] != nil, "\(module) is missing from docs/architecture.md")
            #expect(targets.contains { $0.name == module }, "\(module) is missing from Package.swift")
        }
        #expect(graph["SeedArtifacts"]?.modules.contains("SynchroClient") == false)
        #expect(graph["SynchroProtocol"]?.system == false)
        let client = try #require(targets.first { $0.name == "SynchroClient" })
        #expect(try repository.imports(under: client.directory).contains { $0.module == "SynchroStore" })
    }
}

/// The repository this file is part of, read as plain files.
private struct Repository {
    let root: URL

    static func current(file: String = #filePath) throws -> Repository {
        // Tests/ArchitectureTests/<this file>
        let root = URL(fileURLWithPath: file).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        guard FileManager.default.fileExists(atPath: root.appendingPathComponent("Package.swift").path) else {
            throw RuleError.missing("Package.swift beside Tests/")
        }
        return Repository(root: root)
    }

    /// One row of the graph: the package modules a module may import, and whether it may import system modules.
    struct Rule {
        let modules: Set<String>
        let system: Bool
    }

    /// The table under "## Module graph" in docs/architecture.md: `| `Module` | `A`, `B` | yes |`.
    func documentedGraph() throws -> [String: Rule] {
        let text = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        guard let start = text.range(of: "## Module graph") else { throw RuleError.missing("## Module graph") }
        var graph: [String: Rule] = [:]
        for line in text[start.upperBound...].split(separator: "\n") {
            if line.hasPrefix("## ") { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 5, cells[1].hasPrefix("`") else { continue }
            let module = cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let modules = cells[2].split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            }.filter { !$0.isEmpty && $0 != "—" }
            graph[module] = Rule(modules: Set(modules), system: cells[3] == "yes")
        }
        guard !graph.isEmpty else { throw RuleError.missing("rows of the module graph table") }
        return graph
    }

    struct Target {
        let name: String
        let directory: URL
        let dependencies: Set<String>
    }

    /// The targets of Package.swift with their directories and declared dependencies, read from its text (the
    /// manifest is written as one `.target(name:…, dependencies: […], path: …)` call per target).
    func packageTargets() throws -> [Target] {
        let text = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let calls = text.components(separatedBy: ".systemLibrary(").dropFirst().map { ("system", $0) }
            + text.components(separatedBy: ".target(").dropFirst().map { ("Sources", $0) }
            + text.components(separatedBy: ".executableTarget(").dropFirst().map { ("Sources", $0) }
            + text.components(separatedBy: ".testTarget(").dropFirst().map { ("Tests", $0) }
        return try calls.map { kind, call -> Target in
            guard let name = Self.quoted(after: "name:", in: call) else { throw RuleError.missing("a target name") }
            let path = Self.quoted(after: "path:", in: Self.firstCall(call)) ?? "\(kind == "system" ? "Sources" : kind)/\(name)"
            var dependencies: Set<String> = []
            let body = Self.firstCall(call)
            if let open = body.range(of: "dependencies:"), let list = body[open.upperBound...].firstIndex(of: "["),
               let close = body[list...].firstIndex(of: "]") {
                for piece in body[body.index(after: list)..<close].split(separator: ",") {
                    let name = piece.trimmingCharacters(in: .whitespacesAndNewlines)
                        .trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                    if !name.isEmpty { dependencies.insert(name) }
                }
            }
            return Target(name: name, directory: root.appendingPathComponent(path), dependencies: dependencies)
        }
    }

    /// `(file, module)` for every import line of every Swift file under `directory`.
    func imports(under directory: URL) throws -> [(file: String, module: String)] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else {
            return []
        }
        var found: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            let text = try String(contentsOf: url, encoding: .utf8)
            let relative = String(url.path.dropFirst(root.path.count + 1))
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ").filter { !$0.hasPrefix("@") }
                guard let index = words.firstIndex(of: "import"), index <= 1, index + 1 < words.count else { continue }
                if index == 1, !["public", "package", "internal", "private", "fileprivate"].contains(words[0]) {
                    continue
                }
                let module = words[index + 1].split(separator: ".").first.map(String.init) ?? ""
                found.append((relative, module))
            }
        }
        return found
    }

    /// The text of a call up to its closing parenthesis (parentheses inside strings do not occur here).
    private static func firstCall(_ text: String) -> Substring {
        var depth = 1
        for index in text.indices {
            switch text[index] {
            case "(": depth += 1
            case ")":
                depth -= 1
                if depth == 0 { return text[..<index] }
            default: break
            }
        }
        return text[...]
    }

    private static func quoted(after label: String, in text: some StringProtocol) -> String? {
        guard let range = text.range(of: label) else { return nil }
        let rest = text[range.upperBound...]
        guard let open = rest.firstIndex(of: "\"") else { return nil }
        let after = rest[rest.index(after: open)...]
        guard let close = after.firstIndex(of: "\"") else { return nil }
        return String(after[..<close])
    }
}

private enum RuleError: Error {
    case missing(String)
}

import Foundation
import SystemKit
import Testing
import _SeedkitTestSupport

@Suite("DurableDirectory: a directory assembled beside its destination and swapped in whole")
struct DurableDirectoryTests {
    let root: TemporaryDirectory

    init() throws {
        root = try TemporaryDirectory(prefix: "seedkit-durable-directory")
    }

    func names(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    @Test("a first publication is renamed into place with every file complete")
    func firstPublication() throws {
        let destination = root.path("publish")
        let source = try root.write("seed.db", Array("seed".utf8))
        do {
            let assembly = try DurableDirectory(destination: destination, staging: root.path(".publish.staging"))
            try assembly.adopt(source, as: "seed.db")
            try assembly.write(Array("sums".utf8), as: "SHA256SUMS")
            #expect(!FileManager.default.fileExists(atPath: destination))
            try assembly.publish()
        }
        #expect(try names(destination) == ["SHA256SUMS", "seed.db"])
        #expect(try names(root.url.path) == ["publish"])
    }

    @Test("an existing publication is exchanged whole, and the previous one is removed on release")
    func replacesAnExistingPublication() throws {
        let destination = root.path("publish")
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
        try Data("old".utf8).write(to: URL(fileURLWithPath: destination + "/seed.db"))
        try Data("old only".utf8).write(to: URL(fileURLWithPath: destination + "/seed.db.zst"))
        do {
            let assembly = try DurableDirectory(destination: destination, staging: root.path(".publish.staging"))
            try assembly.write(Array("new".utf8), as: "seed.db")
            try assembly.publish()
        }
        #expect(try names(destination) == ["seed.db"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: destination + "/seed.db")) == Data("new".utf8))
        #expect(try names(root.url.path) == ["publish"])
    }

    @Test("an assembly released unpublished leaves the destination and nothing else")
    func discardedAssemblyLeavesNothing() throws {
        let destination = root.path("publish")
        do {
            let assembly = try DurableDirectory(destination: destination, staging: root.path(".publish.staging"))
            try assembly.write(Array("half".utf8), as: "seed.db")
        }
        #expect(try names(root.url.path).isEmpty)
    }
}

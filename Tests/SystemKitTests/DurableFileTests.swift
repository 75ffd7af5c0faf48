import Foundation
import Glibc
import SystemKit
import Testing
import _SeedkitTestSupport

/// The one durable publication, on real files: the destination is either absent, the previous file or the complete
/// new one, and nothing of ours is left beside it.
@Suite("DurableFile: temporary file, fsync, link or rename, directory fsync")
struct DurableFileTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-durable")
    }

    func listing() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.url.path).sorted()
    }

    func contents(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: directory.path(name))))
    }

    @Test("publishing by link refuses a destination that exists when the file is created")
    func linkRefusesAnExistingDestination() throws {
        let destination = try directory.write("seed.db", Array("earlier".utf8))
        let error = #expect(throws: SystemError.self) {
            try DurableFile(destination: destination, replacing: false)
        }
        #expect(error?.isAlreadyExists == true)
        #expect(try contents("seed.db") == Array("earlier".utf8))
        #expect(try listing() == ["seed.db"])
    }

    @Test("publishing by link refuses a destination that appeared meanwhile, atomically, and keeps it")
    func linkRefusesADestinationThatAppearedMeanwhile() throws {
        let destination = directory.path("seed.db")
        let file = try DurableFile(destination: destination, replacing: false)
        try file.write(Array("new content".utf8))
        try directory.write("seed.db", Array("someone else".utf8))
        let error = #expect(throws: SystemError.self) { try file.publish() }
        #expect(error?.isAlreadyExists == true)
        #expect(error?.path == destination)
        #expect(try contents("seed.db") == Array("someone else".utf8))
        file.discard()
        #expect(try listing() == ["seed.db"])
    }

    @Test("publishing by rename replaces the destination with the complete new content")
    func renameReplaces() throws {
        let destination = try directory.write("seed.db", Array("earlier".utf8))
        let file = try DurableFile(destination: destination, replacing: true)
        try file.write(Array("new ".utf8))
        try file.write(Array("content".utf8))
        try file.publish()
        #expect(try contents("seed.db") == Array("new content".utf8))
        #expect(try listing() == ["seed.db"])
    }

    @Test("the destination never holds part of the content: absent until publish, then all of it")
    func noPartialDestinationIsEverVisible() throws {
        let destination = directory.path("seed.db.zst")
        let file = try DurableFile(destination: destination, replacing: false)
        let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
        for _ in 0..<8 {
            try file.write(chunk)
            #expect(!FileManager.default.fileExists(atPath: destination))
            let visible = try listing().filter { !$0.hasPrefix(".") }
            #expect(visible.isEmpty)
        }
        #expect(try listing() == [URL(fileURLWithPath: file.temporaryPath).lastPathComponent])
        #expect(URL(fileURLWithPath: file.temporaryPath).lastPathComponent.hasPrefix(".seed.db.zst.partial-"))
        try file.publish()
        #expect(try contents("seed.db.zst").count == 8 * chunk.count)
        #expect(try listing() == ["seed.db.zst"])
    }

    @Test("discarding, or releasing unpublished, removes the temporary file and its companions only")
    func discardLeavesNothing() throws {
        let destination = directory.path("seed.db")
        let file = try DurableFile(destination: destination, replacing: true, companions: ["-journal"])
        try file.write(Array("partial".utf8))
        try directory.write(URL(fileURLWithPath: file.temporaryPath).lastPathComponent + "-journal", [1])
        file.discard()
        #expect(try listing().isEmpty)

        try directory.write("seed.db", Array("earlier".utf8))
        do {
            let released = try DurableFile(destination: destination, replacing: true)
            try released.write(Array("never published".utf8))
        }
        #expect(try listing() == ["seed.db"])
        #expect(try contents("seed.db") == Array("earlier".utf8))
    }

    @Test("a file written by another writer through its path is published the same way")
    func handedOverPathIsPublished() throws {
        let destination = directory.path("seed.db")
        let file = try DurableFile(destination: destination, replacing: false)
        let path = try file.handOver()
        try Data("written by path".utf8).write(to: URL(fileURLWithPath: path))
        try file.sync()
        #expect(!FileManager.default.fileExists(atPath: destination))
        try file.publish()
        #expect(try contents("seed.db") == Array("written by path".utf8))
        #expect(try listing() == ["seed.db"])
    }

    @Test("an adopted file keeps its own temporary name and is published by link")
    func adoptedFileIsPublished() throws {
        let staged = try directory.write(".app.db.seed-1234", Array("device copy".utf8))
        let file = DurableFile(adopting: staged, destination: directory.path("app.db"), replacing: false)
        try file.publish()
        #expect(try contents("app.db") == Array("device copy".utf8))
        #expect(try listing() == ["app.db"])
    }

    @Test("the published file has the mode a plain 0644 file gets under the same umask")
    func publishedModeIsTheUsualOne() throws {
        let reference = directory.path("reference")
        let descriptor = open(reference, O_WRONLY | O_CREAT | O_EXCL, 0o644)
        try #require(descriptor >= 0)
        close(descriptor)
        let file = try DurableFile(destination: directory.path("seed.db"), replacing: false)
        try file.publish()
        #expect(try Self.mode(directory.path("seed.db")) == Self.mode(reference))
    }

    @Test("errors name the operation, the path and the operating system's reason")
    func errorsCarryErrnoText() throws {
        let missing = directory.path("missing/seed.db")
        let error = #expect(throws: SystemError.self) {
            try DurableFile(destination: missing, replacing: false)
        }
        #expect(error?.code == ENOENT)
        #expect(error?.path == missing)
        #expect(error?.description == "cannot create a temporary file for \(missing): No such file or directory")
        let denied = SystemError(operation: "open", path: "/x", code: EACCES)
        #expect(denied.description == "cannot open /x: Permission denied")
        #expect(try listing().isEmpty)
    }

    static func mode(_ path: String) throws -> mode_t {
        var status = stat()
        guard stat(path, &status) == 0 else { throw SystemError.last("stat", path: path) }
        return status.st_mode & 0o7777
    }
}

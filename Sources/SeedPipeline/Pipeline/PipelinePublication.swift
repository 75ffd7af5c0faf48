import Foundation
import SeedArtifacts
import SynchroProtocol
import SystemKit

/// The publish directory of a pipeline (docs/pipelines.md, "Publication"): it holds exactly one publication —
/// `seed.db`, `seed.db.zst` when packed, `evidence.json` and `SHA256SUMS` — and is replaced as a whole. A new
/// publication is assembled in a directory beside it and swapped in with one `renameat2(RENAME_EXCHANGE)`
/// (``DurableDirectory``), so readers see either the previous publication or the new one, complete.
struct PipelinePublication {
    static let seedName = "seed.db"
    static let packedName = "seed.db.zst"
    /// The new seed as a patch against the previous publication's `seed.db` (when there was one).
    static let patchName = "seed.db.patch.zst"
    static let evidenceName = "evidence.json"
    static let sumsName = "SHA256SUMS"
    static let signatureName = PublicationSignature.fileName
    static let names = [seedName, packedName, patchName, evidenceName, sumsName, signatureName]

    /// The publish directory (absolute).
    let directory: String

    /// The directory that holds the publish directory, its scratch directories and nothing else of ours.
    var parent: String {
        URL(fileURLWithPath: directory).deletingLastPathComponent().path
    }

    /// Refuses a publish directory that is not a directory or that holds anything besides a publication's files:
    /// the swap would otherwise discard them. Checked when the run starts and again just before the exchange (a file
    /// added while the run ran stays where it was put, and the run fails naming it).
    func checkReplaceable() throws(PipelineError) {
        guard FileSystem.exists(directory) else { return }
        guard FileSystem.isDirectory(directory) else {
            throw .publishDirectoryNotPublication(path: directory, entry: "(it is not a directory)")
        }
        for entry in try PipelineError.io({ () throws(SystemError) in try FileSystem.entries(directory) })
        where !Self.names.contains(entry) {
            throw .publishDirectoryNotPublication(path: directory, entry: entry)
        }
    }

    /// The publication in place, when it is complete and intact: `SHA256SUMS` lists exactly `expected` files
    /// besides itself and each one's bytes still hash to it, and `evidence.json` parses.
    func current(expected: [String]) -> (evidence: JSONValue, seed: PublishedSeed)? {
        guard let sumsBytes = FileSystem.read(path(Self.sumsName)),
              let sums = SHA256Sums(text: String(decoding: sumsBytes, as: UTF8.self)),
              Set(sums.digests.keys).subtracting([Self.patchName]) == Set(expected)
        else { return nil }
        for (name, digest) in sums.digests {
            guard let actual = try? FileDigest.sha256(path: path(name)), actual.hex == digest else { return nil }
        }
        guard let bytes = FileSystem.read(path(Self.evidenceName)),
              let evidence = try? StrictJSONParser().parse(bytes),
              let seed = PublishedSeed(evidence: evidence, directory: directory)
        else { return nil }
        return (evidence, seed)
    }

    /// Assembles the publication in `staging` (a new directory inside the run's scratch directory, on the publish
    /// directory's file system) and puts it in place of the publish directory: moves the seed (and its frame) there,
    /// writes `evidence.json` from `evidence` with both artifacts' SHA-256, and `SHA256SUMS`, every file flushed;
    /// then the directories are exchanged (or `staging` renamed into place when there is no publication yet). The
    /// previous publication ends up at `staging` and is removed. With a `signingKey`, the `provenance` statement
    /// of the subjects (every file above, `SHA256SUMS` included) is signed and written as
    /// ``PublicationSignature/fileName``.
    ///
    /// The previous publication loses only its publication files: an entry someone added to the publish directory
    /// between the last check and the exchange is kept, with the previous directory, at ``keptPath`` (returned).
    func publish(
        in staging: String, seed: String, packed: String?, patch: String? = nil,
        evidence: (_ artifacts: [SeedEvidence.Artifact]) -> JSONValue,
        signingKey: Ed25519PrivateKey? = nil,
        provenance: (_ subjects: [ProvenanceStatement.Subject]) -> ProvenanceStatement? = { _ in nil }
    ) throws(PipelineError) -> (seed: PublishedSeed, kept: KeptEntries?) {
        let assembly = try PipelineError.io { () throws(SystemError) in
            try DurableDirectory(destination: directory, staging: staging)
        }
        var artifacts: [SeedEvidence.Artifact] = []
        let files = [(seed, Self.seedName)] + (packed.map { [($0, Self.packedName)] } ?? [])
            + (patch.map { [($0, Self.patchName)] } ?? [])
        for (from, name) in files {
            try PipelineError.io { () throws(SystemError) in try assembly.adopt(from, as: name) }
            artifacts.append(try artifact(at: assembly.stagedPath(name)))
        }
        let evidenceJSON = evidence(artifacts)
        let evidencePath = assembly.stagedPath(Self.evidenceName)
        let evidenceBytes: [UInt8]
        do {
            evidenceBytes = try CanonicalJSON.encode(evidenceJSON) + [0x0A]
        } catch {
            throw .io(operation: "encode evidence for", path: evidencePath, errno: EINVAL)
        }
        var digests = Dictionary(uniqueKeysWithValues: artifacts.map { ($0.name, $0.sha256) })
        digests[Self.evidenceName] = Hex.encode(SHA256.hash(evidenceBytes))
        guard let published = PublishedSeed(evidence: evidenceJSON, directory: directory) else {
            throw .io(operation: "read back evidence of", path: evidencePath, errno: EINVAL)
        }
        let sumsBytes = Array(SHA256Sums(digests: digests).text.utf8)
        var envelope: [UInt8]?
        var subjectDigests = digests
        subjectDigests[Self.sumsName] = Hex.encode(SHA256.hash(sumsBytes))
        let subjects = subjectDigests.keys.sorted().map {
            ProvenanceStatement.Subject(name: $0, sha256: subjectDigests[$0]!)
        }
        if let signingKey, let statement = provenance(subjects) {
            do {
                envelope = try PublicationSignature.envelope(statement, key: signingKey)
            } catch {
                throw .signing(error)
            }
        }
        try PipelineError.io { () throws(SystemError) in
            try assembly.write(evidenceBytes, as: Self.evidenceName)
            try assembly.write(sumsBytes, as: Self.sumsName)
            if let envelope { try assembly.write(envelope, as: Self.signatureName) }
        }
        // The last moment a foreign entry can be left where it is: nothing has been replaced yet.
        CrashPoint.reached("pipeline.before_exchange")
        try checkReplaceable()
        try PipelineError.io { () throws(SystemError) in try assembly.publish() }
        CrashPoint.reached("pipeline.exchanged")
        let keep = keptPath
        let foreign = try PipelineError.io { () throws(SystemError) in
            try assembly.removePrevious(known: Set(Self.names), keepingRestAt: keep)
        }
        return (published, foreign.isEmpty ? nil : KeptEntries(directory: keep, entries: foreign))
    }

    /// Entries of the previous publication that were not publication files: kept, never deleted.
    struct KeptEntries {
        /// Where the previous publish directory was moved with them.
        let directory: String
        /// Their names, sorted.
        let entries: [String]

        /// The publish step's warnings, one per entry. Names only: what someone else's file holds is none of the
        /// report's business.
        static func warnings(_ kept: KeptEntries?) -> [String] {
            kept.map { kept in
                kept.entries.map { "foreign_entry_kept: \($0) (not a publication file) kept in \(kept.directory)" }
            } ?? []
        }
    }

    /// A new path beside the publish directory for a previous publication that held foreign entries; not a
    /// scratch name, so no later run removes it.
    var keptPath: String {
        URL(fileURLWithPath: parent).appendingPathComponent("\(name).kept-\(UUID().uuidString.lowercased())").path
    }

    /// The publish directory's name.
    var name: String { URL(fileURLWithPath: directory).lastPathComponent }

    /// The lock file of the publish directory, beside it (the directory itself is swapped as a whole).
    var lockPath: String {
        URL(fileURLWithPath: parent).appendingPathComponent(".\(name).lock").path
    }

    /// The name prefix of the runs' scratch directories beside the publish directory.
    var scratchPrefix: String { ".\(name).pipeline-" }

    /// Takes the publish directory's lock (``AdvisoryLock``), creating the parent directory when missing.
    func lock(wait: Duration?, isInterrupted: @escaping () -> Bool) throws(PipelineError) -> AdvisoryLock {
        try PipelineError.io { () throws(SystemError) in try FileSystem.makeDirectory(parent, intermediate: true) }
        do {
            return try AdvisoryLock(path: lockPath, wait: wait, shouldStop: isInterrupted)
        } catch {
            switch error {
            case .held(_, let holder):
                if isInterrupted() { throw .interrupted }
                throw .locked(directory: directory, holderPID: holder)
            case .unavailable(let failure):
                throw .io(operation: failure.operation, path: failure.path, errno: failure.code)
            }
        }
    }

    /// Removes every scratch directory of this publish directory; only called while holding its lock, when no
    /// live run can own one. Returns the paths removed.
    @discardableResult
    func removeStaleScratch() -> [String] {
        guard let entries = try? FileSystem.entries(parent) else { return [] }
        let stale = entries.filter { $0.hasPrefix(scratchPrefix) }.sorted().map {
            URL(fileURLWithPath: parent).appendingPathComponent($0).path
        }
        for path in stale { FileSystem.removeTree(path) }
        return stale
    }

    func path(_ name: String) -> String {
        URL(fileURLWithPath: directory).appendingPathComponent(name).path
    }

    private func artifact(at path: String) throws(PipelineError) -> SeedEvidence.Artifact {
        do {
            return try SeedEvidence.Artifact(path: path)
        } catch {
            throw .io(operation: "hash", path: path, errno: EIO)
        }
    }
}

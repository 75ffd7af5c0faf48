/// One step of a pipeline run, in the order the runner takes them (ARCHITECTURE.md, "Build a seed").
public enum PipelineStep: String, Sendable, CaseIterable, Comparable {
    /// One consistent snapshot from the source, every page checked, written as `seed.db`.
    case export
    /// Every publication check (`spec/seed-format.md` §6) and the device installer's validation (§7.1).
    case verify
    /// `seed.db` → `seed.db.zst`, one checksummed zstd frame.
    case pack
    /// The `.zst` installed into a scratch directory exactly as a device installs it.
    case install
    /// The first authenticated sync of the installed copy as the test user.
    case rehearse
    /// The signing key (`sign.key_file` or `sign.key_env`) is read and checked, so a wrong key fails the run before
    /// anything is published; the publish step then signs the provenance statement of the publication with it.
    case sign
    /// The publish directory receives the new publication atomically.
    case publish

    /// The step that must also run for this one to run (nil for ``export``, which every pipeline starts with).
    public var requires: PipelineStep? {
        switch self {
        case .export: nil
        case .verify, .pack: .export
        case .install: .pack
        case .rehearse: .install
        case .publish, .sign: .verify
        }
    }

    public static func < (lhs: PipelineStep, rhs: PipelineStep) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}

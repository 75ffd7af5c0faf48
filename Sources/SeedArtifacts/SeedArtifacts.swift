/// Portable seed artifacts (`spec/seed-format.md`): the seed database writer, the export sources it reads
/// from, the verifier, the device-style installer, zstd packing and release evidence.
public enum SeedArtifacts {
    /// The seedkit release recorded in evidence files.
    public static let toolVersion = "0.3.0"
}

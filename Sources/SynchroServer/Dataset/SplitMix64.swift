/// SplitMix64 (Steele, Lea, Flood 2014): the dataset generator's only source of randomness.
///
/// Foundation's and the standard library's generators are seeded per process, so they cannot
/// reproduce a dataset; this one is a pure function of its state on every platform. Streams are
/// derived, not shared: each row of each table and each field of that row gets its own state
/// (``derive(_:_:)``), so a value never depends on how many values were drawn before it elsewhere.
struct SplitMix64: Sendable {
    private var state: UInt64

    /// A stream whose first output is `mix(state + γ)`.
    init(state: UInt64) {
        self.state = state
    }

    private static let gamma: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The SplitMix64 output function: a bijective avalanche of one 64-bit word.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A child state for `salt` under `parent`; distinct salts give unrelated streams.
    static func derive(_ parent: UInt64, _ salt: UInt64) -> UInt64 {
        mix(parent ^ mix(salt &+ gamma))
    }

    /// FNV-1a over UTF-8, then mixed: a platform-independent salt for an identifier (Swift's
    /// `Hasher` is seeded per process and would change the dataset from run to run).
    static func salt(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        return mix(hash)
    }

    /// The next 64 random bits.
    mutating func next() -> UInt64 {
        state &+= Self.gamma
        return Self.mix(state)
    }

    /// A uniform value in `0..<bound` (Lemire's multiply-shift with rejection, so no modulo bias).
    mutating func next(below bound: UInt64) -> UInt64 {
        precondition(bound > 0, "empty range")
        var product = next().multipliedFullWidth(by: bound)
        if product.low < bound {
            let threshold = (0 &- bound) % bound
            while product.low < threshold {
                product = next().multipliedFullWidth(by: bound)
            }
        }
        return product.high
    }

    /// A uniform value in `lower...upper`.
    mutating func next(in lower: Int64, _ upper: Int64) -> Int64 {
        let span = UInt64(bitPattern: upper &- lower)
        let offset = span == UInt64.max ? next() : next(below: span &+ 1)
        return lower &+ Int64(bitPattern: offset)
    }

    /// A uniform double in `[0, 1)` with 53 random bits: exact IEEE arithmetic, so the same on
    /// every platform.
    mutating func nextUnit() -> Double {
        Double(next() >> 11) * 0x1p-53
    }

    /// True with probability `probability` (0 never, 1 always).
    mutating func chance(_ probability: Double) -> Bool {
        nextUnit() < probability
    }
}

import SynchroStore
/// Where the engine draws random fractions (retry jitter). Tests inject a fixed source so that every delay and
/// every stored retry deadline is predictable.
public struct RandomSource: Sendable {
    private let draw: @Sendable () -> Double

    /// A source that returns `draw()`, a fraction in `[0, 1]` (values outside are clamped by their users).
    public init(_ draw: @escaping @Sendable () -> Double) {
        self.draw = draw
    }

    /// Uniform fractions from the system generator.
    public static let system = RandomSource { Double.random(in: 0...1) }

    /// The next fraction.
    public func next() -> Double {
        draw()
    }
}

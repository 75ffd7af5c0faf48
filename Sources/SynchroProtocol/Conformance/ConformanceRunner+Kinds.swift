extension ConformanceRunner {
    /// Runs one vector's input through the protocol code for its kind.
    public static func evaluate(_ vector: ConformanceVector) -> Evaluation {
        .unsupportedKind
    }
}

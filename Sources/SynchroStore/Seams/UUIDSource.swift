import Foundation

/// Where the engine draws the UUIDs it generates itself: atomic group IDs, capture statement tokens,
/// normalized and cancellation mutation IDs (and, later, batch and rebuild IDs).
///
/// Mutation IDs of application captures are not drawn here: the capture triggers generate them in SQL
/// (`randomblob`), so a file opened by any SDK captures the same way and the triggers need no custom function.
/// Tests inject a deterministic source so that the IDs the engine writes are predictable.
public struct UUIDSource: Sendable {
    private let draw: @Sendable () -> String

    /// A source that returns `draw()`; every value must be a canonical lowercase non-nil UUID.
    public init(_ draw: @escaping @Sendable () -> String) {
        self.draw = draw
    }

    /// Random version-4 UUIDs from Foundation, in canonical lowercase form.
    public static let random = UUIDSource { UUID().uuidString.lowercased() }

    /// The next UUID.
    public func next() -> String {
        draw()
    }
}

/// A dictionary key that compares strings by their exact UTF-8 octets.
///
/// Swift's `String` equality applies canonical equivalence, so `"é"` and `"e\u{301}"` would share
/// a slot; protocol identifiers (table and field IDs) are distinct whenever their octets differ.
struct ExactStringKey: Hashable, Sendable {
    let string: String

    init(_ string: String) {
        self.string = string
    }

    static func == (lhs: ExactStringKey, rhs: ExactStringKey) -> Bool {
        lhs.string.exactlyEquals(rhs.string)
    }

    func hash(into hasher: inout Hasher) {
        let hashed: Void? = string.utf8.withContiguousStorageIfAvailable {
            hasher.combine(bytes: UnsafeRawBufferPointer($0))
        }
        if hashed == nil {
            Array(string.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}

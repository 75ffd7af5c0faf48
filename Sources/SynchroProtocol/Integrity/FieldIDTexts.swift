/// `text(field_id)` of every field of a table plan, back to back in one allocation: field i's octets at
/// `starts[i]..<starts[i + 1]`. Shared by the row digesters' per-table plans; the owning plan deallocates.
struct FieldIDTexts {
    private let octets: UnsafeMutablePointer<UInt8>
    private let starts: UnsafeMutablePointer<Int>

    init(_ prefixes: [[UInt8]]) {
        let all = prefixes.flatMap { $0 }
        octets = .allocate(capacity: Swift.max(all.count, 1))
        octets.initialize(from: all, count: all.count)
        starts = .allocate(capacity: prefixes.count + 1)
        var start = 0
        for (position, prefix) in prefixes.enumerated() {
            starts[position] = start
            start += prefix.count
        }
        starts[prefixes.count] = start
    }

    /// The octets of `text(field_id)` of the field at `position`.
    @inline(__always)
    func text(_ position: Int) -> UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: octets + starts[position], count: starts[position + 1] - starts[position])
    }

    func deallocate() {
        octets.deallocate()
        starts.deallocate()
    }
}

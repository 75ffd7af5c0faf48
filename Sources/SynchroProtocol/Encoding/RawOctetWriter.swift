/// An append-only octet buffer over manually managed memory, for the integrity hot paths.
///
/// ``OctetWriter`` keeps its octets in an `Array`, so every append pays a uniqueness and a capacity
/// check through the array machinery; a row digest makes a few dozen appends per row, and validators
/// that decode straight into the output (base64url) need a pointer to write through. This writer is
/// a plain value of pointer, count and capacity: the code that allocates it owns the memory and
/// calls ``deallocate()`` exactly once. Copies alias the same memory, so a copy may be used as a
/// local working register only if it is stored back (growth moves the memory).
struct RawOctetWriter {
    /// Start of the memory; valid for `capacity` octets, initialized for `count`.
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var capacity: Int
    /// Number of octets written so far; marks where a length prefix or a slice starts.
    private(set) var count = 0

    init(capacity: Int) {
        let capacity = Swift.max(capacity, 16)
        base = .allocate(capacity: capacity)
        self.capacity = capacity
    }

    /// Frees the memory; the writer (and every copy of it) must not be used afterwards.
    func deallocate() {
        base.deallocate()
    }

    /// The octets written so far (valid until the next append).
    var octets: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// The written octets in `range` (valid until the next append).
    func octets(in range: Range<Int>) -> UnsafeBufferPointer<UInt8> {
        precondition(range.lowerBound >= 0 && range.upperBound <= count, "range outside the written octets")
        return UnsafeBufferPointer(start: base + range.lowerBound, count: range.count)
    }

    /// Forgets the octets after the first `newCount` (to undo a partial write, or to start over).
    @inline(__always)
    mutating func truncate(to newCount: Int) {
        precondition(newCount >= 0 && newCount <= count, "truncation beyond the written octets")
        count = newCount
    }

    /// Makes room for `extra` more octets.
    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if _slowPath(capacity &- count < extra) { grow(extra) }
    }

    @inline(never)
    private mutating func grow(_ extra: Int) {
        let needed = count + extra
        var newCapacity = Swift.max(capacity * 2, 64)
        while newCapacity < needed { newCapacity *= 2 }
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.initialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Claims `length` octets at the end and returns where they start, for a decoder to write
    /// into directly; the caller fills all of them, or truncates them away again.
    @inline(__always)
    mutating func appendUninitialized(_ length: Int) -> UnsafeMutablePointer<UInt8> {
        reserve(length)
        let start = base + count
        count &+= length
        return start
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count &+= 1
    }

    /// Two octets at once: a type tag and its presence octet.
    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) {
        reserve(2)
        base[count] = first
        base[count &+ 1] = second
        count &+= 2
    }

    @inline(__always)
    mutating func append(_ octets: UnsafeBufferPointer<UInt8>) {
        guard let source = octets.baseAddress else { return }
        reserve(octets.count)
        (base + count).initialize(from: source, count: octets.count)
        count &+= octets.count
    }

    @inline(__always)
    mutating func append(_ octets: [UInt8]) {
        octets.withUnsafeBufferPointer { append($0) }
    }

    @inline(__always)
    mutating func appendU32BE(_ v: UInt32) {
        reserve(4)
        UnsafeMutableRawPointer(base + count).storeBytes(of: v.bigEndian, as: UInt32.self)
        count &+= 4
    }

    @inline(__always)
    mutating func appendU64BE(_ v: UInt64) {
        reserve(8)
        UnsafeMutableRawPointer(base + count).storeBytes(of: v.bigEndian, as: UInt64.self)
        count &+= 8
    }

    /// Overwrites the 8 octets at `offset` with `u64be(v)`: fills a reserved length prefix.
    @inline(__always)
    mutating func setU64BE(_ v: UInt64, at offset: Int) {
        precondition(offset >= 0 && offset + 8 <= count, "length prefix outside the written octets")
        UnsafeMutableRawPointer(base + offset).storeBytes(of: v.bigEndian, as: UInt64.self)
    }

    /// `text(s) = blob(UTF-8(s))` from octets already known to be the UTF-8 of `s`.
    @inline(__always)
    mutating func appendBlob(_ octets: UnsafeBufferPointer<UInt8>) {
        reserve(8 &+ octets.count)
        appendU64BE(UInt64(octets.count))
        append(octets)
    }

    /// `text(s) = blob(UTF-8(s))`, without normalization.
    mutating func appendText(_ s: String) {
        let done: Void? = s.utf8.withContiguousStorageIfAvailable { appendBlob($0) }
        if done == nil { Array(s.utf8).withUnsafeBufferPointer { appendBlob($0) } }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Looks for credential shapes in every byte of a seed file — live cells, freeblocks, the unallocated space of each
/// page, overflow pages and free pages alike — so a token written and deleted again is found even though no query
/// can see it (issue #20; docs/seed-verification.md, `credential_residue`). A hit names the page and the shape,
/// never the bytes.
///
/// The shapes are chosen to be specific enough that data never matches by accident: a JWT (two base64url JSON
/// segments, `eyJ….eyJ….`), an HTTP `Bearer` credential of at least 20 token characters, a PEM private key
/// header, an AWS access key ID (`AKIA`/`ASIA` + 16), a Google API key (`AIza` + 35) and a GCP service-account key
/// file (`"private_key_id"`).
enum CredentialResidueScan {
    enum Shape: String, Sendable, CaseIterable {
        case jwt = "a JWT"
        case bearer = "a Bearer credential"
        case pemPrivateKey = "a PEM private key"
        case awsAccessKey = "an AWS access key ID"
        case googleAPIKey = "a Google API key"
        case gcpServiceAccountKey = "a GCP service-account key"
    }

    struct Hit: Sendable, Equatable {
        /// 1-based page number.
        let page: Int64
        let shape: Shape
    }

    /// The hits in the SQLite file at `path` (pages of the size its header gives), at most one per page and shape,
    /// in file order; nil when the file cannot be mapped.
    static func scan(path: String) -> [Hit]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        let size = Int(status.st_size)
        guard size > 0 else { return [] }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0), base != MAP_FAILED else { return nil }
        defer { munmap(base, size) }
        let bytes = UnsafeRawBufferPointer(start: base, count: size)
        let pageSize = size >= SeedFileProbe.headerBytes ? SeedFileProbe.pageSize(Array(bytes.prefix(18))) : 0
        // The pages the scan has passed are dropped from the resident set as it goes (issue #21): mapped pages count
        // in the process's peak memory, and the whole file would otherwise stay resident until `munmap`.
        let systemPage = max(4096, sysconf(Int32(_SC_PAGESIZE)))
        var released = 0
        return scan(bytes, pageSize: pageSize > 0 ? pageSize : 4096) { index in
            let end = (index - releaseLag) / systemPage * systemPage
            guard end > released else { return }
            _ = madvise(base + released, end - released, MADV_DONTNEED)
            released = end
        }
    }

    /// How far behind the scan mapped pages are released, octets: the matchers look ahead only.
    static let releaseLag = 8 << 20

    /// Scans `bytes`, calling `passed` every ``releaseLag`` octets with the index the scan has reached (it never
    /// reads below `index` again).
    static func scan(
        _ bytes: UnsafeRawBufferPointer, pageSize: Int64, passed: (Int) -> Void = { _ in }
    ) -> [Hit] {
        var hits: [Hit] = []
        var seen = Set<String>()
        let count = bytes.count
        var index = 0
        while index < count {
            let byte = bytes[index]
            let shape: Shape?
            switch byte {
            case UInt8(ascii: "e"): shape = isJWT(bytes, index) ? .jwt : nil
            case UInt8(ascii: "B"), UInt8(ascii: "b"): shape = isBearer(bytes, index) ? .bearer : nil
            case UInt8(ascii: "-"): shape = isPEMPrivateKey(bytes, index) ? .pemPrivateKey : nil
            case UInt8(ascii: "A"): shape = cloudKey(bytes, index)
            case UInt8(ascii: "\""): shape = matches(bytes, index, privateKeyID) ? .gcpServiceAccountKey : nil
            default: shape = nil
            }
            if let shape {
                let page = Int64(index) / pageSize + 1
                if seen.insert("\(page) \(shape.rawValue)").inserted { hits.append(Hit(page: page, shape: shape)) }
            }
            index += 1
            if index & (releaseLag - 1) == 0 { passed(index) }
        }
        return hits
    }

    private static let privateKeyID = Array(#""private_key_id""#.utf8)
    private static let pemBegin = Array("-----BEGIN ".utf8)
    private static let pemEnd = Array("PRIVATE KEY-----".utf8)
    private static let bearer = Array("bearer".utf8)

    private static func matches(_ bytes: UnsafeRawBufferPointer, _ at: Int, _ literal: [UInt8]) -> Bool {
        guard at + literal.count <= bytes.count else { return false }
        for (offset, expected) in literal.enumerated() where bytes[at + offset] != expected { return false }
        return true
    }

    /// How many bytes from `at` satisfy `accept`, up to `limit`.
    private static func run(
        _ bytes: UnsafeRawBufferPointer, from at: Int, limit: Int = 4096, _ accept: (UInt8) -> Bool
    ) -> Int {
        var end = at
        while end < bytes.count, end - at < limit, accept(bytes[end]) { end += 1 }
        return end - at
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    /// `eyJ` + ≥ 10 base64url, `.`, `eyJ` + ≥ 10 base64url, `.`: a JOSE header and a JSON claims set.
    private static func isJWT(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> Bool {
        let eyJ = Array("eyJ".utf8)
        guard matches(bytes, at, eyJ) else { return false }
        let header = run(bytes, from: at + 3, isBase64URL)
        let dot = at + 3 + header
        guard header >= 10, dot < bytes.count, bytes[dot] == UInt8(ascii: "."), matches(bytes, dot + 1, eyJ) else {
            return false
        }
        let claims = run(bytes, from: dot + 4, isBase64URL)
        let second = dot + 4 + claims
        return claims >= 10 && second < bytes.count && bytes[second] == UInt8(ascii: ".")
    }

    /// `Bearer` (any case), one or more spaces, then ≥ 20 RFC 6750 token68 characters.
    private static func isBearer(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> Bool {
        guard at + bearer.count < bytes.count else { return false }
        for (offset, expected) in bearer.enumerated() where bytes[at + offset] | 0x20 != expected { return false }
        let spaces = run(bytes, from: at + bearer.count, limit: 8) { $0 == UInt8(ascii: " ") }
        guard spaces > 0 else { return false }
        let token = run(bytes, from: at + bearer.count + spaces, limit: 64) { byte in
            isAlphanumeric(byte) || "-._~+/=".utf8.contains(byte)
        }
        return token >= 20
    }

    /// `-----BEGIN `, at most 40 upper-case letters or spaces, `PRIVATE KEY-----`.
    private static func isPEMPrivateKey(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> Bool {
        guard matches(bytes, at, pemBegin) else { return false }
        let label = at + pemBegin.count
        let words = run(bytes, from: label, limit: 40) { (0x41...0x5A).contains($0) || $0 == UInt8(ascii: " ") }
        for split in stride(from: words, through: 0, by: -1) where matches(bytes, label + split, pemEnd) {
            return true
        }
        return false
    }

    /// `AKIA`/`ASIA` + 16 upper-case letters or digits (AWS), or `AIza` + 35 base64url (Google). What follows is not
    /// looked at: in a record the next column's bytes follow a value directly.
    private static func cloudKey(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> Shape? {
        if matches(bytes, at, Array("AKIA".utf8)) || matches(bytes, at, Array("ASIA".utf8)) {
            let body = run(bytes, from: at + 4, limit: 16) { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }
            return body == 16 ? .awsAccessKey : nil
        }
        if matches(bytes, at, Array("AIza".utf8)) {
            return run(bytes, from: at + 4, limit: 35, isBase64URL) == 35 ? .googleAPIKey : nil
        }
        return nil
    }
}

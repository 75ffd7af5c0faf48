/// A SemVer 2.0.0 version (`app_version`, minimum client runtime), compared by SemVer precedence.
public struct SemanticVersion: Sendable, Comparable, CustomStringConvertible {
    public let major: UInt64
    public let minor: UInt64
    public let patch: UInt64
    /// Dot-separated pre-release identifiers (`rc.1` → ["rc", "1"]); empty for a release.
    public let preRelease: [String]
    public let text: String

    /// Parses strict SemVer 2.0.0: no leading `v`, no leading zeros, ASCII identifiers.
    public init?(_ text: String) {
        var core = Substring(text)
        if let plus = core.firstIndex(of: "+") {
            let build = core[core.index(after: plus)...]
            guard Self.identifiersValid(build, numericLeadingZeroAllowed: true) else { return nil }
            core = core[..<plus]
        }
        var pre: [String] = []
        if let dash = core.firstIndex(of: "-") {
            let preText = core[core.index(after: dash)...]
            guard Self.identifiersValid(preText, numericLeadingZeroAllowed: false) else { return nil }
            pre = preText.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            core = core[..<dash]
        }
        let parts = core.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let major = Self.numeric(parts[0]), let minor = Self.numeric(parts[1]),
              let patch = Self.numeric(parts[2])
        else { return nil }
        self.major = major
        self.minor = minor
        self.patch = patch
        self.preRelease = pre
        self.text = text
    }

    public var description: String { text }

    private static func numeric(_ s: Substring) -> UInt64? {
        guard !s.isEmpty, s.utf8.allSatisfy({ $0 &- 0x30 < 10 }), s == "0" || s.first != "0" else { return nil }
        return UInt64(s)
    }

    private static func identifiersValid(_ s: Substring, numericLeadingZeroAllowed: Bool) -> Bool {
        let identifiers = s.split(separator: ".", omittingEmptySubsequences: false)
        return identifiers.allSatisfy { id in
            guard !id.isEmpty, id.utf8.allSatisfy({ isIdentifierByte($0) }) else { return false }
            let numericOnly = id.utf8.allSatisfy { $0 &- 0x30 < 10 }
            return numericLeadingZeroAllowed || !numericOnly || id == "0" || id.first != "0"
        }
    }

    private static func isIdentifierByte(_ c: UInt8) -> Bool {
        c &- 0x30 < 10 || c &- 0x41 < 26 || c &- 0x61 < 26 || c == UInt8(ascii: "-")
    }

    public static func < (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        if (lhs.major, lhs.minor, lhs.patch) != (rhs.major, rhs.minor, rhs.patch) {
            return (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
        }
        switch (lhs.preRelease.isEmpty, rhs.preRelease.isEmpty) {
        case (true, true), (true, false): return false
        case (false, true): return true
        case (false, false): break
        }
        for (a, b) in zip(lhs.preRelease, rhs.preRelease) where a != b {
            switch (UInt64(a), UInt64(b)) {
            case let (x?, y?): return x < y
            case (.some, nil): return true
            case (nil, .some): return false
            case (nil, nil): return a.utf8.lexicographicallyPrecedes(b.utf8)
            }
        }
        return lhs.preRelease.count < rhs.preRelease.count
    }

    public static func == (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        !(lhs < rhs) && !(rhs < lhs)
    }
}

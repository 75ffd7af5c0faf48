import Glibc

/// A system call that failed: what was being done, on which path, and the `errno` it set.
///
/// The description gives the operating system's reason (`strerror`), never file contents, so it can be shown to a
/// user as it is. Callers that have their own error vocabulary map it into their `io` case.
package struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The operation in words (`"open"`, `"fsync"`, `"link"`), as in "cannot *open* PATH".
    package let operation: String
    /// The path the operation was applied to.
    package let path: String
    /// The `errno` value the call set.
    package let code: Int32

    /// An error for `operation` on `path` with the given `errno` value.
    package init(operation: String, path: String, code: Int32) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    /// An error for `operation` on `path` with the calling thread's current `errno`; call it right after the
    /// failed call, before anything else can change `errno`.
    package static func last(_ operation: String, path: String) -> SystemError {
        SystemError(operation: operation, path: path, code: errno)
    }

    /// True when the call failed because something already exists at the path (`EEXIST`): a destination that
    /// must not be replaced.
    package var isAlreadyExists: Bool { code == EEXIST }

    /// The operating system's text for ``code`` (`strerror`).
    package var reason: String { Self.reason(for: code) }

    /// `cannot OPERATION PATH: REASON`.
    package var description: String { "cannot \(operation) \(path): \(reason)" }

    /// The operating system's text for an `errno` value, or `errno N` when it has none.
    package static func reason(for code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text)
    }
}

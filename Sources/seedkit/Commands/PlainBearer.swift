/// A bearer credential sent over plain `http://` to a host other than this machine travels readable by anyone on
/// the path (issue #19): `sync` and `rebuild` warn, and with `--require-tls` refuse before anything is sent.
/// Loopback (`localhost`, `127.0.0.0/8`, `::1`) is exempt: the reference server in tests and drills listens there.
enum PlainBearer {
    /// Whether `server` is `http://` to a host that is not loopback.
    static func isExposed(_ server: String) -> Bool {
        guard server.lowercased().hasPrefix("http://") else { return false }
        let authority = server.dropFirst("http://".count).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let host: Substring
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            host = authority[authority.index(after: authority.startIndex)..<close]
        } else {
            host = authority.prefix { $0 != ":" }
        }
        let lowered = host.lowercased()
        return !(lowered == "localhost" || lowered == "::1" || lowered.hasPrefix("127."))
    }

    /// The warning line (names the host only; never the credential).
    static func warning(_ server: String) -> String {
        "seedkit: warning: the bearer credential is sent unencrypted over http:// to a host that is not this "
            + "machine (\(Console.displayURL(server))); use https://, or --require-tls to refuse\n"
    }
}

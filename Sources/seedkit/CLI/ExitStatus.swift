import SynchroStore

/// Exit statuses shared by every subcommand.
enum ExitStatus: Int32 {
    /// Everything checked passed.
    case success = 0
    /// The command ran and found failures (a vector failed, a check did not hold).
    case checkFailed = 1
    /// The invocation or its input is invalid: bad arguments, malformed JSON, a broken rule.
    case invalidInput = 2
    /// `sync` and `rebuild`: the store holds a stored non-retryable refusal (a blocking error) and sends nothing
    /// until its recovery is taken; the message names the code, its meaning and the command that recovers.
    case blocked = 3
    /// `sync` and `rebuild`: a retryable failure outlasted this run's attempts, or the server asked for a wait
    /// longer than one run sleeps; the durable backoff record keeps the deadline and the message names it.
    case retriesExhausted = 4
    /// `sync`, `rebuild`, `inspect` and `sql`: another process owns the store (`store_in_use`); refused at once,
    /// nothing read or changed. The message names the owner's PID when it recorded one.
    case locked = 5
    /// `verify`, `install`, `unpack`, `rehearse` with `--trusted-key`: the artifact is unsigned, wrongly signed,
    /// signed by an untrusted key, or differs from what was signed; nothing else was checked or written.
    case signatureRefused = 6
    /// SIGINT or SIGTERM stopped the command at a safe point: its scratch files are removed and nothing was
    /// published or installed (`interrupted; nothing published`).
    case interrupted = 130
}

/// The `store_in_use` message every store-opening command prints (docs/cli.md, "One owner per store").
enum StoreInUse {
    /// Whether `error` is the owner-lock refusal. Compared by rule: matching typed errors by pattern crashes the
    /// 6.3 compiler (see SyncCommand).
    static func matches(_ error: any Error) -> Bool {
        (error as? ClientStoreError)?.rule == "store_in_use"
    }

    static func report(_ error: any Error, json: Bool) {
        FailureReport(
            rule: "store_in_use",
            message: "\(error)\nseedkit: a store has one owner at a time; run again once it has finished",
            status: .locked
        ).print(command: "sync", json: json)
    }
}

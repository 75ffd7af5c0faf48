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
}

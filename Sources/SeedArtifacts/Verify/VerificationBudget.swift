import Dispatch
import SQLiteKit
import Synchronization

/// How much work one verification may do on a seed nobody trusts yet: a bound on time and on SQLite
/// virtual-machine work, counted over every connection the verification opens (the publication checks, the
/// integrity checks, the client store's migration of the copy, the installer's validation). Whatever a crafted
/// seed makes SQLite do, the verification ends with a `budget_exceeded` finding instead of running on.
///
/// The defaults are far above what a genuine seed needs; tests inject small limits and a clock.
public struct VerificationBudget: Sendable {
    /// Wall-clock time a verification may take, nanoseconds.
    public var maximumNanoseconds: UInt64
    /// Progress-handler steps (each ``instructionsPerStep`` SQLite virtual-machine instructions) a verification
    /// may take, summed over its connections.
    public var maximumSteps: Int
    /// The monotonic clock the time limit is measured with, nanoseconds.
    public var now: @Sendable () -> UInt64

    /// Instructions between two progress-handler calls. SQLite counts them per statement, so a statement shorter
    /// than this never reaches the handler: small enough that the checks' short statements are counted too.
    public static let instructionsPerStep: Int32 = 1000

    /// 30 minutes and 10¹¹ steps (10¹⁴ instructions) by default: bounds that only a seed doing something else
    /// than holding rows reaches.
    public init(
        maximumNanoseconds: UInt64 = 30 * 60 * 1_000_000_000, maximumSteps: Int = 100_000_000_000,
        now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }
    ) {
        self.maximumNanoseconds = maximumNanoseconds
        self.maximumSteps = maximumSteps
        self.now = now
    }
}

/// One verification's running account against its ``VerificationBudget``, shared by its connections (each on its
/// own thread). Once exhausted, every statement of every guarded connection stops at its next step.
final class BudgetMeter: Sendable {
    enum Exhausted: Sendable, Equatable {
        case time
        case steps
    }

    private let budget: VerificationBudget
    private let start: UInt64
    private let steps = Atomic<Int>(0)
    private let exhausted = Mutex<Exhausted?>(nil)

    init(_ budget: VerificationBudget) {
        self.budget = budget
        start = budget.now()
    }

    /// Why the budget ran out, nil while it lasts.
    var exhaustion: Exhausted? {
        exhausted.withLock { $0 }
    }

    /// Steps taken so far.
    var stepsTaken: Int {
        steps.load(ordering: .relaxed)
    }

    /// One progress-handler call; true when the statement must stop.
    func step() -> Bool {
        if exhausted.withLock({ $0 }) != nil { return true }
        let taken = steps.add(1, ordering: .relaxed).newValue
        let reason: Exhausted?
        if taken > budget.maximumSteps {
            reason = .steps
        } else if budget.now() &- start > budget.maximumNanoseconds {
            reason = .time
        } else {
            reason = nil
        }
        guard let reason else { return false }
        exhausted.withLock { if $0 == nil { $0 = reason } }
        return true
    }

    /// Makes `connection` safe to point at the seed or its copy: no view of the seed can be read, functions in the
    /// schema must be innocuous (`trusted_schema = OFF`), and every statement counts against the budget. With
    /// `triggers: false` no trigger fires either (read connections: a read fires none anyway).
    func guardConnection(_ connection: Connection, triggers: Bool = false) throws(SQLiteError) {
        try connection.setViewsEnabled(false)
        try connection.setTriggersEnabled(triggers)
        try connection.execute("PRAGMA trusted_schema = OFF")
        try connection.setProgressHandler(every: VerificationBudget.instructionsPerStep) { [self] in step() }
    }

    /// The finding that ends a verification whose budget ran out.
    func finding() -> SeedFinding? {
        guard let exhaustion else { return nil }
        let what = switch exhaustion {
        case .time: "its time limit of \(budget.maximumNanoseconds / 1_000_000_000) s"
        case .steps: "its limit of \(budget.maximumSteps) steps of \(VerificationBudget.instructionsPerStep) "
            + "SQLite instructions"
        }
        return SeedFinding(.budgetExceeded, message: "the verification reached \(what) and stopped; "
                               + "a seed holding rows does not need that much work")
    }
}

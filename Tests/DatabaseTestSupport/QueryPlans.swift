public import Storage
import Synchronization

/// The SQLite plans of the statements a database runs, each beside its SQL: what a plan test
/// reads (`EXPLAIN QUERY PLAN`, its `detail` column, one line per row).
public final class QueryPlans: Sendable {
    private let recorded = Mutex<[(sql: String, plan: [String])]>([])

    public init() {}

    /// `base`, recording here the plan of every statement it runs, in transactions or on their
    /// own, whose SQL `filter` accepts, before the statement runs.
    public func observing(
        _ base: any Database,
        only filter: @escaping @Sendable (String) -> Bool = { _ in true }
    ) -> ObservedDatabase {
        ObservedDatabase(base: base, includingSingle: true) { [self] sql, binds, executor in
            guard filter(sql) else { return }
            let plan = try await executor.query("EXPLAIN QUERY PLAN " + sql, binds).map { try $0.string("detail") }
            self.recorded.withLock { $0.append((sql, plan)) }
        }
    }

    /// Every statement recorded so far with its plan.
    public var all: [(sql: String, plan: [String])] { recorded.withLock { $0 } }

    /// Every plan line recorded so far.
    public var lines: [String] { recorded.withLock { $0.flatMap(\.plan) } }

    public func removeAll() {
        recorded.withLock { $0.removeAll() }
    }
}

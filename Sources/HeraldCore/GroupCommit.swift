import Synchronization

/// Runs work that callers submit one item at a time in batches: while a batch runs, the items
/// submitted meanwhile gather, and the next batch takes them all (up to `maximumBatch`). A busy
/// caller population pays one run (one transaction, one query) per batch instead of one per item.
///
/// It has no task of its own. The first caller to find nothing running leads: it runs the batch
/// that starts with its own item, hands each other caller its result, and passes the lead to the
/// first caller still waiting, who runs the next batch, starting with its own item. So every caller waits for exactly
/// one run, the one its item is in, and a batch runs on the task of one of its own callers.
///
/// `run` gets the items in submission order and returns one result per item, in the same order;
/// an error it throws fails every item of the batch. It must finish its batch even when the leading task is cancelled (the other callers wait for
/// it), for example by running its database work with cancellation ignored.
///
/// ```swift
/// let writes = GroupCommit<Row, Void>(maximumBatch: 256) { rows in
///     try await store.insert(rows)
///     return rows.map { _ in .success(()) }
/// }
/// try await writes.submit(row)
/// ```
public final class GroupCommit<Item: Sendable, Output: Sendable>: Sendable {
    public typealias Run = @Sendable ([Item]) async throws -> [Result<Output, any Error>]

    private enum Turn {
        case done(Result<Output, any Error>)
        /// Run the batch that starts with this caller's item.
        case lead
    }

    private struct Waiter {
        var item: Item
        var continuation: CheckedContinuation<Turn, Never>
    }

    private struct State {
        /// The callers whose items wait for the next batch; the leader's own item is not here.
        var waiting = FIFOQueue<Waiter>()
        var waitingCount = 0
        /// A caller leads a batch, or has been told to lead the next one.
        var leading = false
    }

    public let maximumBatch: Int
    private let run: Run
    private let state = Mutex(State())

    public init(maximumBatch: Int, run: @escaping Run) {
        precondition(maximumBatch > 0, "a batch holds at least one item")
        self.maximumBatch = maximumBatch
        self.run = run
    }

    /// How many submitted items wait for a batch to start (not counting the one being led).
    public var waiting: Int { state.withLock { $0.waitingCount } }

    /// Submits `item` and waits for the batch it goes in to run; returns or throws its result.
    public func submit(_ item: Item) async throws -> Output {
        let turn = await withCheckedContinuation { (continuation: CheckedContinuation<Turn, Never>) in
            let leads = state.withLock { state in
                if state.leading {
                    state.waiting.append(Waiter(item: item, continuation: continuation))
                    state.waitingCount += 1
                    return false
                }
                state.leading = true
                return true
            }
            if leads { continuation.resume(returning: .lead) }
        }
        switch turn {
        case .done(let result): return try result.get()
        case .lead: return try await lead(item).get()
        }
    }

    /// Runs the batch of `own` and the items waiting behind it, answers the others and passes the
    /// lead to the first caller still waiting; returns the leader's own result.
    private func lead(_ own: Item) async -> Result<Output, any Error> {
        let others = state.withLock { state in
            var others: [Waiter] = []
            while others.count < maximumBatch - 1, let waiter = state.waiting.popFirst() { others.append(waiter) }
            state.waitingCount -= others.count
            return others
        }
        var results: [Result<Output, any Error>]
        do {
            results = try await run([own] + others.map(\.item))
        } catch {
            results = Array(repeating: .failure(error), count: others.count + 1)
        }
        if results.count != others.count + 1 {
            let error = GroupCommitError.resultCountMismatch(others.count + 1, results.count)
            results = Array(repeating: .failure(error), count: others.count + 1)
        }
        let next = state.withLock { state -> Waiter? in
            if let next = state.waiting.popFirst() {
                state.waitingCount -= 1
                return next
            }
            state.leading = false
            return nil
        }
        for (waiter, result) in zip(others, results.dropFirst()) {
            waiter.continuation.resume(returning: .done(result))
        }
        next?.continuation.resume(returning: .lead)
        return results[0]
    }
}

/// A ``GroupCommit`` run broke its contract.
public enum GroupCommitError: Error, Equatable, CustomStringConvertible {
    /// The run returned another number of results than it was given items.
    case resultCountMismatch(Int, Int)

    public var description: String {
        switch self {
        case .resultCountMismatch(let items, let results):
            "a batch of \(items) items returned \(results) results"
        }
    }
}

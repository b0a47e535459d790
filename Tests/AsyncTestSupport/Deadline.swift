public import Testing

/// Runs `body`, which awaits an event, and fails the test, naming `what`, when the event has not
/// come within `timeout`; `body` is cancelled then. `what` is evaluated only on timeout, so it
/// may show state as it is then (a log).
///
/// A liveness bound so that a test whose event never comes fails instead of hanging, not a
/// timing assertion: keep it generous.
///
/// - Throws: the error `#require` throws on timeout (the issue is recorded at `sourceLocation`),
///   or what `body` throws.
public func withDeadline<T: Sendable>(
    _ what: @autoclosure () -> Comment,
    timeout: Duration = .seconds(30),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let first = try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        return try await group.next() ?? nil
    }
    return try #require(first, "gave up after \(timeout) waiting for \(what())", sourceLocation: sourceLocation)
}

/// Runs `body` so that the database calls in it take a connection even when the task is
/// cancelled: for writes that must still land during shutdown, such as the outcome of a job
/// whose worker the grace period's end cancelled. Without it, a cancelled task's call throws
/// `CancellationError` before it gets a connection.
///
/// Child tasks started inside `body` inherit the exemption.
public func withDatabaseCancellationIgnored<T>(_ body: () async throws -> T) async rethrows -> T {
    try await DatabaseCancellation.$ignored.withValue(true) { try await body() }
}

enum DatabaseCancellation {
    /// Set by ``withDatabaseCancellationIgnored(_:)``: connection checkout does not look at the
    /// task's cancellation.
    @TaskLocal static var ignored = false

    /// Whether the current task's cancellation stops a connection checkout.
    static var stopsCheckout: Bool { Task.isCancelled && !ignored }
}

public import Testing

/// Polls `condition` until it holds, for what has no event to await (a database row another
/// process writes, a counter the code under test keeps); fails the test, naming `what`, when it
/// does not hold within `timeout`.
///
/// The timeout is a liveness bound for a loaded machine, not a timing assertion: keep it
/// generous. Where the code under test can tell when something happened, await that instead.
///
/// - Parameters:
///   - what: what is awaited, for the failure message (evaluated only then).
///   - timeout: how long to keep polling before the test fails.
///   - interval: the pause between checks; longer for a condition that is costly to check.
///   - condition: checked at once, then every `interval`, and once more at the deadline.
/// - Throws: the error `#require` throws when the condition never held (the issue is recorded
///   at `sourceLocation`), `CancellationError`, or what `condition` throws.
public func eventually(
    _ what: @autoclosure () -> Comment = "the condition",
    timeout: Duration = .seconds(30),
    pollingEvery interval: Duration = .milliseconds(10),
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
    }
    let held = try await condition()
    try #require(held, "gave up after \(timeout) waiting for \(what())", sourceLocation: sourceLocation)
}

import DatabaseTestSupport
import Storage
import Testing

/// Runs `body` and returns the ``DatabaseError`` it threw; records an issue when it threw nothing
/// or something else.
func expectDatabaseError(
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> DatabaseError? {
    do {
        try await body()
        Issue.record("expected a DatabaseError, but the call succeeded", sourceLocation: sourceLocation)
        return nil
    } catch let error as DatabaseError {
        return error
    } catch {
        Issue.record("expected a DatabaseError, got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

public import HeraldCore
public import Storage

/// `/readyz`'s database check: one round trip to the configured database.
///
/// `/readyz` answers anyone, so its failure says what kind of trouble the database is in
/// ("unreachable", "busy") and never where it is: no host, port, user, database name or file path,
/// which the driver's own message would name. That message goes to Herald's log instead (at most
/// once a second per kind of failure, since anyone can ask).
public struct DatabaseReadiness: ReadinessCheck {
    public let name = "database"
    public let database: any Database
    public let logger: Logger
    private let failureLog = LogRateLimiter<String>(interval: .seconds(1))

    public init(database: any Database, logger: Logger = Logger(label: "herald.readiness")) {
        self.database = database
        self.logger = logger
    }

    public func check() async throws {
        do {
            try await database.ping()
        } catch {
            let failure = Self.failure(for: error)
            if let suppressed = failureLog.admit(failure.summary) {
                logger.warning(
                    "readiness: the database check failed",
                    metadata: [
                        "error": .string(String(describing: error)), "suppressed": .int(suppressed),
                    ]
                )
            }
            throw failure
        }
    }

    /// What `/readyz` shows for `error`: its kind, in words, and nothing that locates the database.
    public static func failure(for error: any Error) -> Failure {
        guard let error = error as? DatabaseError else {
            return Failure(summary: "unreachable: the check failed; Herald's log names the cause")
        }
        return switch error.code {
        case .lockTimeout, .acquireTimeout:
            Failure(summary: "busy: no connection or lock became free in time; Herald's log names the cause")
        case .statementTimeout:
            Failure(summary: "slow: the check did not finish within the statement timeout")
        case .closed:
            Failure(summary: "closed: Herald is shutting down")
        case .connectionFailed, .connectionLost:
            Failure(summary: "unreachable: cannot connect, or the connection dropped; Herald's log names the cause")
        default:
            Failure(summary: "failing: the check query failed; Herald's log names the cause")
        }
    }

    /// A database check's failure as `/readyz` shows it.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var summary: String
        public var description: String { summary }
    }
}

import CLibPQ
import HeraldCore

/// Owns one `PGconn*` and finishes it in `deinit` (which also closes the socket; the server rolls
/// back any open transaction).
///
/// Not `Sendable`: it lives inside ``PostgresConnection``'s mutex and is used only on that
/// connection's executor thread, as libpq requires (one thread per `PGconn` at a time).
final class PostgresHandle {
    let pointer: OpaquePointer
    /// Receives the server's notices; retained here because libpq holds it unretained.
    private let notices: PostgresNoticeSink

    /// Takes ownership of `pointer` and routes its notices to `logger`.
    init(takingOwnershipOf pointer: OpaquePointer, logger: Logger) {
        self.pointer = pointer
        self.notices = PostgresNoticeSink(logger: logger)
        PQsetNoticeReceiver(pointer, postgresNoticeReceiver, Unmanaged.passUnretained(notices).toOpaque())
    }

    deinit {
        PQfinish(pointer)
    }

    var isConnected: Bool { PQstatus(pointer) == CONNECTION_OK }

    var isIdle: Bool { PQtransactionStatus(pointer) == PQTRANS_IDLE }

    /// libpq's last error message for this connection, on one line.
    var errorMessage: String {
        PostgresHandle.oneLine(String(cString: PQerrorMessage(pointer)))
    }

    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline)
            .map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
    }
}

/// Where a connection's notices go: the driver's logger (libpq would print them to stderr).
final class PostgresNoticeSink: Sendable {
    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    func receive(_ result: OpaquePointer) {
        let severity = PostgresDiagnostics.field(result, PostgresDiagnostics.severity) ?? "NOTICE"
        let message = PostgresDiagnostics.field(result, PostgresDiagnostics.messagePrimary) ?? "notice"
        let metadata: [String: LogValue] = ["driver": "postgres", "severity": .string(severity)]
        switch severity {
        case "WARNING": logger.warning("PostgreSQL: \(message)", metadata: metadata)
        case "FATAL", "PANIC", "ERROR": logger.notice("PostgreSQL: \(message)", metadata: metadata)
        default: logger.debug("PostgreSQL: \(message)", metadata: metadata)
        }
    }
}

/// libpq's notice receiver: forwards to the ``PostgresNoticeSink`` passed as `arg`.
private let postgresNoticeReceiver: PQnoticeReceiver = { argument, result in
    guard let argument, let result else { return }
    Unmanaged<PostgresNoticeSink>.fromOpaque(argument).takeUnretainedValue().receive(result)
}

/// Error fields of a `PGresult` (the `PG_DIAG_*` character codes, which Swift cannot import).
enum PostgresDiagnostics {
    static let severity = Int32(UInt8(ascii: "V"))  // PG_DIAG_SEVERITY_NONLOCALIZED
    static let sqlState = Int32(UInt8(ascii: "C"))  // PG_DIAG_SQLSTATE
    static let messagePrimary = Int32(UInt8(ascii: "M"))  // PG_DIAG_MESSAGE_PRIMARY
    static let messageDetail = Int32(UInt8(ascii: "D"))  // PG_DIAG_MESSAGE_DETAIL
    static let messageHint = Int32(UInt8(ascii: "H"))  // PG_DIAG_MESSAGE_HINT
    static let statementPosition = Int32(UInt8(ascii: "P"))  // PG_DIAG_STATEMENT_POSITION
    static let constraintName = Int32(UInt8(ascii: "n"))  // PG_DIAG_CONSTRAINT_NAME

    static func field(_ result: OpaquePointer?, _ code: Int32) -> String? {
        guard let result, let value = PQresultErrorField(result, code) else { return nil }
        return String(cString: value)
    }
}

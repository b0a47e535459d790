import Foundation
import HTTPServer
import HeraldAPI
import HeraldCore
import Storage

/// `herald serve`: the HTTP API on the configured database, until SIGINT/SIGTERM.
enum ServeCommand {
    static let spec = CommandSpec(
        name: "herald serve",
        summary: "Run Herald's HTTP API. Settings come from the environment (README.md, Configuration).",
        usage: "herald serve [--host HOST] [--port PORT] [--database-url URL]",
        options: [
            .init("host", value: "HOST", help: "Address to listen on (HOST; default 0.0.0.0)."),
            .init("port", value: "PORT", help: "Port to listen on (PORT; default 3000)."),
            .init("database-url", value: "URL", help: "sqlite:PATH or postgres://… (DATABASE_URL)."),
        ]
    )

    static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
        } catch {
            printError("herald serve: \(error.message)")
            return 2
        }
        if parsed.wantsHelp {
            print(spec.help, terminator: "")
            return 0
        }
        if let extra = parsed.positionals.first {
            printError("herald serve: unexpected argument '\(extra)'; see 'herald serve --help'")
            return 2
        }
        let configuration: ServerConfiguration
        do {
            var overrides: [String: String] = [:]
            for name in ["host", "port", "database-url"] { overrides[name] = parsed.value(name) }
            configuration = try ServerConfiguration.load(
                environment: ProcessInfo.processInfo.environment,
                overrides: overrides
            )
        } catch {
            for problem in error.problems { printError("herald serve: \(problem)") }
            return 2
        }

        LoggingSystem.bootstrap(
            level: configuration.logLevel,
            handler: StreamLogHandler(format: configuration.logFormat)
        )
        let logger = Logger(label: "herald")
        do {
            try await serve(configuration, logger: logger)
            logger.notice("stopped")
            return 0
        } catch {
            logger.error("herald serve failed", metadata: ["error": .string(String(describing: error))])
            return 1
        }
    }

    static func serve(_ configuration: ServerConfiguration, logger: Logger) async throws {
        let database = try await DatabaseFactory.open(url: configuration.databaseURL, logger: logger)
        do {
            try await Migrator.migrate(database, HeraldMigrations.all, logger: logger)

            var router = Router()
            SystemRoutes(checks: [DatabaseReadiness(database: database)]).register(on: &router)

            var http = HTTPServer.Configuration()
            http.host = configuration.host
            http.port = configuration.port
            http.maxBodySize = configuration.maxBodySize
            http.shutdownTimeout = configuration.shutdownTimeout
            let server = HTTPServer(
                configuration: http,
                responder: router,
                logger: Logger(label: "herald.http")
            )
            let group = ServiceGroup(
                services: [server],
                gracePeriod: configuration.shutdownTimeout + .seconds(1),
                logger: logger
            )
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                tasks.addTask {
                    let port = try await server.listeningPort()
                    logger.notice(
                        "herald listening",
                        metadata: [
                            "address": .string("http://\(configuration.host):\(port)"),
                            "database": .string(DatabaseFactory.redact(url: configuration.databaseURL)),
                            "version": .string(Herald.version),
                        ]
                    )
                }
                try await tasks.waitForAll()
            }
        } catch {
            await database.close()
            throw error
        }
        await database.close()
    }
}

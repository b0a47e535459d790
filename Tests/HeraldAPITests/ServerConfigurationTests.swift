import HeraldAPI
import HeraldCore
import Testing

@Suite struct ServerConfigurationTests {
    @Test func defaultsMatchTheDesign() throws {
        let configuration = try ServerConfiguration.load(environment: [:])
        #expect(configuration.port == 3000)
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.databaseURL == "sqlite:herald.sqlite")
        #expect(configuration.logLevel == .info)
        #expect(configuration.logFormat == .text)
        #expect(configuration.databaseStatementTimeout == .seconds(30))
        #expect(configuration.databaseAcquireTimeout == .seconds(30))
    }

    @Test func databaseTimeoutsAreReadAndChecked() throws {
        let configuration = try ServerConfiguration.load(
            environment: ["HERALD_DB_STATEMENT_TIMEOUT": "0", "HERALD_DB_ACQUIRE_TIMEOUT": "3"]
        )
        #expect(configuration.databaseStatementTimeout == .zero)
        #expect(configuration.databaseAcquireTimeout == .seconds(3))
        #expect(throws: ConfigurationError.self) {
            try ServerConfiguration.load(environment: ["HERALD_DB_ACQUIRE_TIMEOUT": "0"])
        }
        do {
            _ = try ServerConfiguration.load(environment: ["HERALD_DB_STATEMENT_TIMEOUT": "soon"])
            Issue.record("an invalid statement timeout must be rejected")
        } catch {
            #expect(error.problems.count == 1)
            #expect(error.problems[0].hasPrefix("HERALD_DB_STATEMENT_TIMEOUT=soon is not valid"))
        }
    }

    @Test func environmentAndFlagsApply() throws {
        let configuration = try ServerConfiguration.load(
            environment: [
                "PORT": "8080", "LOG_LEVEL": "debug", "LOG_FORMAT": "JSON", "DATABASE_URL": "postgres://h/db",
            ],
            overrides: ["port": "9090"]
        )
        #expect(configuration.port == 9090)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.logFormat == .json)
        #expect(configuration.databaseURL == "postgres://h/db")
    }

    @Test func everyProblemIsReportedAtOnce() {
        do {
            _ = try ServerConfiguration.load(
                environment: ["PORT": "70000", "LOG_LEVEL": "loud", "DATABASE_URL": "mysql://x"]
            )
            Issue.record("invalid settings must be rejected")
        } catch {
            #expect(error.problems.count == 3)
            #expect(error.problems[0].hasPrefix("PORT=70000 is not valid"))
            #expect(error.problems.contains { $0.hasPrefix("LOG_LEVEL=loud is not valid: use one of trace") })
            #expect(error.problems.contains { $0.hasPrefix("DATABASE_URL is not valid") })
        }
    }
}

import APNs
import Foundation
import HeraldCore
import HeraldCrypto
import Notifications
import Testing

/// The one list of settings (``HeraldCore/Setting/all``) and what is generated from it:
/// `herald serve --help`, `herald config`, docs/CONFIGURATION.md and contrib/herald.env.example.
@Suite struct ConfigurationReferenceTests {
    /// The repository's root, from this file's path.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func committed(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// docs/CONFIGURATION.md is what `herald config --reference-markdown` prints: regenerate it with
    /// `.build/debug/herald config --reference-markdown > docs/CONFIGURATION.md`.
    @Test func committedReferenceIsTheGeneratedOne() async throws {
        let result = try await JobsCommandTests.herald(["config", "--reference-markdown"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.output == (try Self.committed("docs/CONFIGURATION.md")),
            "docs/CONFIGURATION.md differs: run .build/debug/herald config --reference-markdown > docs/CONFIGURATION.md"
        )
        for setting in Setting.all { #expect(result.output.contains("`\(setting.name)`")) }
    }

    /// contrib/herald.env.example is what `herald config --env-example` prints, with every variable.
    @Test func committedEnvironmentExampleIsTheGeneratedOne() async throws {
        let result = try await JobsCommandTests.herald(["config", "--env-example"])
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.output == (try Self.committed("contrib/herald.env.example")),
            "contrib/herald.env.example differs: run .build/debug/herald config --env-example > contrib/herald.env.example"
        )
        for setting in Setting.all {
            #expect(result.output.contains("\n#\(setting.name)=\(setting.defaultValue ?? "")\n"), "\(setting.name)")
        }
    }

    @Test func serveHelpListsEveryVariableWithItsDefault() async throws {
        let result = try await JobsCommandTests.herald(["serve", "--help"])
        #expect(result.status == 0)
        for setting in Setting.all {
            let line = result.output.split(separator: "\n").first { $0.hasPrefix("    \(setting.name) ") }
            #expect(line?.contains(setting.defaultValue ?? setting.defaultDescription) == true, "\(setting.name)")
        }
    }

    /// Environment variables are read through ``HeraldCore/EnvironmentReader`` only, which takes a
    /// ``HeraldCore/Setting``: no source file reads the environment by name.
    @Test func noSourceReadsTheEnvironmentByName() throws {
        let sources = Self.root.appendingPathComponent("Sources")
        let files =
            FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        #expect(files.count > 50)
        for file in files where !file.path.contains("/FuzzHarness/") {
            // Code only: doc comments may show a read as an example.
            let code = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
                .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
            for pattern in ["environment[\"", "getenv(", "processInfo.environment["] {
                let reads = code.filter { $0.contains(pattern) }
                #expect(reads.isEmpty, "\(file.lastPathComponent) reads the environment by name: \(reads)")
            }
        }
    }

    @Test func configPrintsTheEffectiveConfigurationWithSecretsRedacted() async throws {
        let pem = P256PrivateKey().pemRepresentation
        let apiKeys = "first-key-0123456789abcdef,second-key-0123456789abcdef"
        let result = try await JobsCommandTests.herald(
            ["config", "--port", "4000"],
            environment: [
                "DATABASE_URL": "postgres://herald:hunter2secret@db.internal:5432/herald",
                "HERALD_API_KEYS": apiKeys,
                "APNS_AUTH_KEY": pem, "APNS_KEY_ID": "ABC123DEFG", "APPLE_TEAM_ID": "DEF123GHIJ",
                "TOPIC": "org.example.app", "APNS_ENVIRONMENT": "sandbox", "HERALD_JOB_CONCURRENCY": "8",
                "HOST": nil, "HERALD_MAX_CONNECTIONS_PER_IP": nil, "HERALD_API_KEY": "typo-0123456789abcdef",
            ]
        )
        #expect(result.status == 0, "stderr: \(result.error)")
        #expect(
            result.error.contains(
                "herald config: note: HERALD_API_KEY is not a Herald setting and is ignored: did you mean HERALD_API_KEYS?"
            ),
            "stderr: \(result.error)"
        )
        let lines = result.output.split(separator: "\n").map {
            $0.replacingOccurrences(of: " +", with: " ", options: .regularExpression)
        }
        #expect(lines.contains("PORT=4000 # set"))
        #expect(lines.contains("HOST=0.0.0.0 # default"))
        #expect(lines.contains("HERALD_JOB_CONCURRENCY=8 # set"))
        #expect(lines.contains("DATABASE_URL=postgres://herald:***@db.internal:5432/herald # set"))
        #expect(lines.contains("HERALD_API_KEYS=(2 keys, redacted) # set"))
        #expect(lines.contains { $0.hasPrefix("APNS_AUTH_KEY=(set, ") && $0.hasSuffix(" bytes, redacted) # set") })
        #expect(lines.contains("APNS_ENVIRONMENT=sandbox # set"))
        #expect(lines.contains("HERALD_MAX_CONNECTIONS_PER_IP= # unset: no limit"))
        #expect(
            lines.contains("# org.example.app: production and sandbox; pushes naming no environment go to sandbox")
        )
        for secret in ["hunter2secret", "first-key", "second-key", "PRIVATE KEY"] {
            #expect(!result.output.contains(secret) && !result.error.contains(secret), "\(secret) was shown")
        }
        for setting in Setting.all { #expect(result.output.contains("\n\(setting.name)=")) }
    }

    @Test func configListsEveryProblemAndExits2() async throws {
        let result = try await JobsCommandTests.herald(
            ["config"],
            environment: [
                "PORT": "http", "LOG_FORMAT": "xml", "DATABASE_URL": "mysql://x", "HERALD_API_KEYS": "short",
                "HERALD_JOB_LEASE_SECONDS": "1", "APNS_ENVIRONMENT": "staging", "APNS_KEY_ID": "abc",
                "APNS_SANDBOX_URL": "ftp://x", "APNS_AUTH_KEY": nil, "APNS_AUTH_KEY_FILE": nil, "HERALD_APPS_FILE": nil,
                "APPLE_TEAM_ID": nil, "TOPIC": nil,
            ]
        )
        #expect(result.status == 2)
        #expect(result.output.isEmpty)
        let expected = [
            "PORT=http is not valid: use a whole number from 0 to 65535 (default 3000)",
            "LOG_FORMAT=xml is not valid: use one of text, json",
            "DATABASE_URL is not valid: use sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE",
            "HERALD_API_KEYS entry 1 is not usable",
            "HERALD_JOB_LEASE_SECONDS=1 is not valid: use a whole number of seconds from 5 to 3600 (default 30)",
            "APNS_AUTH_KEY is not set: set it to the contents of the .p8 key",
            "APPLE_TEAM_ID is not set",
            "TOPIC is not set",
            "APNS_KEY_ID=abc is not valid",
            "APNS_ENVIRONMENT=staging is not valid: use one of production, sandbox",
            "APNS_SANDBOX_URL=ftp://x is not valid",
            "11 problems; fix them and run herald config again",
        ]
        for problem in expected {
            #expect(result.error.contains("herald config: \(problem)"), "missing: \(problem)\nstderr:\n\(result.error)")
        }
        #expect(result.error.split(separator: "\n").count == expected.count, "stderr:\n\(result.error)")
    }

    /// With `APNS_ENVIRONMENT=sandbox`, a notification that names no environment goes to the sandbox.
    @Test func notificationsWithoutAnEnvironmentFollowAPNSEnvironment() throws {
        var environment = [
            "APNS_AUTH_KEY": P256PrivateKey().pemRepresentation, "APNS_KEY_ID": "ABC123DEFG",
            "APPLE_TEAM_ID": "DEF123GHIJ", "TOPIC": "org.example.app",
        ]
        let cases: [(String?, APNSEnvironment)] = [
            (nil, .production), ("sandbox", .sandbox), ("production", .production),
        ]
        for (value, expected) in cases {
            environment["APNS_ENVIRONMENT"] = value
            let clients = APNSClientProvider(
                apps: try APNSAppConfiguration.load(environment: environment),
                endpoints: APNSEndpoints(),
                logger: Logger(label: "test", level: .critical)
            )
            #expect(try clients.resolve(app: nil, environment: nil).1 == expected)
            #expect(try clients.resolve(app: nil, environment: .production).1 == .production)
        }
    }
}

import CloudKit
import Foundation
import HeraldCore

/// `herald cloudkit ping|cleanup|check`: one CloudKit record now, the cleanup of older ones, and
/// whether CloudKit accepts the server-to-server key (CLOUDKIT_* settings, README "Wake pings").
enum CloudKitCommand {
    static let spec = CommandSpec(
        name: "herald cloudkit",
        summary: "Create a wake record, clean up older ones, or check the CloudKit server-to-server key.",
        usage: "herald cloudkit (ping | cleanup --keep N | check) --container iCloud.ID [--environment E] "
            + "[--record-type T] [--field F] [--app BUNDLE]",
        options: [
            .init("container", value: "ID", help: "The CloudKit container, iCloud.… (default: the --app's container)."),
            .init("environment", value: "E", help: "production (default) or development."),
            .init("record-type", value: "T", help: "The record type (default WakePing)."),
            .init("field", value: "F", help: "The field holding the time in Unix seconds (default ts)."),
            .init("keep", value: "N", help: "cleanup: how many of the newest records to keep."),
            .init("app", value: "BUNDLE", help: "Use this app's key from HERALD_APPS_FILE (default: CLOUDKIT_KEY_ID)."),
            .init("timeout", value: "SECONDS", help: "Connect and request deadline, each (default 10)."),
        ]
    )

    static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        let action: String
        let container: String
        let environment: CloudKitEnvironment
        let settings: CloudKitSettings
        let signer: CloudKitSigner
        let timeout: Duration
        do throws(UsageError) {
            parsed = try spec.parse(arguments)
            if parsed.wantsHelp {
                print(spec.help, terminator: "")
                return 0
            }
            guard let first = parsed.positionals.first, ["ping", "cleanup", "check"].contains(first),
                parsed.positionals.count == 1
            else {
                throw UsageError("say what to do: herald cloudkit ping, cleanup --keep N, or check (see --help)")
            }
            action = first
            let name = parsed.value("environment") ?? "production"
            guard let parsedEnvironment = CloudKitEnvironment(rawValue: name) else {
                throw UsageError("--environment \(name) is not a CloudKit environment: use production or development")
            }
            environment = parsedEnvironment
            timeout = .seconds(try parsed.integer("timeout", default: 10, range: 1...600))
            do {
                settings = try CloudKitSettings.load(environment: ProcessInfo.processInfo.environment)
            } catch {
                throw UsageError("the CloudKit settings are not usable:\n  " + error.problems.joined(separator: "\n  "))
            }
            let app = parsed.value("app")
            if let app, settings.appKeys[app] == nil {
                throw UsageError("--app \(app) has no \"cloudkit\" key in HERALD_APPS_FILE")
            }
            guard let found = settings.signer(app: app) else {
                throw UsageError(
                    "no CloudKit key is configured: set CLOUDKIT_KEY_ID and CLOUDKIT_PRIVATE_KEY_FILE (or "
                        + "CLOUDKIT_PRIVATE_KEY), or give --app for an app with a \"cloudkit\" key in HERALD_APPS_FILE"
                )
            }
            signer = found
            guard let named = parsed.value("container") ?? app.flatMap({ settings.appKeys[$0]?.container }) else {
                throw UsageError("--container iCloud.… is required (the CloudKit container of the app)")
            }
            container = named
        } catch {
            printError("herald cloudkit: \(error.message)")
            return 2
        }
        let recordType = parsed.value("record-type") ?? "WakePing"
        let field = parsed.value("field") ?? "ts"
        var configuration = settings.clientConfiguration
        configuration.maximumAttempts = 3
        configuration.connectTimeout = timeout
        configuration.requestTimeout = timeout
        configuration.logger = Logger(label: "herald.cloudkit", level: .warning)
        let client: CloudKitClient
        do {
            client = try CloudKitClient(signer: signer, configuration: configuration)
        } catch {
            printError("herald cloudkit: \(error.reason)")
            return 2
        }
        let status: Int32
        switch action {
        case "ping":
            status = await ping(client, container, environment, recordType, field)
        case "cleanup":
            status = await cleanup(client, parsed, container, environment, recordType, field)
        default:
            status = await check(client, container, environment, recordType, signer.keyID)
        }
        await client.close()
        return status
    }

    private static func cleanup(
        _ client: CloudKitClient,
        _ parsed: ParsedArguments,
        _ container: String,
        _ environment: CloudKitEnvironment,
        _ recordType: String,
        _ field: String
    ) async -> Int32 {
        let keep: Int
        do throws(UsageError) {
            guard let text = parsed.value("keep") else { throw UsageError("cleanup needs --keep N") }
            guard let value = Int(text), (0...1_000_000).contains(value) else {
                throw UsageError("--keep \(text) is not a number from 0 to 1000000")
            }
            keep = value
        } catch {
            printError("herald cloudkit: \(error.message)")
            return 2
        }
        do {
            let deleted = try await client.cleanup(
                container: container,
                environment: environment,
                recordType: recordType,
                sortField: field,
                keep: keep
            )
            print("deleted=\(deleted) kept-at-most=\(keep) record-type=\(recordType)")
            return 0
        } catch {
            return report(error)
        }
    }

    private static func ping(
        _ client: CloudKitClient,
        _ container: String,
        _ environment: CloudKitEnvironment,
        _ recordType: String,
        _ field: String
    ) async -> Int32 {
        do {
            let record = try await client.createRecord(
                container: container,
                environment: environment,
                recordType: recordType,
                fields: [field: .int64(Int64(Date().timeIntervalSince1970))]
            )
            print(record.recordName)
            return 0
        } catch {
            return report(error)
        }
    }

    /// One query with limit 1: a 401 says the key is not accepted; any answer past the
    /// authentication (even a refusal of the query) says it is.
    private static func check(
        _ client: CloudKitClient,
        _ container: String,
        _ environment: CloudKitEnvironment,
        _ recordType: String,
        _ keyID: String
    ) async -> Int32 {
        let target = "\(container) (\(environment.rawValue)) at \(client.configuration.url)"
        do {
            _ = try await client.queryRecords(
                container: container,
                environment: environment,
                recordType: recordType,
                limit: 1
            )
            print(
                "key accepted: CloudKit answered a signed records/query for \(recordType) in \(target) with key \(keyID)"
            )
            return 0
        } catch {
            switch error.code {
            case .authenticationFailed, .authenticationRequired:
                print("key NOT accepted by \(target): \(error.code) — \(error.reason)")
                printError(
                    "herald cloudkit: check that CLOUDKIT_KEY_ID is the Key ID CloudKit Dashboard shows (API Access → "
                        + "Server-to-Server Keys), that the private key is the one whose public half was pasted there, "
                        + "that the key belongs to this container, and that this machine's clock is right"
                )
                return 1
            case .accessDenied:
                print("key NOT allowed for \(target): \(error.code) — \(error.reason)")
                return 1
            case .connectionFailed, .invalidResponse, .invalidConfiguration, .signingFailed:
                return report(error)
            default:
                print("key accepted by \(target), but the query was refused: \(error.code) — \(error.reason)")
                return 0
            }
        }
    }

    private static func report(_ error: CloudKitError) -> Int32 {
        printError("herald cloudkit: \(error)")
        return error.code == .invalidConfiguration ? 2 : 1
    }
}

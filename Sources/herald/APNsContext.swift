import APNs
import APNsTransport
import Foundation
import HeraldCore

/// What every APNs command needs: the configured apps, the endpoints, one token manager per key,
/// and connection pools made on demand.
struct APNsContext {
    let apps: [APNSAppConfiguration]
    let endpoints: APNSEndpoints
    let logger: Logger

    /// Reads the APNs settings from the environment, or prints every problem.
    static func load(command: String, logger: Logger) -> APNsContext? {
        let environment = ProcessInfo.processInfo.environment
        var problems: [String] = []
        var apps: [APNSAppConfiguration] = []
        var endpoints = APNSEndpoints()
        do {
            apps = try APNSAppConfiguration.load(environment: environment)
        } catch {
            problems += error.problems
        }
        do {
            endpoints = try APNSEndpoints.load(environment: environment)
        } catch {
            problems += error.problems
        }
        guard problems.isEmpty else {
            for problem in problems { printError("\(command): \(problem)") }
            return nil
        }
        return APNsContext(apps: apps, endpoints: endpoints, logger: logger)
    }

    /// The app whose bundle id `topic` starts with (a topic may carry a push-type suffix), or the
    /// first configured app when `topic` is nil.
    func app(forTopic topic: String?) -> APNSAppConfiguration? {
        guard let topic else { return apps.first }
        return apps.filter { topic == $0.bundleID || topic.hasPrefix($0.bundleID + ".") }
            .max { $0.bundleID.count < $1.bundleID.count }
    }

    func environment(for app: APNSAppConfiguration, sandbox: Bool) -> APNSEnvironment {
        if sandbox { return .sandbox }
        return app.defaultEnvironment
    }

    /// A pool to `endpoint` with TLS settings for `app`'s credentials.
    func pool(
        to endpoint: APNSEndpoint,
        app: APNSAppConfiguration,
        configure: (inout APNSConnectionPool.Configuration) -> Void = { _ in }
    ) -> APNSConnectionPool {
        var configuration = APNSConnectionPool.Configuration()
        configure(&configuration)
        return APNSConnectionPool(
            endpoint: endpoint,
            tls: APNSTLSConfiguration(caFile: endpoints.caFile, credentials: app.credentials),
            configuration: configuration,
            logger: logger
        )
    }

    func client(transport: APNSConnectionPool, app: APNSAppConfiguration) -> APNSClient {
        APNSClient(transport: transport, credentials: app.credentials, logger: logger)
    }
}

/// Reads `--payload`, `--payload-file`, `--alert`, `--title`/`--body` into JSON bytes.
enum PayloadOptions {
    static let options: [CommandSpec.Option] = [
        .init("alert", value: "TEXT", help: "An alert with this body: {\"aps\":{\"alert\":TEXT}}."),
        .init("title", value: "TEXT", help: "Alert title (with --body)."),
        .init("body", value: "TEXT", help: "Alert body (with --title)."),
        .init("payload", value: "JSON", help: "The whole JSON payload."),
        .init("payload-file", value: "FILE", help: "Read the JSON payload from FILE (- for standard input)."),
    ]

    static func payload(from parsed: ParsedArguments) throws(UsageError) -> [UInt8] {
        let given = ["alert", "payload", "payload-file"].filter { parsed.value($0) != nil }
        let titled = parsed.value("title") != nil || parsed.value("body") != nil
        guard given.count + (titled ? 1 : 0) == 1 else {
            throw UsageError("give exactly one of --alert TEXT, --title T --body B, --payload JSON, --payload-file F")
        }
        if let text = parsed.value("alert") {
            return payload(alert: .string(text))
        }
        if titled {
            var alert: [String: JSONValue] = [:]
            alert["title"] = parsed.value("title").map(JSONValue.string)
            alert["body"] = parsed.value("body").map(JSONValue.string)
            return payload(alert: .object(alert))
        }
        if let json = parsed.value("payload") {
            return Array(json.utf8)
        }
        let path = parsed.value("payload-file") ?? "-"
        do {
            if path == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
            return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw UsageError("cannot read --payload-file \(path): \(error.localizedDescription)")
        }
    }

    /// `{"aps":{"alert":…}}`, written with sorted keys by the one JSON writer.
    private static func payload(alert: JSONValue) -> [UInt8] {
        // Only strings inside: writing cannot fail (it fails only for a double that is not finite).
        (try? JSONValue.object(["aps": ["alert": alert]]).jsonBytes()) ?? Array("{}".utf8)
    }
}

extension APNSExpiration {
    /// `--expiration`: `0` (try once), Unix seconds, or RFC 3339.
    init(argument: String) throws(UsageError) {
        if argument == "0" {
            self = .immediately
        } else if let seconds = Int64(argument), (1...EpochTime.maximumSeconds).contains(seconds) {
            self = .at(Date(timeIntervalSince1970: TimeInterval(seconds)))
        } else if let date = RFC3339.date(from: argument) {
            self = .at(date)
        } else {
            throw UsageError(
                "--expiration \(argument) is not valid: use 0, Unix seconds up to \(EpochTime.maximumSeconds) or an RFC 3339 time"
            )
        }
    }
}

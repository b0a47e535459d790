import APNs
import APNsTransport
import Foundation
import HeraldCore

/// `herald send`: one push to one device, printing APNs' answer.
enum SendCommand {
    static let spec = CommandSpec(
        name: "herald send",
        summary: "Send one push notification to one device and print APNs' answer.",
        usage: "herald send --token HEX [--sandbox] [--push-type T] [--priority N] [--expiration T] "
            + "[--collapse-id S] [--topic T] (--alert TEXT | --title T --body B | --payload JSON | --payload-file F)",
        options: [
            .init("token", value: "HEX", help: "The device token (hexadecimal)."),
            .init("sandbox", help: "Send to the sandbox (development) environment."),
            .init("push-type", value: "T", help: "alert (default), background, voip, liveactivity, …"),
            .init("priority", value: "N", help: "10, 5 or 1 (default: the push type's)."),
            .init("expiration", value: "T", help: "0 (try once), Unix seconds or RFC 3339."),
            .init("collapse-id", value: "S", help: "apns-collapse-id (at most 64 bytes)."),
            .init("topic", value: "T", help: "apns-topic (default: the app's bundle id + the type's suffix)."),
        ] + PayloadOptions.options
    )

    static func run(_ arguments: [String]) async -> Int32 {
        let logger = Logger(label: "herald.send", level: .warning)
        let parsed: ParsedArguments
        let request: APNSRequest
        let sandbox: Bool
        do throws(UsageError) {
            parsed = try spec.parse(arguments)
            if parsed.wantsHelp {
                print(spec.help, terminator: "")
                return 0
            }
            guard let token = parsed.value("token") else { throw UsageError("--token HEX is required") }
            let pushType: APNSPushType
            if let name = parsed.value("push-type") {
                guard let type = APNSPushType(headerValue: name) else {
                    let known = APNSPushType.allCases.map(\.headerValue).joined(separator: ", ")
                    throw UsageError("--push-type \(name) is not a push type: use one of \(known)")
                }
                pushType = type
            } else {
                pushType = .alert
            }
            var priority: APNSPriority?
            if let text = parsed.value("priority") {
                guard let value = APNSPriority(headerValue: text) else {
                    throw UsageError("--priority \(text) is not valid: use 10, 5 or 1")
                }
                priority = value
            }
            let expiration = try parsed.value("expiration").map { text throws(UsageError) in
                try APNSExpiration(argument: text)
            }
            sandbox = parsed.flag("sandbox")
            request = APNSRequest(
                deviceToken: token,
                pushType: pushType,
                topic: parsed.value("topic").map { .explicit($0) } ?? .bundleID(""),
                payload: try PayloadOptions.payload(from: parsed),
                expiration: expiration ?? .omitted,
                priority: priority,
                collapseID: parsed.value("collapse-id")
            )
        } catch {
            printError("herald send: \(error.message)")
            return 2
        }

        guard let context = APNsContext.load(command: "herald send", logger: logger) else { return 2 }
        guard let app = context.app(forTopic: parsed.value("topic")) else {
            printError(
                "herald send: no configured app serves topic \(parsed.value("topic") ?? ""): check TOPIC or HERALD_APPS_FILE"
            )
            return 2
        }
        var resolved = request
        if parsed.value("topic") == nil { resolved.topic = .bundleID(app.bundleID) }
        let environment = context.environment(for: app, sandbox: sandbox)
        let pool = context.pool(to: context.endpoints.push(environment), app: app)
        let client = context.client(transport: pool, app: app)
        do {
            let result = try await client.send(resolved)
            await pool.shutdown()
            switch result {
            case .delivered(let delivery):
                let id = delivery.apnsID?.uuidString.lowercased() ?? resolved.id.uuidString.lowercased()
                print("status=200 apns-id=\(id) environment=\(environment)")
                return 0
            case .rejected(let rejection):
                var line =
                    "status=\(rejection.status) apns-id=\(resolved.id.uuidString.lowercased()) reason=\(rejection.reason)"
                if let since = rejection.deviceTokenInvalidSince {
                    line += " unregistered-at=\(RFC3339.string(from: since))"
                }
                print(line)
                printError("herald send: APNs refused the push (\(rejection.category))")
                return 1
            }
        } catch let error as APNSValidationError {
            await pool.shutdown()
            printError("herald send: \(error)")
            return 2
        } catch {
            await pool.shutdown()
            printError("herald send: \(error)")
            return 1
        }
    }
}

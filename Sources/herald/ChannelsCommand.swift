import APNs
import APNsTransport
import Foundation
import HeraldCore

/// `herald channels create|get|list|delete` and `herald broadcast`: iOS 18 broadcast channels.
enum ChannelsCommand {
    static let common: [CommandSpec.Option] = [
        .init("sandbox", help: "Use the sandbox (development) environment."),
        .init("topic", value: "BUNDLE", help: "The app's bundle id (default: TOPIC or the first app)."),
    ]

    static let spec = CommandSpec(
        name: "herald channels",
        summary: "Manage broadcast channels on APNs' channel-management host.",
        usage: "herald channels create [--storage-policy 0|1] | get --channel ID | list | delete --channel ID "
            + "[--sandbox] [--topic BUNDLE]",
        options: common + [
            .init("channel", value: "ID", help: "The channel id (base64), for get and delete."),
            .init("storage-policy", value: "0|1", help: "create: 0 stores nothing, 1 the latest message (default 1)."),
        ]
    )

    static let broadcastSpec = CommandSpec(
        name: "herald broadcast",
        summary: "Send a Live Activity update or end to every subscriber of a broadcast channel.",
        usage: "herald broadcast --channel ID [--storage-policy 0|1] [--expiration T] [--priority 10|5] "
            + "[--sandbox] [--topic BUNDLE] (--payload JSON | --payload-file F)",
        options: common + [
            .init("channel", value: "ID", help: "The channel id (base64)."),
            .init(
                "storage-policy",
                value: "0|1",
                help: "The channel's policy; 0 forces apns-expiration 0 (default 1)."
            ),
            .init("expiration", value: "T", help: "0, Unix seconds or RFC 3339 (default 0)."),
            .init("priority", value: "N", help: "10 (default) or 5."),
            .init("payload", value: "JSON", help: "The Live Activity payload ({\"aps\":{\"event\":\"update\",…}})."),
            .init("payload-file", value: "FILE", help: "Read the payload from FILE (- for standard input)."),
        ]
    )

    static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        do throws(UsageError) {
            parsed = try spec.parse(arguments)
        } catch {
            printError("herald channels: \(error.message)")
            return 2
        }
        if parsed.wantsHelp || parsed.positionals.isEmpty {
            print(spec.help, terminator: "")
            return parsed.wantsHelp ? 0 : 2
        }
        let action = parsed.positionals[0]
        guard ["create", "get", "list", "delete"].contains(action), parsed.positionals.count == 1 else {
            printError("herald channels: use one of create, get, list, delete; see 'herald channels --help'")
            return 2
        }
        let policy: APNSChannelMessageStoragePolicy
        do throws(UsageError) {
            policy = try storagePolicy(parsed)
        } catch {
            printError("herald channels: \(error.message)")
            return 2
        }
        let channel = parsed.value("channel").map { APNSChannelID(rawValue: $0) }
        if ["get", "delete"].contains(action), channel == nil {
            printError("herald channels \(action): --channel ID is required")
            return 2
        }
        return await withClient(command: "herald channels", parsed: parsed, management: true) { client, bundleID in
            switch action {
            case "create":
                let id = try await client.createChannel(bundleID: bundleID, storagePolicy: policy)
                print("channel-id=\(id) storage-policy=\(policy)")
            case "get":
                let configuration = try await client.channelConfiguration(bundleID: bundleID, channelID: channel!)
                print(
                    "channel-id=\(channel!) storage-policy=\(configuration.storagePolicy) push-type=\(configuration.pushType)"
                )
            case "list":
                for id in try await client.allChannels(bundleID: bundleID) { print(id) }
            default:
                try await client.deleteChannel(bundleID: bundleID, channelID: channel!)
                print("deleted channel-id=\(channel!)")
            }
            return 0
        }
    }

    static func broadcast(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        let policy: APNSChannelMessageStoragePolicy
        let expiration: APNSExpiration
        let priority: APNSPriority
        let payload: [UInt8]
        do throws(UsageError) {
            parsed = try broadcastSpec.parse(arguments)
            if parsed.wantsHelp {
                print(broadcastSpec.help, terminator: "")
                return 0
            }
            guard parsed.value("channel") != nil else { throw UsageError("--channel ID is required") }
            policy = try storagePolicy(parsed)
            expiration =
                try parsed.value("expiration").map { text throws(UsageError) in
                    try APNSExpiration(argument: text)
                } ?? .immediately
            guard let value = APNSPriority(headerValue: parsed.value("priority") ?? "10") else {
                throw UsageError("--priority \(parsed.value("priority") ?? "") is not valid: use 10 or 5")
            }
            priority = value
            payload = try PayloadOptions.payload(from: parsed)
        } catch {
            printError("herald broadcast: \(error.message)")
            return 2
        }
        return await withClient(command: "herald broadcast", parsed: parsed, management: false) { client, bundleID in
            let request = APNSBroadcastRequest(
                bundleID: bundleID,
                channelID: APNSChannelID(rawValue: parsed.value("channel") ?? ""),
                storagePolicy: policy,
                payload: payload,
                expiration: expiration,
                priority: priority
            )
            switch try await client.send(request) {
            case .delivered(let delivery):
                let id = delivery.requestID?.uuidString.lowercased() ?? "-"
                print("status=200 apns-request-id=\(id) apns-unique-id=\(delivery.uniqueID ?? "-")")
                return 0
            case .rejected(let rejection):
                print("status=\(rejection.status) reason=\(rejection.reason)")
                return 1
            }
        }
    }

    private static func storagePolicy(_ parsed: ParsedArguments) throws(UsageError) -> APNSChannelMessageStoragePolicy {
        let text = parsed.value("storage-policy") ?? "1"
        guard let number = Int(text), let policy = APNSChannelMessageStoragePolicy(rawValue: number) else {
            throw UsageError("--storage-policy \(text) is not valid: use 0 (store nothing) or 1 (store the latest)")
        }
        return policy
    }

    /// Sets up a client for the management host (or the push host), runs `body`, and turns
    /// refusals and errors into a printed line and an exit status.
    private static func withClient(
        command: String,
        parsed: ParsedArguments,
        management: Bool,
        _ body: (APNSClient, String) async throws -> Int32
    ) async -> Int32 {
        let logger = Logger(label: "herald.channels", level: .warning)
        guard let context = APNsContext.load(command: command, logger: logger) else { return 2 }
        guard let app = context.app(forTopic: parsed.value("topic")) else {
            printError("\(command): no configured app has bundle id \(parsed.value("topic") ?? "")")
            return 2
        }
        let environment = context.environment(for: app, sandbox: parsed.flag("sandbox"))
        let endpoint = management ? context.endpoints.management(environment) : context.endpoints.push(environment)
        let pool = context.pool(to: endpoint, app: app)
        let client = context.client(transport: pool, app: app)
        let status: Int32
        do {
            status = try await body(client, app.bundleID)
        } catch let rejection as APNSRejection {
            print("status=\(rejection.status) reason=\(rejection.reason)")
            status = 1
        } catch let error as APNSValidationError {
            printError("\(command): \(error)")
            status = 2
        } catch {
            printError("\(command): \(error)")
            status = 1
        }
        await pool.shutdown()
        return status
    }
}

import Foundation
import HTTPRouting
import HeraldAPI
import HeraldCore
import Storage

/// `herald`: the one executable. It parses the command line, reads configuration, and wires the
/// concrete types together; everything else lives in the library modules.
enum Herald {
    static let version = HeraldVersion.string

    static let usage = """
        Herald \(version): a self-hosted push server for Apple platforms.

        Usage: herald <command> [options]

        Commands:
          serve      Run the HTTP API (configuration from the environment; `herald serve --help` lists it).
          config     Check the configuration and print it, secrets redacted (docs/CONFIGURATION.md).
          relay      Run the Mastodon WebPush → APNs relay (APNS_AUTH_KEY, APNS_KEY_ID, APPLE_TEAM_ID, TOPIC).
          send       Send one push to one device and print APNs' answer.
          channels   Create, read, list and delete broadcast channels.
          broadcast  Send a Live Activity update to a broadcast channel.
          jobs       List, inspect, retry and cancel durable jobs; queue depth; the queue benchmark.
          client-token  Print a client token for a user (/v1/client; README: "Client tokens").
          bench      Measure push throughput against an APNs-shaped endpoint.
          simulator  Run the validating APNs simulator (docs/SIMULATOR.md).
          cloudkit   Create a CloudKit wake record, clean up older ones, or check the key (CLOUDKIT_*).

        Options:
          --help     Show this help, or a command's help with `herald <command> --help`.
          --version  Print the version.

        """

    static func main() async -> Int32 {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let command = arguments.first else {
            // No command is a mistake, not a request for help: the usage goes to standard error.
            printError(String(usage.dropLast()))
            return 2
        }
        arguments.removeFirst()
        switch command {
        case "--help", "-h", "help":
            print(usage, terminator: "")
            return 0
        case "--version", "version":
            print("herald \(version) (\(Allocator.description))")
            return 0
        case "serve":
            return await ServeCommand.run(arguments)
        case "config":
            return ConfigCommand.run(arguments)
        case "relay":
            return await ServeCommand.run(arguments, relayRequired: true)
        case "send":
            return await SendCommand.run(arguments)
        case "channels":
            return await ChannelsCommand.run(arguments)
        case "broadcast":
            return await ChannelsCommand.broadcast(arguments)
        case "jobs":
            return await JobsCommand.run(arguments)
        case "client-token":
            return ClientTokenCommand.run(arguments)
        case "bench":
            return await BenchCommand.run(arguments)
        case "simulator":
            return await SimulatorCommand.run(arguments)
        case "cloudkit":
            return await CloudKitCommand.run(arguments)
        default:
            printError("herald: unknown command '\(command)'; see 'herald --help'")
            return 2
        }
    }
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

exit(await Herald.main())

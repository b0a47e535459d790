import APNs
import APNsSimulator
import Foundation
import HeraldCore
import HeraldCrypto

/// `herald simulator`: a validating APNs-compatible server with a JSON control API, until
/// SIGINT/SIGTERM. See docs/SIMULATOR.md.
enum SimulatorCommand {
    /// The simulator's options, plus `--env-file` (the library's spec knows no herald command).
    static var spec: CommandSpec {
        var spec = APNSSimulatorCommandLine.spec
        spec.usage += " [--env-file FILE]"
        spec.options.append(
            .init(
                "env-file",
                value: "FILE",
                help: "Also write the variables herald send, channels and broadcast need to FILE (NAME=value lines)."
            )
        )
        return spec
    }

    static func run(_ arguments: [String]) async -> Int32 {
        let options: APNSSimulatorCommandLine.Options
        let environmentFile: String?
        do throws(UsageError) {
            let parsed = try spec.parse(arguments)
            environmentFile = parsed.value("env-file")
            if parsed.wantsHelp {
                print(spec.help, terminator: "")
                return 0
            }
            options = try APNSSimulatorCommandLine.options(parsed)
        } catch {
            printError("herald simulator: \(error.message)")
            return 2
        }

        let level = Setting.logLevel.processValue.flatMap(LogLevel.init(name:)) ?? .info
        let format = Setting.logFormat.processValue.flatMap(StreamLogHandler.Format.init(rawValue:)) ?? .text
        LoggingSystem.bootstrap(level: level, handler: StreamLogHandler(format: format))
        let logger = Logger(label: "herald.simulator")
        var configuration = options.configuration
        configuration.logger = logger

        let simulator: APNSSimulator
        do {
            simulator = try APNSSimulator(configuration: configuration)
        } catch {
            printError("herald simulator: \(error)")
            return 1
        }
        var writtenKeyFile: String?
        if let key = options.generatedKey {
            let path = FileManager.default.temporaryDirectory
                .appendingPathComponent("herald-apns-simulator-\(simulator.port)-AuthKey_\(key.keyID).p8").path
            do {
                try PrivateFile.write(Array(key.privateKey.pemRepresentation.utf8), to: path)
                writtenKeyFile = path
            } catch {
                printError("herald simulator: cannot write the generated key to \(path): \(error)")
                return 1
            }
        }

        let keyFile = writtenKeyFile
        // The generated key is good for this run only.
        defer { if let keyFile { try? FileManager.default.removeItem(atPath: keyFile) } }
        let group = ServiceGroup(services: [simulator], gracePeriod: .seconds(5), logger: logger)
        do {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                tasks.addTask {
                    let controlURL = try await simulator.controlURL()
                    let exports = exports(simulator, options: options, keyFile: keyFile)
                    if let environmentFile { try exports.write(to: environmentFile) }
                    // Written at once (not buffered like print) so that a pipe or a log sees it now.
                    var text = banner(simulator, options: options, keyFile: keyFile, controlURL: controlURL)
                    text += "\n\n" + exports.shellBlock
                    if let environmentFile { text += "\n# (also written to \(environmentFile))" }
                    FileHandle.standardOutput.write(Data((text + "\n").utf8))
                }
                try await tasks.waitForAll()
            }
        } catch {
            logger.error("herald simulator failed", metadata: ["error": .string(String(describing: error))])
            return 1
        }
        return 0
    }

    /// What `herald send`, `herald channels` and `herald broadcast` need to reach `simulator`.
    static func exports(
        _ simulator: APNSSimulator,
        options: APNSSimulatorCommandLine.Options,
        keyFile: String?
    ) -> SimulatorExports {
        let configuration = simulator.configuration
        let key = configuration.keys.first
        var exports = SimulatorExports(
            url: simulator.url,
            caFile: simulator.caFile,
            keyFile: options.generatedKey == nil ? nil : keyFile,
            keyID: options.generatedKey?.keyID ?? key?.keyID,
            teamID: options.generatedKey?.teamID ?? key?.teamID ?? configuration.teamID,
            topic: configuration.topics.first ?? "com.example.app"
        )
        if let cloudKitKey = configuration.cloudKitKeys.first {
            exports.addCloudKit(
                url: simulator.url,
                caFile: simulator.caFile,
                keyID: cloudKitKey.keyID,
                keyFile: cloudKitKey.privateKeyFile
            )
        }
        return exports
    }

    /// What a newcomer needs: where to send, what to trust, which key signs, how to look.
    static func banner(
        _ simulator: APNSSimulator,
        options: APNSSimulatorCommandLine.Options,
        keyFile: String?,
        controlURL: String?
    ) -> String {
        let configuration = simulator.configuration
        var lines = ["Herald APNs simulator", ""]
        lines.append(
            "  APNs URL      \(simulator.url)   (APNS_SANDBOX_URL, APNS_PRODUCTION_URL, APNS_MANAGEMENT_*_URL)"
        )
        if let cleartext = simulator.cleartextURL {
            lines.append("  h2c URL       \(cleartext)   (prior knowledge, no TLS)")
        }
        if let caFile = simulator.caFile { lines.append("  Trust         \(caFile)   (APNS_CA_FILE; curl --cacert)") }
        if let controlURL { lines.append("  Control API   \(controlURL)/deliveries") }
        let topics = configuration.topics.isEmpty ? "any bundle ID" : configuration.topics.joined(separator: ", ")
        lines.append("  Topics        \(topics)")
        if let environment = configuration.environment { lines.append("  Environment   \(environment)") }
        if let key = options.generatedKey, let keyFile {
            lines.append("  Signing key   \(keyFile)")
            lines.append(
                "                APNS_AUTH_KEY_FILE=\(keyFile) APNS_KEY_ID=\(key.keyID) APPLE_TEAM_ID=\(key.teamID)"
            )
        } else {
            for key in configuration.keys {
                let restriction = key.environment.map { ", \($0) only" } ?? ""
                lines.append(
                    "  Key           \(key.keyID), team \(key.teamID ?? configuration.teamID ?? "any")\(restriction)"
                )
            }
        }
        if let key = options.generatedKey, let token = try? APNSProviderToken(signingKey: key, issuedAt: Date()) {
            let topic = configuration.topics.first ?? "com.example.app"
            let cacert = simulator.caFile.map { " --cacert \($0)" } ?? ""
            lines.append("")
            lines.append("  Try it (the token is valid for an hour):")
            lines.append(
                "  curl --http2\(cacert) -H 'authorization: bearer \(token.value)' -H 'apns-topic: \(topic)' "
                    + "-H 'apns-push-type: alert' -d '{\"aps\":{\"alert\":\"Hello\"}}' "
                    + "\(simulator.url)/3/device/\(String(repeating: "ab", count: 32))"
            )
        }
        lines.append("")
        lines.append("  Docs: docs/SIMULATOR.md. Stop with Ctrl-C.")
        return lines.joined(separator: "\n")
    }
}

import APNs
import APNsSimulator
import Foundation
import HeraldCore
import HeraldCrypto

/// `herald serve --simulator`: an APNs simulator in this process, on a free port, trusting a key
/// generated at start-up, with Herald's APNs client pointed at it. Nothing reaches Apple.
struct DemoSimulator {
    let simulator: APNSSimulator
    let settings: APNsSettings
    let logger: Logger
    /// The generated key's `.p8`, readable by this user only, for `herald send` and the like;
    /// removed by ``removeFiles()``.
    let keyFile: String
    /// The generated CloudKit server-to-server key's PEM (`CLOUDKIT_PRIVATE_KEY_FILE`), readable
    /// by this user only; removed by ``removeFiles()``.
    let cloudKitKeyFile: String
    static let cloudKitKeyID = "SIMULATEDCLOUDKITKEY"
    /// The `/v1` key generated for this session when `HERALD_API_KEYS` is unset.
    var sessionAPIKey: String?

    /// 32 random bytes, hex.
    static func generateAPIKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// - Parameter bounds: its registry bounds (the rest of it is ignored).
    init(topic: String?, bounds: APNSSimulator.Configuration = .init(), logger: Logger) throws {
        let key = try APNSSigningKey(keyID: "SIMULATED1", teamID: "SIMTEAM001", privateKey: P256PrivateKey())
        let bundleID = topic.flatMap { $0.isEmpty ? nil : $0 } ?? "com.example.app"
        var configuration = APNSSimulator.Configuration()
        configuration.port = 0
        configuration.keys = [APNSSimulatorKey(keyID: key.keyID, publicKey: key.privateKey.publicKey)]
        configuration.teamID = key.teamID
        configuration.topics = [bundleID]
        configuration.logger = Logger(label: "herald.simulator")
        configuration.deliveryCapacity = bounds.deliveryCapacity
        configuration.tokenLimit = bounds.tokenLimit
        configuration.faultLimit = bounds.faultLimit
        configuration.totalChannelLimit = bounds.totalChannelLimit
        configuration.virtualDeviceLimit = bounds.virtualDeviceLimit
        configuration.activitiesPerDeviceLimit = bounds.activitiesPerDeviceLimit
        // Virtual devices apply silent live-activity pushes, as the documented app code does.
        configuration.applySilentLiveActivity = true
        let cloudKitKey = P256PrivateKey()
        configuration.cloudKitKeys = [
            APNSSimulatorCloudKitKey(keyID: Self.cloudKitKeyID, publicKey: cloudKitKey.publicKey)
        ]
        simulator = try APNSSimulator(configuration: configuration)
        let endpoints = APNSEndpoints(all: simulator.endpoint, caFile: simulator.caFile)
        let app = APNSAppConfiguration(bundleID: bundleID, credentials: .token(key))
        settings = APNsSettings(apps: [app], endpoints: endpoints)
        self.logger = logger
        keyFile =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-serve-simulator-\(simulator.port)-AuthKey_\(key.keyID).p8").path
        do {
            try PrivateFile.write(Array(key.privateKey.pemRepresentation.utf8), to: keyFile)
        } catch {
            throw SimulatorExportError(path: keyFile, reason: error)
        }
        cloudKitKeyFile =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("herald-serve-simulator-\(simulator.port)-cloudkit.pem").path
        do {
            try PrivateFile.write(Array(cloudKitKey.pemRepresentation.utf8), to: cloudKitKeyFile)
        } catch {
            throw SimulatorExportError(path: cloudKitKeyFile, reason: error)
        }
    }

    /// What `herald send`, `herald channels` and `herald broadcast` need to reach this simulator.
    var exports: SimulatorExports {
        var exports = SimulatorExports(
            url: simulator.url,
            caFile: simulator.caFile,
            keyFile: keyFile,
            keyID: "SIMULATED1",
            teamID: "SIMTEAM001",
            topic: settings.apps[0].bundleID
        )
        exports.addCloudKit(
            url: simulator.url,
            caFile: simulator.caFile,
            keyID: Self.cloudKitKeyID,
            keyFile: cloudKitKeyFile
        )
        if let sessionAPIKey {
            // In the shell that evaluates the block, the next `herald serve` keeps this key.
            exports.values.append((.apiKeys, sessionAPIKey))
        }
        return exports
    }

    /// Removes the key file written at start-up.
    func removeFiles() {
        try? FileManager.default.removeItem(atPath: keyFile)
        try? FileManager.default.removeItem(atPath: cloudKitKeyFile)
    }

    /// Tells a newcomer what runs where: the API key, the variables for the other commands, a first
    /// request. Written to the terminal (standard output), never to the log: it holds secrets.
    /// - Parameter relay: whether `/push/…` is mounted (HERALD_RELAY=1): the log's example uses it then.
    func announce(port: Int, host: String, relay: Bool = false) {
        let base = "http://\(host == "0.0.0.0" ? "localhost" : host):\(port)"
        var text: String
        let key: String
        if let sessionAPIKey {
            key = sessionAPIKey
            text = """
                HERALD_API_KEYS is unset: this session's API key for /v1 and /simulator is
                  \(sessionAPIKey)
                It changes at every start; set HERALD_API_KEYS (the export below does) to keep one.

                """
        } else {
            key = "<a key of HERALD_API_KEYS>"
            text = """
                HERALD_API_KEYS is set: /v1 and /simulator take its keys, and they stay the same across restarts.

                """
        }
        let token = String(repeating: "ab", count: 32)
        text += exports.shellBlock + "\n\n"
        text += """
            Try:
              curl -s -X POST \(base)/v1/notifications -H 'Authorization: Bearer \(key)' \\
                -H 'Content-Type: application/json' \\
                -d '{"tokens":["\(token)"],"payload":{"aps":{"alert":"Hello"}}}'
              curl -s \(base)/simulator/deliveries -H 'Authorization: Bearer \(key)'
              herald send --token \(token) --alert Hello   (after the exports above)

            """
        FileHandle.standardOutput.write(Data(text.utf8))
        logger.notice(
            "APNs simulator mode: nothing is sent to Apple",
            metadata: [
                "simulator": .string(simulator.url),
                "ca_file": .string(simulator.caFile ?? "-"),
                "topic": .string(settings.apps[0].bundleID),
                "deliveries": .string("\(base)/simulator/deliveries (Authorization: Bearer <API key>)"),
                "try": .string(
                    relay
                        ? "curl -X POST -H 'Content-Encoding: aes128gcm' --data-binary x \(base)/push/\(String(repeating: "ab", count: 32))/1"
                        : "curl \(base)/simulator/deliveries -H 'Authorization: Bearer <API key>'"
                ),
            ]
        )
    }
}

public import APNs
import Foundation
public import HeraldCore
import HeraldCrypto

/// The options of `herald simulator`, read into a configuration. In the library so that tests can
/// check the parsing without starting a process.
public enum APNSSimulatorCommandLine {
    public static let spec = CommandSpec(
        name: "herald simulator",
        summary: "Run a validating APNs-compatible server (HTTP/2 over TLS) with a JSON control API.",
        usage: "herald simulator [--host H] [--port 8443] [--control-port 8444] [--cleartext-port P] "
            + "[--tls-cert F --tls-key F] [--cert-out F] [--key KEYID[@ENV]:PEM]... [--team ID] [--topic BUNDLE]... "
            + "[--environment sandbox|production] [--max-deliveries N] [--max-tokens N] [--max-faults N] "
            + "[--max-channels N] [--max-devices N] [--max-activities N] [--apply-silent-live-activity] "
            + "[--cloudkit-key KEYID:PEM]...",
        options: [
            .init("host", value: "H", help: "Address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)."),
            .init("port", value: "PORT", help: "HTTP/2-over-TLS port (default 8443; 0 picks a free one)."),
            .init("control-port", value: "PORT", help: "HTTP/1.1 control API port (default 8444; 0 picks a free one)."),
            .init("cleartext-port", value: "PORT", help: "Also serve cleartext prior-knowledge HTTP/2 (h2c) here."),
            .init(
                "tls-cert",
                value: "F",
                help: "Certificate chain (PEM); default: a self-signed one made at start-up."
            ),
            .init("tls-key", value: "F", help: "The certificate's private key (PEM)."),
            .init("cert-out", value: "F", help: "Where to write the generated certificate for clients to trust."),
            .init(
                "key",
                value: "KEYID[@ENV]:PEM",
                repeatable: true,
                help: "A provider-token key: Key ID, optionally @sandbox or @production for a key restricted to it, "
                    + "':', a PEM file (public key or the .p8). Default: a generated one."
            ),
            .init(
                "team",
                value: "ID",
                help: "The Team ID tokens must carry in iss (default: any, or a generated one)."
            ),
            .init("topic", value: "BUNDLE", repeatable: true, help: "An app's bundle ID to serve (default: any)."),
            .init(
                "cloudkit-key",
                value: "KEYID:PEM",
                repeatable: true,
                help: "Also serve CloudKit's records/modify and records/query, accepting this server-to-server key: "
                    + "Key ID, ':', a PEM file or text (public or private key)."
            ),
            .init(
                "environment",
                value: "ENV",
                help: "The APNs environment played, sandbox or production: keys restricted to the other one get "
                    + "403 BadEnvironmentKeyIdInToken (default: either)."
            ),
            .init(
                "max-concurrent-streams",
                value: "N",
                help: "Streams per connection after its first success (default 1000)."
            ),
            .init(
                "idle-timeout",
                value: "SECONDS",
                help: "Send GOAWAY IdleTimeout to connections without requests or PINGs for this long (default: never)."
            ),
            .init(
                "streams-after-rejection",
                value: "N",
                help: "Lower a connection's stream limit to N after a refused push, until its next success, "
                    + "as APNs has been seen to do (default: keep it)."
            ),
            .init(
                "apply-silent-live-activity",
                help: "Apply a silent push carrying a live-activity object to the activity it names, "
                    + "as the app's code would (docs/SIMULATOR.md, \"Virtual devices\")."
            ),
        ] + boundOptions()
    )

    /// The options bounding the simulator's registries, each named `prefix` + `max-…`
    /// (`herald serve --simulator` uses the prefix `simulator-`).
    public static func boundOptions(prefix: String = "") -> [CommandSpec.Option] {
        [
            .init(
                prefix + "max-deliveries",
                value: "N",
                help: "Deliveries kept for GET /deliveries; the oldest go first (default 10000)."
            ),
            .init(
                prefix + "max-tokens",
                value: "N",
                help: "Device tokens POST /tokens may register; past it, 409 (default 100000)."
            ),
            .init(
                prefix + "max-faults",
                value: "N",
                help: "Faults held at once; past it, POST /faults is 409 (default 1000)."
            ),
            .init(
                prefix + "max-channels",
                value: "N",
                help: "Broadcast channels across every app (each app also has 10000 at most) (default 100000)."
            ),
            .init(
                prefix + "max-devices",
                value: "N",
                help:
                    "Virtual devices holding Live Activities; past it, a push-to-start starts nothing (default 100000)."
            ),
            .init(
                prefix + "max-activities",
                value: "N",
                help: "Live Activities per virtual device; past it, a push-to-start starts nothing (default 100)."
            ),
        ]
    }

    /// Reads ``boundOptions(prefix:)`` into `configuration`.
    ///
    /// - Throws: ``HeraldCore/UsageError`` naming the option and the range it takes.
    public static func applyBounds(
        _ parsed: ParsedArguments,
        prefix: String = "",
        to configuration: inout APNSSimulator.Configuration
    ) throws(UsageError) {
        func bound(_ name: String) throws(UsageError) -> Int? {
            guard let text = parsed.value(prefix + name) else { return nil }
            guard let value = Int(text), (1...10_000_000).contains(value) else {
                throw UsageError("--\(prefix + name) \(text) is not a number from 1 to 10000000")
            }
            return value
        }
        if let value = try bound("max-deliveries") { configuration.deliveryCapacity = value }
        if let value = try bound("max-tokens") { configuration.tokenLimit = value }
        if let value = try bound("max-faults") { configuration.faultLimit = value }
        if let value = try bound("max-channels") { configuration.totalChannelLimit = value }
        if let value = try bound("max-devices") { configuration.virtualDeviceLimit = value }
        if let value = try bound("max-activities") { configuration.activitiesPerDeviceLimit = value }
    }

    /// What the command line asks for.
    public struct Options: Sendable {
        public var configuration: APNSSimulator.Configuration
        /// A key made because no `--key` was given: its private half signs the tokens a client must
        /// send; the command writes it to a `.p8` file and prints its ids.
        public var generatedKey: APNSSigningKey?
    }

    /// Reads parsed arguments. Reads `--key` and `--tls-*` files synchronously (start-up only).
    ///
    /// - Throws: ``HeraldCore/UsageError`` saying what to type instead.
    public static func options(_ parsed: ParsedArguments) throws(UsageError) -> Options {
        if let extra = parsed.positionals.first {
            throw UsageError("unexpected argument '\(extra)'; see 'herald simulator --help'")
        }
        var configuration = APNSSimulator.Configuration()
        configuration.host = parsed.value("host") ?? "127.0.0.1"
        configuration.port = try port(parsed, "port") ?? 8443
        configuration.controlPort = try port(parsed, "control-port") ?? 8444
        configuration.cleartextPort = try port(parsed, "cleartext-port")
        if let text = parsed.value("max-concurrent-streams") {
            guard let value = Int(text), (1...100_000).contains(value) else {
                throw UsageError("--max-concurrent-streams \(text) is not a number from 1 to 100000")
            }
            configuration.maxConcurrentStreams = value
        }
        if let text = parsed.value("idle-timeout") {
            guard let value = Double(text), value > 0, value <= 86_400 else {
                throw UsageError("--idle-timeout \(text) is not a number of seconds from 0 to 86400")
            }
            configuration.idleTimeout = .milliseconds(Int64(value * 1000))
        }
        try applyBounds(parsed, to: &configuration)
        configuration.applySilentLiveActivity = parsed.flag("apply-silent-live-activity")
        if let text = parsed.value("streams-after-rejection") {
            guard let value = Int(text), (1...100_000).contains(value) else {
                throw UsageError("--streams-after-rejection \(text) is not a number from 1 to 100000")
            }
            configuration.streamLimitAfterRejection = value
        }
        switch (parsed.value("tls-cert"), parsed.value("tls-key")) {
        case (nil, nil):
            configuration.tls = .generated(certificateFile: parsed.value("cert-out"))
        case (let certificate?, let key?):
            configuration.tls = .provided(
                certificateChainPEM: try read(certificate, option: "tls-cert"),
                privateKeyPEM: try read(key, option: "tls-key")
            )
        default:
            throw UsageError("--tls-cert and --tls-key go together: give both, or neither for a generated certificate")
        }
        for topic in parsed.all("topic") {
            guard HeaderRules.isWellFormedTopic(topic) else {
                throw UsageError("--topic \(topic) is not a bundle ID: use letters, digits, '.', '-' and '_'")
            }
        }
        configuration.topics = parsed.all("topic")
        configuration.teamID = parsed.value("team")
        if let name = parsed.value("environment") {
            guard let environment = APNSEnvironment(name: name) else {
                throw UsageError("--environment \(name) is not an APNs environment: use sandbox or production")
            }
            configuration.environment = environment
        }
        do {
            configuration.cloudKitKeys = try parsed.all("cloudkit-key").map { try APNSSimulatorCloudKitKey.parse($0) }
        } catch {
            throw UsageError(String(describing: error))
        }
        var generatedKey: APNSSigningKey?
        do {
            configuration.keys = try parsed.all("key").map { try APNSSimulatorKey.parse($0) }
        } catch {
            throw UsageError(String(describing: error))
        }
        if configuration.keys.isEmpty {
            let teamID = configuration.teamID ?? APNSSimulator.randomAppleID()
            let privateKey = P256PrivateKey()
            do {
                generatedKey = try APNSSigningKey(
                    keyID: APNSSimulator.randomAppleID(),
                    teamID: teamID,
                    privateKey: privateKey
                )
            } catch {
                throw UsageError("--team \(teamID) is not a Team ID: use 10 capital letters or digits")
            }
            configuration.teamID = teamID
            configuration.keys = [
                APNSSimulatorKey(keyID: generatedKey!.keyID, teamID: teamID, publicKey: privateKey.publicKey)
            ]
        }
        return Options(configuration: configuration, generatedKey: generatedKey)
    }

    private static func port(_ parsed: ParsedArguments, _ name: String) throws(UsageError) -> Int? {
        guard let text = parsed.value(name) else { return nil }
        guard let port = Int(text), (0...65_535).contains(port) else {
            throw UsageError("--\(name) \(text) is not a port: use 0 to 65535")
        }
        return port
    }

    private static func read(_ path: String, option: String) throws(UsageError) -> String {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw UsageError("--\(option) \(path) cannot be read: give the path of a PEM file")
        }
        return text
    }
}

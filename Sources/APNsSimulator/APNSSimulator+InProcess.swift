public import APNs
import HeraldCrypto

extension APNSSimulator {
    /// A simulator made for one process (`herald serve --simulator`): a free port, a generated
    /// certificate and a generated signing key it trusts.
    public struct InProcess: Sendable {
        /// The simulator; run it (it is a ``HeraldCore/Service``) beside the code that uses it.
        public let simulator: APNSSimulator
        /// The key tokens must be signed with: its private key, Key ID and Team ID.
        public let signingKey: APNSSigningKey

        /// `https://127.0.0.1:PORT`, for the APNs URLs (device pushes, broadcasts, management).
        public var url: String { simulator.url }
        /// The certificate to trust (`APNS_CA_FILE`).
        public var caFile: String { simulator.caFile ?? "" }
        /// The same as ``url``, for an ``APNsTransport/APNSConnectionPool``.
        public var endpoint: APNSEndpoint { simulator.endpoint }
        /// The control API, to mount with ``APNSSimulatorControl/register(on:prefix:)``.
        public var control: APNSSimulatorControl { simulator.control }
    }

    /// Makes (and binds, but does not run) a simulator on a free port of `host` with a generated
    /// certificate, serving `topics`, that accepts tokens signed by a freshly generated key.
    ///
    /// ```swift
    /// let local = try APNSSimulator.inProcess(topics: ["com.example.app"])
    /// let pool = APNSConnectionPool(
    ///     endpoint: local.endpoint,
    ///     tls: APNSTLSConfiguration(caFile: local.caFile, credentials: .token(local.signingKey)),
    ///     logger: logger
    /// )
    /// var router = Router()
    /// local.control.register(on: &router, prefix: "/simulator")
    /// // run local.simulator in the service group
    /// ```
    ///
    /// - Parameter configure: changes to the configuration (ports, limits, clock) before binding.
    /// - Throws: what ``APNSSimulator/init(configuration:)`` throws.
    public static func inProcess(
        topics: [String],
        host: String = "127.0.0.1",
        configure: (inout Configuration) -> Void = { _ in }
    ) throws -> InProcess {
        let privateKey = P256PrivateKey()
        let signingKey = try APNSSigningKey(
            keyID: randomAppleID(),
            teamID: randomAppleID(),
            privateKey: privateKey
        )
        var configuration = Configuration()
        configuration.host = host
        configuration.port = 0
        configuration.topics = topics
        configuration.teamID = signingKey.teamID
        configuration.keys = [
            APNSSimulatorKey(keyID: signingKey.keyID, teamID: signingKey.teamID, publicKey: privateKey.publicKey)
        ]
        configure(&configuration)
        return InProcess(simulator: try APNSSimulator(configuration: configuration), signingKey: signingKey)
    }

    /// Ten random capital letters and digits, the shape of Apple's Key and Team IDs.
    static func randomAppleID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        return String(decoding: SecureRandom.bytes(10).map { alphabet[Int($0) % alphabet.count] }, as: UTF8.self)
    }
}

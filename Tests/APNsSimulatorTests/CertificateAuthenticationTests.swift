import APNs
import APNsSimulator
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import HeraldCrypto
import HeraldIO
import Testing

/// Certificate-based connections (APNS.md §2.2): the client presents a provider certificate in the
/// TLS handshake, and the simulator reads the bundle ID, topics and environments from it.
@Suite struct CertificateAuthenticationTests {
    static let voipTopic = SimulatorFixture.bundleID + ".voip"

    /// A provider certificate shaped like Apple's: the bundle ID as subject UID and in the common
    /// name, an extension per environment (DER NULL), and optionally the topics extension.
    static func providerCertificate(
        bundleID: String? = SimulatorFixture.bundleID,
        environments: [APNSEnvironment] = [.sandbox, .production],
        topics: [String]? = nil
    ) throws -> SelfSignedCertificate {
        var extensions: [(oid: String, value: [UInt8])] = []
        if environments.contains(.sandbox) { extensions.append(("1.2.840.113635.100.6.3.1", [0x05, 0x00])) }
        if environments.contains(.production) { extensions.append(("1.2.840.113635.100.6.3.2", [0x05, 0x00])) }
        if let topics { extensions.append(("1.2.840.113635.100.6.3.6", topicsExtension(topics))) }
        return try SelfSignedCertificate.generate(
            commonName: bundleID.map { "Apple Push Services: \($0)" } ?? "Some Client",
            subjectAlternativeNames: [],
            key: P256PrivateKey(),
            userID: bundleID,
            extensions: extensions
        )
    }

    /// Apple's topics extension: SEQUENCE { UTF8String topic, SEQUENCE { UTF8String kind }, … }
    /// (short DER lengths only, enough for test topics).
    static func topicsExtension(_ topics: [String]) -> [UInt8] {
        func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
            precondition(content.count < 128)
            return [tag, UInt8(content.count)] + content
        }
        var content: [UInt8] = []
        for topic in topics {
            content += element(0x0C, Array(topic.utf8))
            let kind = topic.hasSuffix(".voip") ? "voip" : "app"
            content += element(0x30, element(0x0C, Array(kind.utf8)))
        }
        return element(0x30, content)
    }

    /// A client that authenticates with `certificate` instead of provider tokens.
    static func certificateClient(
        _ certificate: SelfSignedCertificate,
        fixture: SimulatorFixture
    ) -> (client: APNSClient, pool: APNSConnectionPool) {
        let credentials = APNSCredentials.certificate(
            certificatePEM: certificate.certificatePEM,
            keyPEM: certificate.privateKeyPEM
        )
        let pool = APNSConnectionPool(
            endpoint: fixture.simulator.endpoint,
            tls: APNSTLSConfiguration(caFile: fixture.simulator.caFile, credentials: credentials),
            configuration: SimulatorFixture.poolConfiguration(),
            logger: Logger(label: "test.pool", level: .error)
        )
        let client = APNSClient(
            transport: pool,
            credentials: credentials,
            retryPolicy: .never,
            logger: Logger(label: "test.client", level: .error)
        )
        return (client, pool)
    }

    static func push(_ type: APNSPushType = .alert, topic: String = SimulatorFixture.bundleID) -> APNSRequest {
        APNSRequest(
            deviceToken: SimulatorFixture.token,
            pushType: type,
            topic: .explicit(topic),
            payload: Array(#"{"aps":{"alert":"Hello"}}"#.utf8)
        )
    }

    @Test("a single-topic certificate authenticates its app's pushes; no provider token is involved")
    func singleTopicCertificate() async throws {
        try await withSimulator(topics: [SimulatorFixture.bundleID]) { fixture in
            let (client, pool) = Self.certificateClient(try Self.providerCertificate(), fixture: fixture)
            #expect(try await client.send(Self.push()).answer.status == 200)
            let recorded = try #require(fixture.simulator.deliveries().first)
            #expect(recorded.status == 200)
            #expect(recorded.topic == SimulatorFixture.bundleID)
            #expect(recorded.providerToken == nil)
            // The certificate names one topic: VoIP pushes to the app's .voip topic are not allowed.
            #expect(try await client.send(Self.push(.voip, topic: Self.voipTopic)).answer.reason == "TopicDisallowed")
            #expect(try await client.send(Self.push(topic: "com.example.other")).answer.reason == "TopicDisallowed")
            await pool.shutdown()
        }
    }

    @Test("a multi-topic certificate reaches each listed topic")
    func multiTopicCertificate() async throws {
        try await withSimulator(topics: [SimulatorFixture.bundleID]) { fixture in
            let certificate = try Self.providerCertificate(topics: [SimulatorFixture.bundleID, Self.voipTopic])
            let (client, pool) = Self.certificateClient(certificate, fixture: fixture)
            #expect(try await client.send(Self.push()).answer.status == 200)
            #expect(try await client.send(Self.push(.voip, topic: Self.voipTopic)).answer.status == 200)
            #expect(
                fixture.simulator.deliveries().compactMap(\.topic).sorted() == [
                    SimulatorFixture.bundleID, Self.voipTopic,
                ]
            )
            await pool.shutdown()
        }
    }

    @Test("apns-topic may be left out with a single-topic certificate (the bundle ID), not with several")
    func defaultTopic() async throws {
        try await withSimulator(topics: [SimulatorFixture.bundleID]) { fixture in
            for (topics, expected) in [(nil, 200), ([SimulatorFixture.bundleID, Self.voipTopic], 400)]
                as [([String]?, Int)]
            {
                let certificate = try Self.providerCertificate(topics: topics)
                var tls = TLSConfiguration.makeClient()
                tls.additionalTrustRootsFile = fixture.simulator.caFile
                tls.certificateChainPEM = certificate.certificatePEM
                tls.privateKeyPEM = certificate.privateKeyPEM
                let connection = try await HTTP2ClientConnection.connect(
                    host: "127.0.0.1",
                    port: fixture.simulator.port,
                    tls: tls,
                    configuration: SimulatorFixture.connectionConfiguration()
                )
                let response = try await connection.send(fixture.devicePush(jwt: nil, omitting: ["apns-topic"]))
                #expect(response.status == expected, "topics \(topics ?? [])")
                if expected == 400 { #expect(response.reason == "MissingTopic") }
                await connection.close()
            }
            let recorded = fixture.simulator.deliveries().filter { $0.status == 200 }
            #expect(recorded.map(\.topic) == [SimulatorFixture.bundleID])
        }
    }

    @Test("a certificate for the other environment: 403 BadCertificateEnvironment")
    func wrongEnvironment() async throws {
        try await withSimulator(configure: { $0.environment = .production }) { fixture in
            let sandboxOnly = try Self.providerCertificate(environments: [.sandbox])
            let (client, pool) = Self.certificateClient(sandboxOnly, fixture: fixture)
            let answer = try await client.send(Self.push()).answer
            #expect(answer.status == 403)
            #expect(answer.reason == "BadCertificateEnvironment")
            await pool.shutdown()

            let production = try Self.providerCertificate(environments: [.production])
            let (accepted, acceptedPool) = Self.certificateClient(production, fixture: fixture)
            #expect(try await accepted.send(Self.push()).answer.status == 200)
            await acceptedPool.shutdown()
        }
    }

    @Test("a certificate that is not a push certificate: 403 BadCertificate")
    func notAPushCertificate() async throws {
        try await withSimulator { fixture in
            for certificate in [
                try Self.providerCertificate(bundleID: nil),
                try Self.providerCertificate(environments: []),
            ] {
                let (client, pool) = Self.certificateClient(certificate, fixture: fixture)
                let answer = try await client.send(Self.push()).answer
                #expect(answer.status == 403)
                #expect(answer.reason == "BadCertificate")
                await pool.shutdown()
            }
        }
    }

    @Test("the topics extension reads as its UTF8String topics; other DER is not a list")
    func topicsExtensionParsing() {
        let der = Self.topicsExtension(["com.a", "com.a.voip"])
        #expect(TLSPeerCertificate.utf8Strings(inSequence: der) == ["com.a", "com.a.voip"])
        #expect(TLSPeerCertificate.utf8Strings(inSequence: [0x05, 0x00]) == nil)
        #expect(TLSPeerCertificate.utf8Strings(inSequence: [0x30, 0x05, 0x0C]) == nil)
        #expect(TLSPeerCertificate.utf8Strings(inSequence: []) == nil)
    }
}

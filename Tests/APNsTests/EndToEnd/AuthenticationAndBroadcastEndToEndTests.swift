import APNs
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import HeraldCrypto
import Testing

/// Certificate-based authentication and broadcast channels, end to end.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct AuthenticationAndBroadcastEndToEndTests {
    @Test("certificate credentials: the TLS client certificate authenticates; no authorization header is sent")
    func certificateAuthentication() async throws {
        let identity = TestIdentity.shared
        let server = try TestAPNsServer(
            fake: try TestAPNsServer.makeFake(),
            authentication: .certificate(trustedClientCertificatePEM: identity.client.certificatePEM)
        )
        try await running(server) {
            try await certificateAuthentication(server: server, identity: identity)
        }
    }

    private func certificateAuthentication(server: TestAPNsServer, identity: TestIdentity) async throws {
        let credentials = APNSCredentials.certificate(
            certificatePEM: identity.client.certificatePEM,
            keyPEM: identity.client.privateKeyPEM
        )
        let tls = APNSTLSConfiguration(caFile: server.caFile, credentials: credentials)
        #expect(tls.clientCertificatePEM == identity.client.certificatePEM)
        #expect(tls.clientKeyPEM == identity.client.privateKeyPEM)
        #expect(!tls.description.contains("PRIVATE"))
        let logs = LogCapture()
        var configuration = APNSConnectionPool.Configuration()
        configuration.pingInterval = nil
        let pool = APNSConnectionPool(
            endpoint: server.endpoint,
            tls: tls,
            configuration: configuration,
            logger: logs.logger,
            metrics: MetricsRegistry()
        )
        let client = APNSClient(transport: pool, credentials: credentials, logger: logs.logger)
        #expect(client.tokenProvider == nil)
        let results = try await sendAll(client, (0..<20).map { .alert(token: deviceToken($0)) })
        #expect(results.allSatisfy { $0.isDelivered })
        #expect(server.requestCount == 20)
        #expect(server.received.allSatisfy { $0.authorization == nil })
        #expect(server.received.allSatisfy { $0.headers.first?.name == "apns-id" })
        await pool.shutdown()

        // Without the client certificate the handshake is refused: a clear error, nothing sent.
        let tokenPool = APNSConnectionPool(
            endpoint: server.endpoint,
            tls: APNSTLSConfiguration(caFile: server.caFile, credentials: .token(try Fixtures.signingKey())),
            configuration: configuration,
            logger: logs.logger,
            metrics: MetricsRegistry()
        )
        let anonymous = APNSClient(transport: tokenPool, credentials: credentials, retryPolicy: .never)
        do {
            let result = try await anonymous.send(.alert())
            Issue.record("a connection without a client certificate was accepted: \(result)")
        } catch let error as APNSConnectionPoolError {
            #expect(error.code == .unreachable)
            #expect(error.description.hasPrefix("APNs unreachable: cannot connect to 127.0.0.1:\(server.port)"))
            #expect(error.description.lowercased().contains("certificate"), "\(error)")
        }
        #expect(server.requestCount == 20)
        await tokenPool.shutdown()
        logs.expectNoSecrets()
    }

    @Test("TLS settings that cannot be used are a clear error; nothing is sent and no key is shown")
    func unusableTLSSettings() async throws {
        let server = try TestAPNsServer(fake: try TestAPNsServer.makeFake())
        try await running(server) {
            let secret = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
            let cases: [(APNSTLSConfiguration, String)] = [
                (
                    APNSTLSConfiguration(caFile: "/nonexistent/ca.pem", credentials: .token(try Fixtures.signingKey())),
                    "/nonexistent/ca.pem"
                ),
                (
                    APNSTLSConfiguration(
                        caFile: server.caFile,
                        credentials: .certificate(certificatePEM: "not a certificate", keyPEM: secret)
                    ),
                    "certificate"
                ),
            ]
            for (tls, mention) in cases {
                // A manual clock: the backoff after the failed connect must not run out (and make
                // the pool available again) while a busy machine gets to the check below.
                let pool = APNSConnectionPool(
                    endpoint: server.endpoint,
                    tls: tls,
                    logger: LogCapture().logger,
                    metrics: MetricsRegistry(),
                    clock: ManualClock()
                )
                do {
                    _ = try await pool.send(APNSRequest.alert().httpRequest(authorization: nil))
                    Issue.record("a pool with unusable TLS settings sent a request")
                } catch let error as APNSConnectionPoolError {
                    #expect(error.code == .unreachable)
                    #expect(error.description.contains("TLS settings"), "\(error)")
                    #expect(error.description.contains(mention), "\(error)")
                    #expect(!error.description.contains("bm90IGEga2V5"))
                }
                #expect(!pool.isAvailable)
                await pool.shutdown()
            }
            #expect(server.requestCount == 0)
            #expect(server.connectionIDs.isEmpty)
        }
    }

    @Test("broadcast channels: create, read, list, delete on the management host; broadcast on the push host")
    func broadcastChannels() async throws {
        let fake = try TestAPNsServer.makeFake()
        let management = try TestAPNsServer(fake: fake)
        try await running(management) {
            try await broadcastChannels(management: management, push: try TestAPNsServer(fake: fake))
        }
    }

    private func broadcastChannels(management: TestAPNsServer, push: TestAPNsServer) async throws {
        try await withHarness(server: push) { h in
            let managementPool = APNSConnectionPool(
                endpoint: management.endpoint,
                tls: APNSTLSConfiguration(caFile: management.caFile, credentials: .token(try Fixtures.signingKey())),
                logger: h.logs.logger,
                metrics: h.metrics
            )
            let channels = APNSClient(
                transport: managementPool,
                credentials: .token(try Fixtures.signingKey()),
                tokenProvider: h.tokens,
                logger: h.logs.logger
            )
            let jwt = "bearer " + (try await h.tokens.token())
            func fields(_ received: TestAPNsServer.Received) -> [String] {
                received.headers.map { "\($0.name): \($0.value)" }
            }

            let createID = UUID()
            let channel = try await channels.createChannel(
                bundleID: Fixtures.bundleID,
                storagePolicy: .noMessageStored,
                requestID: createID
            )
            let create = try #require(management.received.last)
            #expect(create.method == "POST")
            #expect(create.path == "/1/apps/com.example.app/channels")
            #expect(
                fields(create) == ["authorization: \(jwt)", "apns-request-id: \(createID.uuidString.lowercased())"]
            )
            #expect(create.body == Array(#"{"message-storage-policy":0,"push-type":"LiveActivity"}"#.utf8))

            let configuration = try await channels.channelConfiguration(bundleID: Fixtures.bundleID, channelID: channel)
            #expect(configuration == APNSChannelConfiguration(storagePolicy: .noMessageStored))
            let read = try #require(management.received.last)
            #expect(read.method == "GET")
            #expect(read.path == "/1/apps/com.example.app/channels")
            #expect(fields(read) == ["authorization: \(jwt)", "apns-channel-id: \(channel.rawValue)"])
            #expect(read.body.isEmpty)

            #expect(try await channels.allChannels(bundleID: Fixtures.bundleID) == [channel])
            let list = try #require(management.received.last)
            #expect(list.method == "GET")
            #expect(list.path == "/1/apps/com.example.app/all-channels")
            #expect(fields(list) == ["authorization: \(jwt)"])

            let payload = #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"score":"3-1"}}}"#
            let broadcastID = UUID()
            let broadcast = APNSBroadcastRequest(
                bundleID: Fixtures.bundleID,
                channelID: channel,
                storagePolicy: .noMessageStored,
                payload: Array(payload.utf8),
                expiration: .immediately,
                priority: .immediately,
                requestID: broadcastID
            )
            let result = try await h.client.send(broadcast)
            guard case .delivered(let delivery) = result else {
                Issue.record("expected delivery, got \(result)")
                return
            }
            #expect(delivery.requestID == broadcastID)
            #expect(delivery.uniqueID == "unique-1")
            let sent = try #require(h.server.received.last)
            #expect(sent.method == "POST")
            #expect(sent.path == "/4/broadcasts/apps/com.example.app")
            #expect(
                fields(sent) == [
                    "authorization: \(jwt)", "apns-request-id: \(broadcastID.uuidString.lowercased())",
                    "apns-channel-id: \(channel.rawValue)", "apns-push-type: liveactivity", "apns-expiration: 0",
                    "apns-priority: 10",
                ]
            )
            #expect(sent.body == Array(payload.utf8))
            #expect(h.server.requestCount == 1, "only the broadcast goes to the push host")

            try await channels.deleteChannel(bundleID: Fixtures.bundleID, channelID: channel)
            let delete = try #require(management.received.last)
            #expect(delete.method == "DELETE")
            #expect(delete.path == "/1/apps/com.example.app/channels")
            #expect(fields(delete) == ["authorization: \(jwt)", "apns-channel-id: \(channel.rawValue)"])
            #expect(try await channels.allChannels(bundleID: Fixtures.bundleID) == [])
            await #expect(throws: APNSRejection.self) {
                try await channels.channelConfiguration(bundleID: Fixtures.bundleID, channelID: channel)
            }
            let gone = try await h.client.send(broadcast)
            #expect(gone.rejection?.reason == .channelNotRegistered)
            #expect(management.requestCount == 6)
            await managementPool.shutdown()
        }
    }
}

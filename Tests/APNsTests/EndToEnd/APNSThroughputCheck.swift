import APNs
import APNsTransport
import Foundation
import HTTP2
import HeraldCore
import HeraldIO
import Synchronization
import Testing

/// A throughput check to run by hand, not a timed test: with `HERALD_APNS_BENCH_URL` set (for
/// example `https://127.0.0.1:8443` from `../shared/bench/apns-sink`, trusting `APNS_CA_FILE`) it
/// sends `HERALD_APNS_BENCH_REQUESTS` (default 200,000) alerts through ``APNSClient`` and
/// ``APNSConnectionPool`` over `HERALD_APNS_BENCH_CONNECTIONS` connections (default 1) with
/// `HERALD_APNS_BENCH_IN_FLIGHT` in flight (default 1000), and prints the rate and the RSS, for
/// comparison with `h2load -n 200000 -c 1 -m 1000` against the same sink. Without it, the same
/// code runs a small load against the in-process server and only checks that every send succeeds.
/// `HERALD_APNS_BENCH_LAYER=pool` drives the pool without the client, `connection` one HTTP/2
/// connection without the pool (the same request bytes), to see what each layer costs.
///
///     HERALD_APNS_BENCH_URL=https://127.0.0.1:8443 APNS_CA_FILE=/tmp/apns-sink/cert.pem \
///         swift test -c release --filter APNSThroughputCheck
@Suite(.timeLimit(.minutes(5)))
struct APNSThroughputCheck {
    @Test func throughput() async throws {
        let environment = ProcessInfo.processInfo.environment
        if let target = environment["HERALD_APNS_BENCH_URL"], let endpoint = APNSEndpoint(url: target) {
            let requests = environment["HERALD_APNS_BENCH_REQUESTS"].flatMap(Int.init) ?? 200_000
            let result = try await Self.run(
                endpoint: endpoint,
                caFile: environment["APNS_CA_FILE"],
                requests: requests,
                inFlight: environment["HERALD_APNS_BENCH_IN_FLIGHT"].flatMap(Int.init) ?? 1000,
                connections: environment["HERALD_APNS_BENCH_CONNECTIONS"].flatMap(Int.init) ?? 1
            )
            print(result.report)
            #expect(result.delivered == requests)
        } else {
            let server = try TestAPNsServer(fake: try TestAPNsServer.makeFake())
            try await running(server) {
                let result = try await Self.run(
                    endpoint: server.endpoint,
                    caFile: server.caFile,
                    requests: 3000,
                    inFlight: 300,
                    connections: 1
                )
                #expect(result.delivered == 3000)
                #expect(server.requestCount == 3000)
            }
        }
    }

    /// What the check drives: the client (with the pool), the pool alone, or one HTTP/2
    /// connection (the reference for the pool's own cost).
    enum Mode: Sendable {
        case client, pool
        case connection(HTTP2ClientConnection)
    }

    struct Result {
        var delivered: Int
        var seconds: Double
        var rssMiB: Double
        var peakRSSMiB: Double

        var report: String {
            String(
                format: "herald APNSClient+APNSConnectionPool: %d delivered in %.3f s = %.0f req/s; RSS %.1f MiB "
                    + "(peak %.1f MiB)",
                delivered,
                seconds,
                Double(delivered) / seconds,
                rssMiB,
                peakRSSMiB
            )
        }
    }

    static func run(
        endpoint: APNSEndpoint,
        caFile: String?,
        requests: Int,
        inFlight: Int,
        connections: Int
    ) async throws -> Result {
        let key = try Fixtures.signingKey()
        var configuration = APNSConnectionPool.Configuration()
        configuration.maxConnections = connections
        configuration.minConnections = connections
        let pool = APNSConnectionPool(
            endpoint: endpoint,
            tls: APNSTLSConfiguration(caFile: caFile, credentials: .token(key)),
            configuration: configuration,
            logger: Logger(label: "bench", level: .warning),
            metrics: MetricsRegistry()
        )
        let client = APNSClient(transport: pool, credentials: .token(key))
        try await pool.warmUp()
        let payload = Array(
            #"{"aps":{"alert":{"title":"Herald","body":"Hello from the benchmark"},"sound":"default"}}"#.utf8
        )
        let token = String(repeating: "0123456789abcdef", count: 4)
        let mode: Mode
        switch ProcessInfo.processInfo.environment["HERALD_APNS_BENCH_LAYER"] {
        case "pool": mode = .pool
        case "connection":
            var http2 = HTTP2ClientConnection.Configuration()
            http2.pingInterval = nil
            var tls = TLSConfiguration.makeClient()
            tls.additionalTrustRootsFile = caFile
            mode = .connection(
                try await HTTP2ClientConnection.connect(
                    host: endpoint.host,
                    port: endpoint.port,
                    tls: tls,
                    configuration: http2
                )
            )
        default: mode = .client
        }
        let jwt = try APNSProviderToken(signingKey: key, issuedAt: Date()).value
        let issued = SharedCount()
        let delivered = SharedCount()
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    while issued.increment() <= requests {
                        let request = APNSRequest(
                            deviceToken: token,
                            pushType: .alert,
                            topic: .bundleID(Fixtures.bundleID),
                            payload: payload
                        )
                        switch mode {
                        case .client:
                            if try await client.send(request).isDelivered { _ = delivered.increment() }
                        case .pool:
                            // The pool alone: the request as the client builds it, without
                            // validation, token lookup or reading the result.
                            let response = try await pool.send(request.httpRequest(authorization: jwt))
                            if response.status == 200 { _ = delivered.increment() }
                        case .connection(let connection):
                            // The same bytes on one HTTP/2 connection without the pool.
                            let response = try await connection.send(
                                request.httpRequest(authorization: jwt).http2Request
                            )
                            if response.status == 200 { _ = delivered.increment() }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - start
        await pool.shutdown()
        if case .connection(let connection) = mode { await connection.close() }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let (rss, peak) = memory()
        return Result(delivered: delivered.value, seconds: seconds, rssMiB: rss, peakRSSMiB: peak)
    }

    /// VmRSS and VmHWM of this process in MiB.
    static func memory() -> (Double, Double) {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return (0, 0) }
        func value(_ key: String) -> Double {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return 0 }
            return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
        }
        return (value("VmRSS:"), value("VmHWM:"))
    }
}

/// A counter shared by tasks.
final class SharedCount: Sendable {
    private let count = Atomic(0)

    var value: Int { count.load(ordering: .relaxed) }

    /// Adds one and returns the new value.
    func increment() -> Int {
        count.add(1, ordering: .relaxed).newValue
    }
}

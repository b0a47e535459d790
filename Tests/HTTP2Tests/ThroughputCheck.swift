import Foundation
import HTTP2
import HeraldIO
import Synchronization
import Testing

/// A throughput check to run by hand, not a timed test: with `HERALD_H2_BENCH_URL` set (for
/// example `https://127.0.0.1:8443` from `../shared/bench/apns-sink`, trusting `APNS_CA_FILE`) it
/// sends `HERALD_H2_BENCH_REQUESTS` (default 200,000) APNs-shaped requests over one connection
/// with 1000 in flight and prints the rate and the process's RSS, for comparison with
/// `h2load -n 200000 -c 1 -m 1000`. Without it, the same code path runs a small load against an
/// in-process server and only checks that every request succeeds.
///
///     HERALD_H2_BENCH_URL=https://127.0.0.1:8443 APNS_CA_FILE=/tmp/apns-sink/cert.pem \
///         swift test -c release --filter throughputCheck
@Suite struct ThroughputCheck {
    @Test func throughputCheck() async throws {
        let environment = ProcessInfo.processInfo.environment
        if let target = environment["HERALD_H2_BENCH_URL"], let url = URL(string: target), let host = url.host {
            let context = try TLSContext(
                configuration: {
                    var configuration = TLSConfiguration.makeClient()
                    configuration.additionalTrustRootsFile = environment["APNS_CA_FILE"]
                    return configuration
                }()
            )
            let requests = environment["HERALD_H2_BENCH_REQUESTS"].flatMap(Int.init) ?? 200_000
            let result = try await Self.run(
                host: host,
                port: url.port ?? 443,
                tls: context,
                requests: requests,
                inFlight: 1000
            )
            print(result.report)
            #expect(result.succeeded == requests)
        } else {
            let certificates = TestCertificates.shared
            let handler: HTTP2Server.Handler = { request in
                HTTP2ServerResponse(status: 200, headers: ["apns-id": request.headers["apns-id"] ?? "none"])
            }
            try await withServer(tls: try certificates.serverContext(), handler: handler) { server in
                let result = try await Self.run(
                    host: "127.0.0.1",
                    port: server.port,
                    tls: try certificates.clientContext(),
                    requests: 3000,
                    inFlight: 300
                )
                #expect(result.succeeded == 3000)
            }
        }
    }

    struct Result {
        var succeeded: Int
        var seconds: Double
        var rssMiB: Double
        var peakRSSMiB: Double

        var report: String {
            let rate = Double(succeeded) / seconds
            return String(
                format: "herald HTTP2 client: %d requests in %.3f s = %.0f req/s; RSS %.1f MiB (peak %.1f MiB)",
                succeeded,
                seconds,
                rate,
                rssMiB,
                peakRSSMiB
            )
        }
    }

    static func run(host: String, port: Int, tls: TLSContext, requests: Int, inFlight: Int) async throws -> Result {
        var configuration = HTTP2ClientConnection.Configuration()
        configuration.pingInterval = nil
        // Loopback TLS connects took over 10 s when the whole suite started at once on two loaded
        // cores; what this measures starts after the connect.
        configuration.connectTimeout = .seconds(60)
        let connection = try await HTTP2ClientConnection.connect(
            host: host,
            port: port,
            tls: tls,
            configuration: configuration
        )
        let body = Array(
            #"{"aps":{"alert":{"title":"Herald","body":"Hello from the benchmark"},"sound":"default"}}"#.utf8
        )
        let path = "/3/device/" + String(repeating: "0123456789abcdef", count: 4)
        let headers: HTTP2Headers = ["apns-topic": "com.example.app", "authorization": "bearer x.y.z"]
        let issued = AtomicCount()
        let succeeded = AtomicCount()
        let clock = ContinuousClock()
        let start = clock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    var request = HTTP2Request(path: path, headers: headers, body: body)
                    request.pathNeverIndexed = true
                    while issued.increment() <= requests {
                        let response = try await connection.send(request)
                        if response.status == 200 { _ = succeeded.increment() }
                        request.body = body
                    }
                }
            }
            try await group.waitForAll()
        }
        let elapsed = clock.now - start
        await connection.close()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let (rss, peak) = Self.memory()
        return Result(succeeded: succeeded.value, seconds: seconds, rssMiB: rss, peakRSSMiB: peak)
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

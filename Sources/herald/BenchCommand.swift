import APNs
import APNsTransport
import Foundation
import HeraldCore
import HeraldCrypto
import Synchronization

/// `herald bench`: pushes N alerts as fast as the client allows and reports throughput, latency
/// and memory, for comparison with h2load against the same endpoint (Benchmarks/apns-client.sh).
enum BenchCommand {
    static let spec = CommandSpec(
        name: "herald bench",
        summary: "Send N alert pushes to an APNs-shaped endpoint and report rate, latency and RSS.",
        usage:
            "herald bench --url URL [--count N] [--connections C] [--concurrency M] [--topic BUNDLE] [--executor E]",
        options: [
            .init("url", value: "URL", help: "The endpoint, e.g. https://127.0.0.1:8443 (trust it with APNS_CA_FILE)."),
            .init("count", value: "N", help: "How many pushes to send (default 100000)."),
            .init("connections", value: "C", help: "HTTP/2 connections to open (default 1)."),
            .init("concurrency", value: "M", help: "Requests in flight in total (default 1000)."),
            .init("topic", value: "BUNDLE", help: "apns-topic (default: TOPIC, or com.example.bench)."),
            .init(
                "executor",
                value: "E",
                help: "Where the sending tasks run: pool (Swift's cooperative pool, default) or loop (the I/O thread)."
            ),
        ]
    )

    static func run(_ arguments: [String]) async -> Int32 {
        let parsed: ParsedArguments
        let endpoint: APNSEndpoint
        let count: Int
        let connections: Int
        let concurrency: Int
        let onLoop: Bool
        do throws(UsageError) {
            parsed = try spec.parse(arguments)
            if parsed.wantsHelp {
                print(spec.help, terminator: "")
                return 0
            }
            guard let url = parsed.value("url") else { throw UsageError("--url URL is required") }
            guard let parsedEndpoint = APNSEndpoint(url: url) else {
                throw UsageError("--url \(url) is not valid: use https://HOST[:PORT]")
            }
            endpoint = parsedEndpoint
            count = try parsed.integer("count", default: 100_000, range: 1...100_000_000)
            connections = try parsed.integer("connections", default: 1, range: 1...64)
            concurrency = try parsed.integer("concurrency", default: 1000, range: 1...100_000)
            switch parsed.value("executor") ?? "pool" {
            case "pool": onLoop = false
            case "loop": onLoop = true
            case let other: throw UsageError("--executor \(other) is not valid: use pool or loop")
            }
        } catch {
            printError("herald bench: \(error.message)")
            return 2
        }

        let logger = Logger(label: "herald.bench", level: .warning)
        let environment = ProcessInfo.processInfo.environment
        let endpoints: APNSEndpoints
        do {
            endpoints = try APNSEndpoints.load(environment: environment)
        } catch {
            for problem in error.problems { printError("herald bench: \(problem)") }
            return 2
        }
        let reader = EnvironmentReader(environment)
        let app: APNSAppConfiguration
        if [Setting.apnsAuthKey, .apnsAuthKeyFile, .appsFile].contains(where: { reader.isSet($0) }) {
            do {
                app = try APNSAppConfiguration.load(environment: environment)[0]
            } catch {
                for problem in error.problems { printError("herald bench: \(problem)") }
                return 2
            }
        } else {
            // No Apple credentials: sign with a throwaway key; endpoints like apns-sink accept any.
            do {
                let key = try APNSSigningKey(keyID: "BENCH00001", teamID: "BENCH00001", privateKey: P256PrivateKey())
                app = APNSAppConfiguration(bundleID: "com.example.bench", credentials: .token(key))
            } catch {
                printError("herald bench: \(error)")
                return 1
            }
            printError("herald bench: no APNs credentials configured; signing with a throwaway key")
        }
        let topic = parsed.value("topic") ?? app.bundleID

        var configuration = APNSConnectionPool.Configuration()
        configuration.maxConnections = connections
        configuration.minConnections = connections
        let pool = APNSConnectionPool(
            endpoint: endpoint,
            tls: APNSTLSConfiguration(caFile: endpoints.caFile, credentials: app.credentials),
            configuration: configuration,
            logger: logger
        )
        let client = APNSClient(transport: pool, credentials: app.credentials, logger: logger)
        do {
            try await pool.warmUp()
        } catch {
            printError("herald bench: cannot connect to \(endpoint): \(error)")
            await pool.shutdown()
            return 1
        }
        do {
            // Sign the provider token before the clock starts, as a running server has.
            _ = try await client.tokenProvider?.token()
        } catch {
            printError("herald bench: cannot sign a provider token: \(error)")
            await pool.shutdown()
            return 1
        }

        let payload = Array(#"{"aps":{"alert":{"title":"Herald","body":"Benchmark push"},"sound":"default"}}"#.utf8)
        let deviceToken = String(repeating: "ab", count: 32)
        let next = Ticket()
        // One slot per push, written by the worker that took its ticket: no per-worker arrays to
        // grow and merge, so the bench itself adds little to the RSS it reports.
        let latencies = Latencies(count: count)
        let clock = ContinuousClock()
        let start = clock.now
        let workers = min(concurrency, count)
        let executor = onLoop ? pool.taskExecutor : nil
        let results = await withTaskExecutorPreference(executor) {
            await withTaskGroup(of: Tally.self) { group in
                for _ in 0..<workers {
                    group.addTask {
                        var tally = Tally()
                        while true {
                            let ticket = next.value.add(1, ordering: .relaxed).oldValue
                            guard ticket < count else { break }
                            let request = APNSRequest(
                                deviceToken: deviceToken,
                                pushType: .alert,
                                topic: .explicit(topic),
                                payload: payload
                            )
                            let sent = clock.now
                            let ok = (try? await client.send(request))?.isDelivered ?? false
                            latencies.record(ticket, clock.now - sent)
                            if ok { tally.ok += 1 } else { tally.failed += 1 }
                        }
                        return tally
                    }
                }
                var total = Tally()
                for await tally in group {
                    total.ok += tally.ok
                    total.failed += tally.failed
                }
                return total
            }
        }
        let elapsed = clock.now - start
        await pool.shutdown()

        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return Double(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) * 1000
        }
        let sent = results.ok + results.failed
        print(
            "bench: sent=\(sent) ok=\(results.ok) failed=\(results.failed) seconds=\(format(seconds, 3)) "
                + "rate=\(format(Double(sent) / seconds, 0))/s p50_ms=\(format(percentile(0.5), 2)) "
                + "p99_ms=\(format(percentile(0.99), 2)) rss_mb=\(format(peakResidentMegabytes(), 1))"
        )
        return results.failed == 0 ? 0 : 1
    }

    /// Hands out push numbers to the workers.
    final class Ticket: Sendable {
        let value = Atomic(0)
    }

    struct Tally: Sendable {
        var ok = 0
        var failed = 0
    }

    /// Each push's latency in seconds, by ticket.
    ///
    /// `@unchecked Sendable`: every slot is written by exactly one worker (the one that drew that
    /// ticket from the atomic counter), and read only after the task group has finished, which
    /// orders the writes before the reads.
    final class Latencies: @unchecked Sendable {
        private let slots: UnsafeMutableBufferPointer<Float>

        init(count: Int) {
            slots = .allocate(capacity: count)
            slots.initialize(repeating: 0)
        }

        deinit {
            slots.deallocate()
        }

        func record(_ ticket: Int, _ latency: Duration) {
            let (seconds, attoseconds) = latency.components
            slots[ticket] = Float(Double(seconds) + Double(attoseconds) / 1e18)
        }

        /// The latencies in ascending order (sorted in place; call once, after the workers).
        func sorted() -> UnsafeMutableBufferPointer<Float> {
            var slots = slots
            slots.sort()
            return slots
        }
    }

    /// `value` with `digits` decimals (also used by `herald jobs bench`).
    static func format(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }

    /// The process's peak resident set (VmHWM), in MB.
    static func peakResidentMegabytes() -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kilobytes = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
            return kilobytes / 1024
        }
        return 0
    }
}

import Foundation
import FuzzHarness
import Testing

/// Every saved fuzz input — the corpus `make fuzz` grows and every input that ever crashed a
/// target — runs through its harness again, so a fixed finding stays fixed.
@Suite("Fuzz corpus and regressions replay")
struct FuzzReplayTests {
    /// `Fuzz/` of the repository, found from this file's path.
    static let fuzzDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func inputs(of target: String) throws -> [URL] {
        var files: [URL] = []
        for kind in ["seeds", "corpus", "regressions"] {
            let directory = fuzzDirectory.appendingPathComponent(kind).appendingPathComponent(target)
            guard FileManager.default.fileExists(atPath: directory.path) else { continue }
            files += try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
                .filter { !$0.lastPathComponent.hasPrefix(".") }
        }
        return files.sorted { $0.path < $1.path }
    }

    @Test("each target's saved inputs run without a trap", arguments: FuzzTargets.all.map(\.name))
    func replay(target: String) async throws {
        let run = try #require(FuzzTargets.all.first { $0.name == target }?.run)
        let files = try Self.inputs(of: target)
        #expect(!files.isEmpty, "Fuzz/seeds/\(target) has no seeds")
        for file in files {
            let data = Array(try Data(contentsOf: file))
            if target == "http" {
                // Awaited, not waited for: the harness's `run` blocks its thread until the routes
                // answer, which a test on Swift's cooperative pool must not do.
                let status = await HTTPRequestFuzz.status(data)
                #expect(status != 500, "\(file.lastPathComponent) was answered 500")
            } else {
                run(data)
            }
        }
    }

    /// The seeds carry a valid API key and provider token, so mutations of them reach the parsers
    /// behind authentication: the first seed of each is accepted.
    @Test func seedsPassAuthentication() async throws {
        let corpus = Self.fuzzDirectory.appendingPathComponent("seeds")
        let http = try Data(contentsOf: corpus.appendingPathComponent("http/seed-00"))
        // Stored, to be sent at its send_at.
        let status = await HTTPRequestFuzz.status(Array(http))
        #expect(status == 202)
        let simulator = try Data(contentsOf: corpus.appendingPathComponent("simulator/seed-00"))
        #expect(SimulatorFuzz.status(Array(simulator)) == 200)
        for seed in ["seed-00", "seed-01", "seed-02"] {
            let token = try Data(contentsOf: corpus.appendingPathComponent("client-token/\(seed)"))
            #expect(ClientTokenFuzz.subject(Array(token)) == "u1", "client-token/\(seed)")
        }
    }

    /// The route-table seeds of the features (a device and a push-to-start token registered with a
    /// client token, a Live Activity, a webhook, a wake schedule) pass authentication and their
    /// parsers and are stored, so that mutations start deep in each handler.
    @Test func featureSeedsAreAccepted() async throws {
        let seeds = Self.fuzzDirectory.appendingPathComponent("seeds/http")
        for seed in ["seed-09", "seed-10", "seed-11", "seed-12", "seed-13"] {
            let status = await HTTPRequestFuzz.status(Array(try Data(contentsOf: seeds.appendingPathComponent(seed))))
            #expect((200..<300).contains(status), "http/\(seed) was answered \(status)")
        }
    }

    /// The keys-file and rate-limit seeds are accepted (the last keys-file seed is not), so that
    /// mutations start from values that reach every branch.
    @Test func keysFileAndRateLimitSeedsAreAccepted() throws {
        let seeds = Self.fuzzDirectory.appendingPathComponent("seeds")
        let keys = (0..<3).map { seeds.appendingPathComponent("client-token-keys/seed-0\($0)") }
        let kids = try keys.map { ClientTokenKeysFileFuzz.kids(Array(try Data(contentsOf: $0))) }
        #expect(kids == [["backend-1"], ["backend-a"], ["backend-1", "backend-ab"]])
        let refused = try Data(contentsOf: seeds.appendingPathComponent("client-token-keys/seed-03"))
        #expect(ClientTokenKeysFileFuzz.kids(Array(refused)) == nil)
        let limits = try (0..<7).map {
            RateLimitFuzz.limit(Array(try Data(contentsOf: seeds.appendingPathComponent("rate-limit/seed-0\($0)"))))
        }
        #expect(limits == ["10/s,60", "50/s,300", "5/m,10", "100/h,1", "7/s,7", "off", "1/s,1000000"])
    }
}

import APNs
import APNsSimulator
import Foundation
import HTTP2
import Testing

/// The simulator as a service: graceful shutdown says `Shutdown` in GOAWAY, and the generated
/// certificate is what clients trust.
@Suite struct ShutdownTests {
    @Test func gracefulShutdownSendsGoAwayShutdown() async throws {
        let clock = TestClock()
        let local = try APNSSimulator.inProcess(topics: [SimulatorFixture.bundleID]) { configuration in
            configuration.clock = clock
        }
        let simulator = local.simulator
        let caFile = try #require(simulator.caFile)
        #expect(FileManager.default.fileExists(atPath: caFile))
        #expect(try String(contentsOfFile: caFile, encoding: .utf8) == simulator.certificatePEM)
        #expect(simulator.url == "https://127.0.0.1:\(simulator.port)")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await simulator.run() }
            let fixture = SimulatorFixture(simulator: simulator, key: local.signingKey, clock: clock)
            let connection = try await fixture.connect()
            #expect(try await connection.send(fixture.devicePush(jwt: try fixture.jwt())).status == 200)
            simulator.triggerGracefulShutdown()
            try await group.waitForAll()
            #expect(connection.status.goAway?.reason == "Shutdown")
            #expect(connection.status.isUsable == false)
        }
        // The generated certificate's default file goes with the simulator.
        #expect(!FileManager.default.fileExists(atPath: caFile))
    }

    @Test func aProvidedCertificateFileIsKept() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-sim-\(UUID().uuidString).pem")
            .path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let local = try APNSSimulator.inProcess(topics: []) { $0.tls = .generated(certificateFile: path) }
        #expect(local.caFile == path)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await local.simulator.run() }
            local.simulator.triggerGracefulShutdown()
            try await group.waitForAll()
        }
        #expect(FileManager.default.fileExists(atPath: path))
    }
}

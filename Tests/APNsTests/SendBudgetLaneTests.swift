import Foundation
import Testing

@testable import APNs

/// A client that shares another's connections with a budget of its own (the relay's lane):
/// what it holds never takes room in the other budget, and it is refused at its own limit.
@Suite struct SendBudgetLaneTests {
    @Test func aLaneFullOfHeldPushesLeavesTheSharedBudgetItsRoom() async throws {
        let transport = SendBudgetTests.HandOverTransport()
        var sharedLimits = APNSSendBudget.Configuration()
        sharedLimits.limit = 2
        sharedLimits.waitAbove = 1
        let shared = APNSSendBudget(configuration: sharedLimits)
        var laneLimits = APNSSendBudget.Configuration()
        laneLimits.limit = 2
        laneLimits.waitAbove = 3
        let lane = APNSSendBudget(configuration: laneLimits)
        let client = SendBudgetTests.client(transport, budget: shared)
        let relay = client.sharingConnections(budget: lane)

        // The lane's two pushes are held by the transport: the lane is full, the shared budget empty.
        for _ in 0..<2 { #expect(relay.send(.alert()) { _ in } == nil) }
        #expect(lane.waiting == 2)
        #expect(shared.waiting == 0)
        #expect(relay.send(.alert()) { _ in Issue.record("a refused push was answered") }?.code == .full)
        // The shared budget admits at once and sends over the same transport.
        #expect(shared.hasRoom)
        let awaited = Task { try await client.send(.alert()) }
        while transport.waitingAnswers < 3 { await Task.yield() }
        #expect(shared.waiting == 1, "both lanes reach the one transport, each counted in its own budget")
        transport.answerAll(status: 200)
        #expect(try await awaited.value.isDelivered)
        #expect(lane.waiting == 0)
    }
}

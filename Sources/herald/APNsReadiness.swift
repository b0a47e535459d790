import APNs
import APNsTransport
import Foundation
import HeraldAPI
import Notifications

/// `/readyz`'s APNs check: fails while a pool opened so far has no usable connection and its
/// connects have failed since one last answered (between retries as well as during backoff).
struct APNsReadiness: ReadinessCheck {
    let name = "apns"
    let clients: APNSClientProvider

    func check() async throws {
        let down = clients.pools.map { ($0, $0.status) }.filter { _, status in
            status.usableConnections == 0 && status.consecutiveConnectFailures > 0
        }
        guard down.isEmpty else {
            throw APNsDown(endpoints: down.map { "\($0.0.endpoint)" }, reason: down.first?.1.lastConnectError)
        }
    }

    struct APNsDown: Error, CustomStringConvertible {
        var endpoints: [String]
        var reason: String?
        var description: String {
            "cannot connect to \(endpoints.joined(separator: ", "))" + (reason.map { ": \($0)" } ?? "")
        }
    }
}

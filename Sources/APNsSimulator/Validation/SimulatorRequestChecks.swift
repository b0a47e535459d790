package import APNs
package import Foundation
import HTTP2

/// Every check the simulator makes on one request — route, headers, provider token, payload —
/// without a connection or a store. Package access: the fuzz harness's way in, not library API.
package struct SimulatorRequestChecks: Sendable {
    private let devices: DevicePushValidator
    private let broadcasts: BroadcastValidator
    private let channels: ChannelRequestValidator
    private let verifier: ProviderTokenVerifier

    package init(topics: [String], keys: [APNSSimulatorKey], teamID: String?, environment: APNSEnvironment?) {
        let apps = SimulatorApps(bundleIDs: topics)
        devices = DevicePushValidator(apps: apps, malformedPayloadReason: .payloadEmpty)
        broadcasts = BroadcastValidator(apps: apps)
        channels = ChannelRequestValidator(apps: apps)
        verifier = ProviderTokenVerifier(keys: keys, teamID: teamID, environment: environment)
    }

    /// The status the simulator would answer before storing anything: 200 when every check
    /// passed, otherwise the rejection's status.
    package func status(
        method: String,
        path: String,
        headers: [(name: String, value: String)],
        body: [UInt8],
        now: Date
    ) -> Int {
        let request = SimulatorRequest(
            method: method,
            path: path,
            headers: HTTP2Headers(headers.map { HTTP2Header(name: $0.name, value: $0.value) }),
            body: body
        )
        var authentication = ConnectionAuthentication()
        let authenticate = { (request: SimulatorRequest) -> SimulatorRejection? in
            authentication.authenticate(
                authorization: request.header("authorization"),
                now: now,
                rules: ProviderTokenRules(),
                verify: verifier.verify
            ).rejection
        }
        switch SimulatorRoute(path: path) {
        case .device:
            return Self.status(devices.validate(request, authenticate: authenticate))
        case .broadcast:
            return Self.status(broadcasts.validate(request, authenticate: authenticate))
        case .channels, .allChannels:
            return Self.status(channels.validate(request, authenticate: authenticate))
        default:
            return SimulatorRejection.badPath.status
        }
    }

    private static func status<Checked>(_ result: Result<Checked, SimulatorRejection>) -> Int {
        switch result {
        case .success: 200
        case .failure(let rejection): rejection.status
        }
    }
}

import ClientTokens
import DatabaseTestSupport
import Devices
import Foundation
import HTTPRouting
import HeraldAPI
import HeraldCore
import HeraldFeature
import Testing

/// `/v1/client` in process: without client-token keys every route answers 401 saying so, and a
/// refused token never reaches a route.
@Suite struct ClientDeviceRoutesTests {
    static let device = String(repeating: "ab", count: 32)

    @Test func withoutKeysEveryClientRouteAnswers401SayingClientTokensAreNotConfigured() async throws {
        let test = try await TestDatabase.make(.sqliteMemory)
        let database = try await test.open()
        var router = Router()
        let authenticator = ClientTokenAuthenticator(ClientTokenConfiguration(), metrics: MetricsRegistry())
        try router.register(
            ClientDeviceRoutes(
                service: DeviceService(store: DeviceStore(database: database, metrics: MetricsRegistry()), apps: [])
            ).routes,
            machinery: RequestMachinery(authenticators: [.clientToken: authenticator])
        )
        for (method, path) in [
            ("GET", "/v1/client/devices"), ("PUT", "/v1/client/devices/\(Self.device)"),
            ("DELETE", "/v1/client/devices/\(Self.device)"),
        ] {
            let request = HTTPRequest(method: method, path: path, headers: ["Authorization": "Bearer a.b.c"])
            // Refused on the headers, before a body is read.
            guard case .answer(let response) = router.admit(request) else {
                Issue.record("\(method) \(path) was admitted")
                continue
            }
            #expect(response.status == 401, "\(method) \(path)")
            #expect(response.errorCode == "client_tokens_unset")
            #expect(String(decoding: response.body, as: UTF8.self).contains("client tokens are not configured"))
            #expect(try await router.respond(to: request).status == 401)
        }
    }
}

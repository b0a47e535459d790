import HTTPRouting
import HTTPServer
import HeraldCore
import Testing

@Suite("Default middleware")
struct DefaultMiddlewareTests {
    @Test("a throwing handler's route still reaches metrics through the chain")
    func routeOfThrowingHandler() async throws {
        var router = Router()
        router.get("/boom/{id}") { _ in throw HTTPError(status: 418, code: "teapot", message: "No.") }
        let metrics = MetricsRegistry()
        let logger = Logger(label: "test", level: .critical)
        let chain = MiddlewareChain(
            middleware: HTTPServer.defaultMiddleware(logger: logger, metrics: metrics),
            responder: router
        )
        let response = try await chain.respond(to: HTTPRequest(path: "/boom/1"))
        #expect(response.status == 418)
        #expect(
            metrics.value(
                "herald_http_requests_total",
                labels: [("method", "GET"), ("route", "/boom/{id}"), ("status", "418")]
            ) == 1
        )
    }
}

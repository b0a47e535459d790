import APNs
import Devices
import HTTPRouting
import Testing

@Suite("a listing's environment filter")
struct EnvironmentFilterTests {
    @Test("nil when absent, production or sandbox, else a 400 naming the choices")
    func environmentFilter() throws {
        func environment(_ query: String) throws(HTTPError) -> APNSEnvironment? {
            try HTTPRequest(method: "GET", path: "/v1/devices\(query)").environmentFilter()
        }
        #expect(try environment("") == nil)
        #expect(try environment("?environment=production") == .production)
        #expect(try environment("?environment=sandbox") == .sandbox)
        for bad in ["?environment=", "?environment=Production", "?environment=development"] {
            do {
                _ = try environment(bad)
                Issue.record("accepted \(bad)")
            } catch {
                #expect(error.status == 400)
                #expect(error.code == "invalid_environment")
                #expect(error.field == "environment")
                #expect(error.message == "environment must be production or sandbox")
            }
        }
    }
}

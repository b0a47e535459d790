import Devices
import HTTPRouting
import HeraldFeature
import Notifications
import Webhooks

extension APIKeys {
    /// Checks the key and the request's form (query parameters in `known`, a JSON body), then runs
    /// `body`; a `Failure` it throws becomes that error's response.
    func authorized<Failure: DomainErrorResponse>(
        _ request: HTTPRequest,
        _ route: String,
        query known: [String],
        answering _: Failure.Type,
        _ body: (HTTPRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        try authorize(request)
        try request.rejectUnknownQueryParameters(known, route: route)
        try request.requireJSONContentType()
        do {
            return try await body(request)
        } catch let error as Failure {
            return error.response
        }
    }
}

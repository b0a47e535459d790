import HeraldCore

/// How middleware outside the router labels an answer by route: from the response the router
/// labelled, or from the failure it labelled when the handler threw (``HTTPFailure/route``),
/// never from the raw path.
enum RouteLabel {
    /// The label to use for `result`: its route, or `unmatched`.
    static func label(for result: HTTPResult) -> String {
        switch result {
        case .success(let response): response.route ?? "unmatched"
        case .failure(let failure): failure.route ?? "unmatched"
        }
    }

    /// The path the access log shows for `request`: as the answer or its route says.
    /// Whatever the route (an unmatched one too), device tokens, generated API keys and JWTs in
    /// it are shortened (``LogRedaction/path(_:)``).
    static func loggedPath(of request: HTTPRequest, answeredWith result: HTTPResult) -> String {
        let rule: LoggedPathRule?
        switch result {
        case .success(let response):
            if let loggedPath = response.loggedPath { return LogRedaction.path(loggedPath) }
            rule = response.loggedPathRule
        case .failure(let failure):
            rule = failure.loggedPathRule
        }
        guard let rule else { return LogRedaction.path(request.path) }
        return LogRedaction.path(rule.transform(request))
    }

    /// ``loggedPath(of:answeredWith:)`` for a response.
    static func loggedPath(of request: HTTPRequest, answeredWith response: HTTPResponse) -> String {
        loggedPath(of: request, answeredWith: .success(response))
    }
}

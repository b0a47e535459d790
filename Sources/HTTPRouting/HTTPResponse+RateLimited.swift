extension HTTPResponse {
    /// 429 `rate_limited` with `Retry-After` in whole seconds (at least 1), in the error format.
    ///
    /// - Parameters:
    ///   - retryAfter: seconds until a request of the same client is taken again.
    ///   - message: whose limit it is, and what to do.
    public static func rateLimited(retryAfter: Int, message: String) -> HTTPResponse {
        var response = HTTPResponse.error(status: 429, code: "rate_limited", message: message)
        response.headers.replaceOrAdd(name: "Retry-After", value: String(max(1, retryAfter)))
        return response
    }
}

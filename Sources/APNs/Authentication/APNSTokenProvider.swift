/// Supplies the provider token for each request. ``APNSTokenManager`` is the implementation;
/// the protocol lets the client take one without knowing its clock type.
public protocol APNSTokenProvider: Sendable {
    /// The current provider token (JWT), made or refreshed as needed.
    func token() async throws -> String
    /// Reports that APNs answered `ExpiredProviderToken` for `token`.
    func invalidate(ifCurrent token: String) async
    /// The current token when it can be had without waiting (valid, not due for refresh), else
    /// `nil`; a fast path in front of ``token()``.
    func cachedToken() -> String?
}

extension APNSTokenProvider {
    public func cachedToken() -> String? { nil }
}

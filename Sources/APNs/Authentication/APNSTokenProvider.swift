/// Supplies the provider token for each request. ``APNSTokenManager`` is the implementation;
/// the protocol lets the client take one without knowing its clock type.
public protocol APNSTokenProvider: Sendable {
    /// The current provider token (JWT), made or refreshed as needed.
    func token() async throws -> String
    /// Reports that APNs answered `ExpiredProviderToken` for `token`.
    func invalidate(ifCurrent token: String) async
}

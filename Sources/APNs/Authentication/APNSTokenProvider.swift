/// Supplies the provider token for each request. ``APNSTokenManager`` is the implementation;
/// the protocol keeps the client apart from how tokens are made and refreshed. Providers are shared
/// objects (one per signing key), so the client holds a reference rather than an existential
/// value it would copy on every send.
public protocol APNSTokenProvider: AnyObject, Sendable {
    /// The current provider token (JWT), made or refreshed as needed.
    func token() async throws -> String
    /// Reports that APNs answered `ExpiredProviderToken` for `token`.
    func invalidate(ifCurrent token: String) async
    /// The current token when it can be had without waiting (valid, not due for refresh), else
    /// `nil`; a fast path in front of ``token()``.
    func cachedToken() -> String?
    /// ``cachedToken()`` with its `authorization` header value (`bearer <token>`), which a
    /// provider can keep so that sends do not build the string each time.
    func cachedAuthorization() -> APNSAuthorization?
}

extension APNSTokenProvider {
    public func cachedToken() -> String? { nil }

    public func cachedAuthorization() -> APNSAuthorization? {
        cachedToken().map(APNSAuthorization.init(token:))
    }
}

/// A provider token and the `authorization` header value that carries it. ``description`` hides
/// both.
public struct APNSAuthorization: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The JWT.
    public var token: String {
        get { strings.token }
        set { strings = Strings(token: newValue, headerValue: strings.headerValue) }
    }
    /// `bearer <token>`.
    public var headerValue: String {
        get { strings.headerValue }
        set { strings = Strings(token: strings.token, headerValue: newValue) }
    }

    /// Both strings in one box: every push copies its authorization, and every push shares it,
    /// so each copy is one retain instead of two on a shared object.
    private var strings: Strings

    private final class Strings: Sendable {
        let token: String
        let headerValue: String

        init(token: String, headerValue: String) {
            self.token = token
            self.headerValue = headerValue
        }
    }

    public init(token: String) {
        strings = Strings(token: token, headerValue: "bearer " + token)
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.strings === rhs.strings || (lhs.token == rhs.token && lhs.headerValue == rhs.headerValue)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(token)
        hasher.combine(headerValue)
    }

    public var description: String { "APNSAuthorization(<redacted>)" }

    public var customMirror: Mirror { Mirror(self, children: ["token": "<redacted>"]) }
}

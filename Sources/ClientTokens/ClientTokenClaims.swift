public import Foundation

/// What a verified client token says: who the user is, until when, and which app it is limited to.
public struct ClientTokenClaims: Sendable, Hashable {
    /// `sub`: the user id the app's backend vouches for.
    public var subject: String
    /// `app`: the bundle id the token is limited to, if any.
    public var app: String?
    /// `aud`, as one or several audiences (a string is one).
    public var audiences: [String]
    /// `iat`.
    public var issuedAt: Date
    /// `exp`.
    public var expiresAt: Date
    /// `nbf`, if present.
    public var notBefore: Date?

    public init(
        subject: String,
        app: String? = nil,
        audiences: [String] = ["herald"],
        issuedAt: Date,
        expiresAt: Date,
        notBefore: Date? = nil
    ) {
        self.subject = subject
        self.app = app
        self.audiences = audiences
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.notBefore = notBefore
    }

    /// Refuses a request for `app` when the token is limited to another one.
    public func permits(app requested: String) throws(ClientTokenError) {
        guard let app, app != requested else { return }
        throw ClientTokenError(
            .wrongApp,
            "this client token is limited to the app \(app) (its app claim), not \(requested): register the device "
                + "under \(app), or mint a token for \(requested)"
        )
    }
}

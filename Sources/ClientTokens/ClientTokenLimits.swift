/// The bounds every client token is held to, so that no input can make verification costly.
public enum ClientTokenLimits {
    /// The longest token accepted, in bytes (a typical one is 250–400).
    public static let maximumTokenBytes = 4_096
    /// The longest `sub` (user id), in UTF-8 bytes: the longest `user_id` a device takes.
    public static let maximumSubjectBytes = 255
    /// The longest `app` (bundle id), in bytes.
    public static let maximumAppBytes = 255
    /// The most entries an `aud` array may hold.
    public static let maximumAudiences = 16
    /// The longest `kid`, in bytes.
    public static let maximumKeyIDBytes = 128
    /// The latest `exp` may lie after `iat`: 30 days.
    public static let maximumLifetime: Double = 30 * 86_400
    /// How far the server's clock and the minting backend's may disagree for `exp`, `nbf` and `iat`.
    public static let clockSkew: Double = 60
    /// The shortest HS256 secret accepted (HERALD_CLIENT_TOKEN_SECRET), in bytes: RFC 7518 §3.2
    /// asks for a key at least as long as the hash.
    public static let minimumSecretBytes = 32
}

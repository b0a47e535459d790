public import APNs
public import Audiences
import Devices

/// Reads the devices an audience stands for from the device registry, a page at a time, so that
/// a send to millions of devices never holds more than a page.
public protocol AudienceResolver: Sendable {
    /// The tokens of the active devices of `app` and `environment` that `audience` selects
    /// (`users`, `tags` or `all`; never `tokens`), at most `limit`, after `cursor`, with the
    /// cursor of the next page: `nil` when this was the last. A cursor is opaque text to store
    /// and pass back; no token is returned twice across pages.
    func activeTokens(
        of audience: Audience,
        app: String,
        environment: APNSEnvironment,
        after cursor: String?,
        limit: Int
    ) async throws -> (tokens: [String], next: String?)
}

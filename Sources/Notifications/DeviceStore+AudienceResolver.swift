public import APNs
public import Audiences
public import Devices

/// The device registry resolves audiences for the sender: its keyset reads of active devices,
/// with its opaque cursor stored as text between pages (and across restarts).
extension DeviceStore: AudienceResolver {
    public func activeTokens(
        of audience: Audience,
        app: String,
        environment: APNSEnvironment,
        after cursor: String?,
        limit: Int
    ) async throws -> (tokens: [String], next: String?) {
        guard let selector = audience.selector else { return ([], nil) }
        var after: AudienceCursor?
        if let cursor {
            // Starting over would send the pages already sent again: refuse instead.
            guard let parsed = AudienceCursor(text: cursor) else { throw UnreadableCursor() }
            after = parsed
        }
        let page = try await activeTokens(
            app: app,
            environment: environment,
            selector: selector,
            after: after,
            limit: limit
        )
        return (page.tokens, page.next?.text)
    }
}

/// A stored audience cursor the registry did not make.
struct UnreadableCursor: Error, CustomStringConvertible {
    var description: String { "the notification's stored audience cursor is not one the device registry made" }
}

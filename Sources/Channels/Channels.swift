import APNsTransport
public import HeraldFeature

/// Broadcast channels (iOS 18 Live Activities) under `/v1/channels`, behind an API key: each call
/// goes to APNs at once (nothing is stored) and answers what APNs answered.
///
/// - `POST /v1/channels` `{"app"?, "environment"?, "storage_policy"}` → 201 `{"id", "app",
///   "environment", "storage_policy"}` with `Location`; accepts `Idempotency-Key`.
/// - `GET /v1/channels?app=&environment=` → `{"app", "environment", "channels": [{"id"}]}`, APNs' list.
/// - `GET /v1/channels/{id}?app=&environment=` → the channel's `storage_policy` as APNs keeps it.
/// - `DELETE /v1/channels/{id}?app=&environment=` → 204.
/// - `POST /v1/channels/{id}/broadcast` `{"app"?, "environment"?, "event", "content_state",
///   "alert"?, "stale_date"?, "dismissal_date"?, "relevance_score"?, "timestamp"?, "priority"?,
///   "expiration"?}` → 200 `{"apns_request_id", "apns_unique_id", "timestamp"}`.
///
/// A channel id is APNs' base64 text: in a path, percent-encode it (`+` `/` `=`), or write it in
/// base64url (`-` for `+`, `_` for `/`, padding dropped), which is read back as base64. Refusals
/// are ``ChannelError``s (``ChannelError/apns(_:)`` says how APNs' answers map).
///
/// The feature has no settings, no migrations, no jobs and no webhook events: it needs only the
/// APNs clients `herald serve` provides (``HeraldFeature/FeatureContext/service(_:)``).
public enum Channels {
    /// What `herald serve` composes: the five routes, each behind an API key.
    public static let feature = HeraldFeature(
        name: "Channels",
        retention: ["Nothing: APNs keeps the channels; a broadcast's timestamp is remembered in memory per channel."]
    ) { context in
        ChannelRoutes(clients: try context.service(APNSClientProvider.self), clock: context.clock).routes
    }
}

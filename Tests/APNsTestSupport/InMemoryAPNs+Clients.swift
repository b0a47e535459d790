public import APNs
public import APNsTransport
import HeraldCore

extension InMemoryAPNs {
    /// The clients `herald serve` makes for one app signing with `key`, sending here instead of to
    /// APNs, their retry waits and provider tokens on this APNs' clock.
    public func clients(
        bundleID: String,
        key: APNSSigningKey,
        retryPolicy: APNSRetryPolicy = .default
    ) -> APNSClientProvider {
        APNSClientProvider(
            apps: [APNSAppConfiguration(bundleID: bundleID, credentials: .token(key))],
            endpoints: APNSEndpoints(),
            transports: self,
            clock: clock,
            retryPolicy: retryPolicy,
            logger: Logger(label: "test.apns", level: .error)
        )
    }
}

/// An error a transport throws that says whether the request may be sent again without risk of a
/// duplicate notification. ``APNSRetryPolicy`` retries only errors for which `isSafeToRetry` is
/// `true`.
public protocol APNSRetryableError: Error {
    var isSafeToRetry: Bool { get }
}

import CloudKit

/// Target `cloudkit-response`: how the CloudKit client reads CloudKit's answers (JSON from the
/// network: records, per-record errors, error bodies with `retryAfter`).
///
/// Input: the first byte picks the status (200, 401, 429, 503 or 400), the rest is the body.
public enum CloudKitResponseFuzz {
    static let statuses = [200, 401, 429, 503, 400]

    public static func run(_ data: [UInt8]) {
        let status = statuses[Int(data.first ?? 0) % statuses.count]
        switch CloudKitClient.readAnswer(Array(data.dropFirst()), status: status) {
        case .success(let page):
            _ = page.records.map { ($0.recordName, $0.fields.count) }
        case .failure(let error):
            _ = (error.description, error.isRetryable, error.retryAfter)
        }
    }
}

/// The fuzz targets by name, as `scripts/fuzz.sh`, the fuzz executables and the corpus replay
/// test know them. Each harness runs one input and returns; a trap or sanitizer report is the
/// finding.
public enum FuzzTargets {
    public static let all: [(name: String, run: @Sendable ([UInt8]) -> Void)] = [
        ("http", HTTPRequestFuzz.run),
        ("relay-headers", RelayHeadersFuzz.run),
        ("simulator", SimulatorFuzz.run),
        ("payload", PayloadFuzz.run),
        ("client-token", ClientTokenFuzz.run),
        ("cloudkit-response", CloudKitResponseFuzz.run),
        ("client-token-keys", ClientTokenKeysFileFuzz.run),
        ("rate-limit", RateLimitFuzz.run),
        ("client-tags", ClientTagsFuzz.run),
        ("webhook-url", WebhookURLFuzz.run),
    ]
}

extension FuzzTargets {
    /// Runs the target called `name` on `data`; an unknown name is a programming error.
    public static func run(_ name: String, _ data: [UInt8]) {
        guard let target = all.first(where: { $0.name == name }) else { fatalError("no fuzz target \(name)") }
        target.run(data)
    }
}

// swift-tools-version:6.2
import PackageDescription

/// The libFuzzer executables, one per harness in the root package's FuzzHarness library. Built
/// by `scripts/fuzz.sh` (`make fuzz`) with `-sanitize=fuzzer,address`; kept out of the root
/// package so that its `swift build` and `swift test` are unaffected.
let targets = [
    "http", "relay-headers", "simulator", "payload", "client-token", "cloudkit-response",
    "client-token-keys", "rate-limit", "client-tags", "webhook-url",
]

let package = Package(
    name: "HeraldFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Herald", path: "..")],
    targets: [.target(name: "CLibFuzzer")]
        + targets.map { name in
            .executableTarget(
                name: "fuzz-\(name)",
                dependencies: ["CLibFuzzer", .product(name: "FuzzHarness", package: "Herald")],
                path: "Sources/fuzz-\(name)",
                // libFuzzer supplies `main`; the Swift file only defines LLVMFuzzerTestOneInput.
                swiftSettings: [.unsafeFlags(["-parse-as-library"])]
            )
        }
)

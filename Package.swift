// swift-tools-version:6.2
import PackageDescription

/// Settings every Swift target shares: Swift 6 mode is the tools-version default; these add the
/// upcoming features STYLE.md asks for and make every warning an error.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
    .treatAllWarnings(as: .error),
    // Release builds optimize across modules: generic code of the lower modules (HeraldCore, HTTP2,
    // HTTPServer) is specialized and inlined where the relay and the API call it, instead of being
    // called through its unspecialized entry points (docs/PERFORMANCE.md).
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

let package = Package(
    name: "Herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HTTPRouting", targets: ["HTTPRouting"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "Storage", targets: ["Storage"]),
        .library(name: "APNs", targets: ["APNs"]),
        .library(name: "APNsTransport", targets: ["APNsTransport"]),
        .library(name: "APNsSimulator", targets: ["APNsSimulator"]),
        // For the libFuzzer executables of the package under Fuzz/ (`make fuzz`).
        .library(name: "FuzzHarness", targets: ["FuzzHarness"]),
    ],
    targets: [
        // MARK: C libraries from Debian
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CNGHTTP2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        .systemLibrary(
            name: "CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // Outgoing webhook deliveries: HTTP/1.1 and HTTP/2 clients (docs/ARCHITECTURE.md says why).
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // The `herald` executable's memory allocator (README: "Memory allocator").
        .systemLibrary(
            name: "CJemalloc",
            pkgConfig: "jemalloc",
            providers: [.apt(["libjemalloc-dev"])]
        ),

        // What Glibc does not expose to Swift (epoll, eventfd, signalfd) and C macros.
        .target(name: "CHeraldShims", dependencies: ["COpenSSL", "CCurl"]),

        // MARK: Swift modules, lowest first
        // Child processes started with posix_spawn (`herald jobs bench` workers, and the tests'
        // herald, curl, h2load and openssl): Foundation's Process crashes now and then on this
        // toolchain (ChildProcess.swift says why).
        .target(name: "ProcessSpawn", dependencies: ["CHeraldShims"], swiftSettings: swiftSettings),
        // The jemalloc binding, linked only into the `herald` executable (its malloc and free).
        .target(name: "HeraldAllocator", dependencies: ["CJemalloc"], swiftSettings: swiftSettings),
        .target(name: "HeraldCore", dependencies: ["CHeraldShims"], swiftSettings: swiftSettings),
        .target(name: "HeraldCrypto", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        .target(
            name: "HeraldIO",
            dependencies: ["HeraldCore", "CHeraldShims", "COpenSSL"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HTTP2",
            dependencies: ["HeraldCore", "HeraldIO", "CNGHTTP2"],
            swiftSettings: swiftSettings
        ),
        // APNs' models, validation, provider tokens and the client, written against APNSTransport.
        .target(
            name: "APNs",
            dependencies: ["HeraldCore", "HeraldCrypto"],
            swiftSettings: swiftSettings
        ),
        // The client's transport: the HTTP/2 connection pool, its TLS, and the clients it builds.
        .target(
            name: "APNsTransport",
            dependencies: ["APNs", "HeraldCore", "HeraldIO", "HTTP2"],
            swiftSettings: swiftSettings
        ),
        // CloudKit Web Services with a server-to-server key: signing, records, typed errors.
        .target(
            name: "CloudKit",
            dependencies: ["HeraldCore", "HeraldCrypto", "HeraldIO", "HTTP2"],
            swiftSettings: swiftSettings
        ),
        // Requests, responses, the router and middleware: what routes are written against.
        .target(name: "HTTPRouting", dependencies: ["HeraldCore"], swiftSettings: swiftSettings),
        // The HTTP/1.1 server on libmicrohttpd, serving an HTTPRouting responder.
        .target(
            name: "HTTPServer",
            dependencies: ["HeraldCore", "HTTPRouting", "CMicroHTTPD"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Storage",
            dependencies: ["HeraldCore", "CSQLite", "CLibPQ"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Jobs",
            dependencies: ["HeraldCore", "Storage"],
            swiftSettings: swiftSettings
        ),
        // Who a push goes to: tokens, users, tags or everyone, and the one grammar that reads it.
        .target(name: "Audiences", dependencies: ["HeraldCore", "APNs"], swiftSettings: swiftSettings),
        // The device registry: devices, tags, the dead-token rule, audience reads.
        .target(
            name: "Devices",
            dependencies: [
                "HeraldCore", "Storage", "Jobs", "APNs", "HTTPRouting", "HeraldFeature", "ClientTokens", "Audiences",
            ],
            swiftSettings: swiftSettings
        ),
        // Client tokens: JWTs an app's backend mints for its users, verified for /v1/client.
        .target(
            name: "ClientTokens",
            dependencies: ["HeraldCore", "HeraldCrypto"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Notifications",
            dependencies: [
                "Audiences",
                "HeraldCore", "Storage", "Jobs", "APNs", "APNsTransport", "Devices", "HTTPRouting", "HeraldFeature",
            ],
            swiftSettings: swiftSettings
        ),
        // Live Activities: push-to-start tokens, activities, instances, routing with the silent fallback.
        .target(
            name: "LiveActivities",
            dependencies: [
                "Audiences",
                "HeraldCore", "HeraldCrypto", "Storage", "Jobs", "APNs", "APNsTransport",
                "ClientTokens", "HTTPRouting", "HeraldFeature",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Boards",
            dependencies: [
                "Audiences", "HeraldCore", "Storage", "Jobs", "APNs", "APNsTransport", "ClientTokens",
                "HTTPRouting", "HeraldFeature", "LiveActivities", "Notifications",
            ],
            swiftSettings: swiftSettings
        ),
        // Polls: shared Live Activities on a group's Lock Screens, with votes and one final result.
        .target(
            name: "Polls",
            dependencies: [
                "LiveActivities", "Jobs", "HeraldFeature", "HeraldCore", "Storage", "APNs", "HTTPRouting",
                "ClientTokens",
            ],
            swiftSettings: swiftSettings
        ),
        // Outbound events to the app's backend: the webhooks, their outbox and signed delivery.
        .target(
            name: "Webhooks",
            dependencies: [
                "HeraldCore", "HeraldCrypto", "HeraldIO", "Storage", "Jobs", "Notifications", "APNs",
                "Devices", "CHeraldShims", "CCurl", "HTTPRouting", "HeraldFeature",
            ],
            swiftSettings: swiftSettings
        ),
        // Wake pings: recurring silent pushes (APNs) or CloudKit records that keep background apps alive.
        .target(
            name: "Wake",
            dependencies: [
                "Audiences",
                "HeraldCore", "Storage", "Jobs", "APNs", "APNsTransport", "Devices", "Notifications", "CloudKit",
                "HTTPRouting", "HeraldFeature",
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "APNsSimulator",
            dependencies: ["HeraldCore", "HeraldCrypto", "HeraldIO", "HTTP2", "HTTPRouting", "HTTPServer", "APNs"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Relay",
            dependencies: ["HeraldCore", "HeraldCrypto", "HTTPRouting", "APNs", "APNsTransport", "HeraldFeature"],
            swiftSettings: swiftSettings
        ),
        // What a feature declares (settings, migrations, routes with their authentication, job kinds
        // and their handlers, webhook event types, retention) and the assembly `herald serve` composes a list of them with.
        .target(
            name: "HeraldFeature",
            dependencies: ["HeraldCore", "HTTPRouting", "Storage", "Jobs", "ClientTokens"],
            swiftSettings: swiftSettings
        ),
        // Broadcast channels (/v1/channels): straight to APNs' management and broadcast hosts.
        .target(
            name: "Channels",
            dependencies: ["HeraldCore", "HeraldFeature", "HTTPRouting", "APNs", "APNsTransport", "Notifications"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "Admin",
            dependencies: ["HeraldCore", "HeraldCrypto", "HeraldFeature", "HTTPRouting", "Storage", "Jobs"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldAPI",
            dependencies: [
                "HeraldCore", "HeraldFeature", "Channels", "HeraldCrypto", "HTTPRouting", "Storage", "Jobs",
                "Notifications",
                "APNs",
                "APNsTransport", "Devices",
                "ClientTokens",
                "Webhooks",
                "Wake", "LiveActivities", "Boards", "CloudKit", "Relay", "Polls", "Admin",
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldCore", "HeraldCrypto", "HTTPRouting", "HTTPServer", "Storage", "Jobs", "Notifications",
                "HeraldAPI", "HeraldFeature", "APNs", "APNsTransport", "APNsSimulator", "Relay", "HeraldAllocator",
                "Admin",
                "ProcessSpawn",
                "Devices",
                "ClientTokens",
                "Webhooks",
                "Wake", "LiveActivities", "CloudKit",
            ],
            swiftSettings: swiftSettings
        ),

        // One harness per fuzz target (`make fuzz`); the corpus replay test runs them too.
        .target(
            name: "FuzzHarness",
            dependencies: [
                "HTTPRouting", "HeraldAPI", "Notifications", "Relay", "APNs", "APNsSimulator", "HeraldCrypto",
                "Storage", "ClientTokens", "CloudKit", "Devices", "Webhooks", "APNsTransport",
                "HeraldCore", "HeraldFeature",
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: Tests
        // A fresh database on each backend (SQLite memory/file, the throwaway PostgreSQL).
        .target(
            name: "DatabaseTestSupport",
            dependencies: ["Storage", "HeraldCore"],
            path: "Tests/DatabaseTestSupport",
            swiftSettings: swiftSettings
        ),
        // Clients that trickle bytes at a server (HeraldAPITests' request-deadline test).
        .target(
            name: "SocketTestSupport",
            path: "Tests/SocketTestSupport",
            swiftSettings: swiftSettings
        ),
        // An HTTP/2 server over TLS that answers with header bombs (HTTP2Tests, HeraldAPITests).
        .target(
            name: "HTTP2TestSupport",
            dependencies: ["HeraldIO", "HeraldCrypto", "CNGHTTP2"],
            path: "Tests/HTTP2TestSupport",
            swiftSettings: swiftSettings
        ),
        // Re-exports HeraldCore's manual clock for the Jobs and Notifications tests.
        .target(
            name: "JobsTestSupport",
            dependencies: ["HeraldCore"],
            path: "Tests/JobsTestSupport",
            swiftSettings: swiftSettings
        ),
        // APNs in memory behind the transport factory: scripted answers, recorded requests
        // (the Notifications, Live Activities and Wake suites that need no socket).
        .target(
            name: "APNsTestSupport",
            dependencies: ["APNs", "APNsTransport", "HeraldCore"],
            path: "Tests/APNsTestSupport",
            swiftSettings: swiftSettings
        ),
        // One `eventually` for what truly polls, and a deadline for awaited events.
        // Runs a responder as the server does and keeps its answer (HTTPServerTests, RelayTests).
        .target(
            name: "HTTPTestSupport",
            dependencies: ["HTTPRouting"],
            path: "Tests/HTTPTestSupport",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "AsyncTestSupport",
            path: "Tests/AsyncTestSupport",
            swiftSettings: swiftSettings
        ),
        // Re-exports Sources/ProcessSpawn's ChildProcess for the tests that start processes.
        .target(
            name: "ProcessTestSupport",
            dependencies: ["ProcessSpawn"],
            path: "Tests/ProcessTestSupport",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ProcessTestSupportTests",
            dependencies: ["ProcessTestSupport", "AsyncTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldCore", "AsyncTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldCryptoTests",
            dependencies: ["HeraldCrypto", "ProcessTestSupport"],
            swiftSettings: swiftSettings
        ),
        // ThreadSanitizer annotations for Synchronization.Mutex's contended paths, in the test
        // bundle only and only when it is built with `--sanitize=thread` (scripts/test.sh).
        .target(name: "CThreadSanitizerMutex", path: "Tests/CThreadSanitizerMutex"),
        .testTarget(
            name: "HeraldIOTests",
            dependencies: ["HeraldIO", "HeraldCrypto", "CThreadSanitizerMutex", "AsyncTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HTTP2Tests",
            dependencies: ["HTTP2", "HeraldIO", "HeraldCore", "HeraldCrypto", "AsyncTestSupport", "HTTP2TestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "APNs", "APNsTransport", "HTTP2", "HeraldIO", "HeraldCore", "HeraldCrypto", "AsyncTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "ChannelsTests",
            dependencies: ["Channels", "APNs", "HTTPRouting", "HeraldCore", "HeraldFeature"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HTTPRoutingTests",
            dependencies: ["HTTPRouting", "HeraldCore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPRouting", "HTTPServer", "HeraldCore", "AsyncTestSupport", "HTTPTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StorageTests",
            dependencies: ["Storage", "HeraldCore", "DatabaseTestSupport", "AsyncTestSupport", "SocketTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "JobsTests",
            dependencies: [
                "Jobs", "Storage", "HeraldCore", "DatabaseTestSupport", "JobsTestSupport", "AsyncTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NotificationsTests",
            dependencies: [
                "Audiences",
                "Notifications", "Jobs", "Storage", "APNs", "APNsTransport", "APNsSimulator", "HeraldCore",
                "HeraldCrypto",
                "DatabaseTestSupport", "JobsTestSupport", "AsyncTestSupport", "Devices", "APNsTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "DevicesTests",
            dependencies: [
                "Devices", "Storage", "APNs", "HeraldCore", "HeraldCrypto", "DatabaseTestSupport", "JobsTestSupport",
                "Jobs",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "APNsSimulatorTests",
            dependencies: [
                "APNsSimulator", "APNs", "APNsTransport", "HTTP2", "HTTPRouting", "HTTPServer", "HeraldIO",
                "HeraldCore", "HeraldCrypto",
                "AsyncTestSupport", "ProcessTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RelayTests",
            dependencies: [
                "Relay", "APNs", "APNsTransport", "APNsSimulator", "HTTPRouting", "HTTPServer", "HTTP2", "HeraldIO",
                "HeraldCore",
                "HeraldCrypto", "SocketTestSupport", "AsyncTestSupport", "HTTPTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WebhooksTests",
            dependencies: [
                "Webhooks", "Notifications", "Devices", "Jobs", "Storage", "APNs", "APNsTransport", "APNsSimulator",
                "HTTP2", "HeraldIO",
                "HeraldCore", "HeraldCrypto", "DatabaseTestSupport", "JobsTestSupport", "AsyncTestSupport",
                "HTTPRouting",
                "ProcessTestSupport", "HTTPServer",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "WakeTests",
            dependencies: [
                "Wake", "Notifications", "Devices", "Jobs", "Storage", "APNs", "APNsTransport", "APNsSimulator",
                "HeraldCore",
                "CloudKit",
                "HeraldCrypto", "DatabaseTestSupport", "JobsTestSupport", "AsyncTestSupport", "HTTPRouting",
                "APNsTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        // Replays Fuzz/corpus and Fuzz/regressions through the fuzz harnesses.
        .testTarget(
            name: "LiveActivitiesTests",
            dependencies: [
                "LiveActivities", "Boards", "Storage", "APNs", "APNsTransport", "HeraldCore", "DatabaseTestSupport",
                "APNsSimulator", "Devices",
                "HeraldCrypto", "Jobs", "Notifications", "APNsTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "AdminTests",
            dependencies: ["Admin", "DatabaseTestSupport", "HTTPRouting", "HeraldCore", "HeraldCrypto", "Storage"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PollsTests",
            dependencies: [
                "Polls", "LiveActivities", "Storage", "APNs", "HeraldCore", "DatabaseTestSupport", "HeraldCrypto",
                "Jobs",
                "APNsTestSupport", "APNsTransport", "HeraldAPI", "Webhooks", "HeraldFeature", "HTTPRouting",
                "ClientTokens",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "FuzzReplayTests", dependencies: ["FuzzHarness"], swiftSettings: swiftSettings),
        .testTarget(
            name: "ClientTokensTests",
            dependencies: ["ClientTokens", "HeraldCore", "HeraldCrypto", "ProcessTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CloudKitTests",
            dependencies: [
                "CloudKit", "APNsSimulator", "APNs", "HTTP2", "HTTPRouting", "HeraldIO", "HeraldCore", "HeraldCrypto",
                "AsyncTestSupport", "ProcessTestSupport",
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldAPITests",
            dependencies: [
                "HeraldAPI", "HTTPRouting", "HTTPServer", "Storage", "Jobs", "Notifications", "APNs", "APNsTransport",
                "APNsSimulator",
                "HeraldCore", "HeraldCrypto", "DatabaseTestSupport", "SocketTestSupport", "AsyncTestSupport",
                "ProcessTestSupport", "Devices", "ClientTokens", "Webhooks", "Wake", "LiveActivities",
                "HTTP2TestSupport", "HeraldIO", "HeraldFeature", "Channels", "Relay",
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

// Every environment variable Herald reads (DESIGN.md, Configuration). The names are a public
// contract: add new ones, do not rename these.
extension Setting {
    /// Every setting, in the order of the reference (docs/CONFIGURATION.md).
    public static let all: [Setting] = [
        host, port, maxBodyBytes, requestTimeout, maxConnectionsPerIP,
        logLevel, logFormat,
        databaseURL, databaseStatementTimeout, databaseAcquireTimeout,
        apiKeys,
        metricsToken,
        clientTokenSecret, clientTokenKeysFile, clientTokenAudience, clientMaxDevices, maxInstancesPerUser,
        clientTags, clientRateLimit, clientIPRateLimit,
        relay, relayMaxInFlight, relayIPRateLimit,
        apnsAuthKey, apnsAuthKeyFile, apnsKeyID, appleTeamID, topic, apnsEnvironment, appsFile,
        apnsProductionURL, apnsSandboxURL, apnsManagementProductionURL, apnsManagementSandboxURL, apnsCAFile,
        jobConcurrency, jobLeaseSeconds, jobRetentionHours,
        invalidDeviceRetentionDays,
        wakeMinInterval,
        channelRetention, liveActivityRetentionDays, boardMinInterval,
        webhookAllowHTTP, webhookAllowPrivate, webhookCAFile,
        cloudKitKeyID, cloudKitPrivateKey, cloudKitPrivateKeyFile, cloudKitURL, cloudKitCAFile,
        admin, adminInsecureCookie, adminSessionTTL, adminReadOnlyKeys,
    ]

    /// The setting called `name`, if Herald reads one.
    public static func named(_ name: String) -> Setting? {
        all.first { $0.name == name }
    }

    // MARK: HTTP server

    public static let host = Setting(
        "HOST",
        group: .server,
        meaning: "The address the HTTP API listens on.",
        default: "0.0.0.0",
        example: "127.0.0.1",
        accepted: "an IPv4 or IPv6 address or a host name",
        flag: "--host"
    )
    public static let port = Setting(
        "PORT",
        group: .server,
        meaning: "The port the HTTP API listens on (0 picks a free one).",
        default: "3000",
        example: "8080",
        accepted: "a whole number from 0 to 65535",
        range: 0...65_535,
        flag: "--port"
    )
    public static let maxBodyBytes = Setting.integer(
        "HERALD_MAX_BODY_BYTES",
        group: .server,
        meaning: "The largest request body /v1 and the relay accept, in bytes (POST /v1/notifications "
            + "sets its own, larger limit).",
        default: 1 << 20,
        example: 2 << 20,
        range: 4096...(64 << 20)
    )
    public static let requestTimeout = Setting.integer(
        "HERALD_REQUEST_TIMEOUT",
        group: .server,
        meaning: "How long a client may take to send one request, headers and body, in seconds.",
        default: 30,
        example: 10,
        range: 1...3_600,
        unit: "seconds"
    )
    public static let maxConnectionsPerIP = Setting.integer(
        "HERALD_MAX_CONNECTIONS_PER_IP",
        group: .server,
        meaning: "Open connections at most per client address.",
        default: nil,
        whenUnset: "no limit",
        example: 64,
        range: 1...1_024
    )

    // MARK: Logging

    public static let logLevel = Setting(
        "LOG_LEVEL",
        group: .logging,
        meaning: "The least severe log level written.",
        default: "info",
        example: "debug",
        accepted: "trace, debug, info, notice, warning, error or critical"
    )
    public static let logFormat = Setting(
        "LOG_FORMAT",
        group: .logging,
        meaning: "How log lines are written: text for people, json for log collectors.",
        default: "text",
        example: "json",
        accepted: "text or json"
    )

    // MARK: Database

    public static let databaseURL = Setting(
        "DATABASE_URL",
        group: .database,
        meaning: "Where Herald keeps notifications, jobs and idempotency keys: an SQLite file for one instance, "
            + "PostgreSQL for several sharing one database.",
        default: "sqlite:herald.sqlite",
        example: "postgres://herald:secret@db.internal:5432/herald",
        secrecy: .urlPassword,
        accepted: "sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE",
        flag: "--database-url"
    )
    public static let databaseStatementTimeout = Setting.integer(
        "HERALD_DB_STATEMENT_TIMEOUT",
        group: .database,
        meaning: "PostgreSQL's statement timeout in seconds (0 turns it off).",
        default: 30,
        example: 10,
        range: 0...86_400,
        unit: "seconds"
    )
    public static let databaseAcquireTimeout = Setting.integer(
        "HERALD_DB_ACQUIRE_TIMEOUT",
        group: .database,
        meaning: "How long a request waits for a pooled PostgreSQL connection before answering 503, in seconds.",
        default: 30,
        example: 5,
        range: 1...600,
        unit: "seconds"
    )

    // MARK: API keys

    public static let apiKeys = Setting(
        "HERALD_API_KEYS",
        group: .apiKeys,
        meaning: "The keys /v1 accepts as Authorization: Bearer <key>, comma-separated.",
        whenUnset: "/v1 answers 401 to every request",
        example: "k1-0123456789abcdef0123456789abcdef,k2-fedcba9876543210fedcba9876543210",
        secrecy: .whole,
        accepted: "16 to 512 printable ASCII characters per key, no spaces (e.g. from `openssl rand -hex 32`)"
    )

    public static let metricsToken = Setting(
        "HERALD_METRICS_TOKEN",
        group: .apiKeys,
        meaning: "The bearer token GET /metrics requires (Authorization: Bearer <token>); give it to the Prometheus "
            + "scrape job, not the API key.",
        whenUnset: "/metrics answers anyone",
        example: "m-0123456789abcdef0123456789abcdef",
        secrecy: .whole,
        accepted: "16 to 512 printable ASCII characters, no spaces (e.g. from `openssl rand -hex 32`)"
    )

    // MARK: Client tokens

    public static let clientTokenSecret = Setting(
        "HERALD_CLIENT_TOKEN_SECRET",
        group: .clientTokens,
        meaning: "The HS256 secret the app's backend signs client tokens with; /v1/client accepts them as "
            + "Authorization: Bearer <token>.",
        whenUnset: "HS256 client tokens are refused",
        example: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        secrecy: .whole,
        accepted: "32 to 1024 bytes (e.g. from `openssl rand -hex 32`)"
    )
    public static let clientTokenKeysFile = Setting(
        "HERALD_CLIENT_TOKEN_KEYS_FILE",
        group: .clientTokens,
        meaning: "A JSON file mapping each kid to the PEM public key that verifies ES256 client tokens with that "
            + "kid header: the backend keeps the private key.",
        whenUnset: "ES256 client tokens are refused; with no secret either, /v1/client answers 401",
        example: "/etc/herald/client-token-keys.json",
        accepted: "the path of a JSON file like `{\"backend-1\": \"-----BEGIN PUBLIC KEY-----\\n…\"}` (P-256 keys); "
            + "`{\"backend-a\": {\"pem\": \"…\", \"apps\": [\"com.example.a\"]}}` binds a kid to the apps it may sign for"
    )
    public static let clientTokenAudience = Setting(
        "HERALD_CLIENT_TOKEN_AUDIENCE",
        group: .clientTokens,
        meaning: "The aud every client token must name.",
        default: "herald",
        example: "push.example.com",
        accepted: "1 to 256 printable ASCII characters"
    )
    public static let clientMaxDevices = Setting.integer(
        "HERALD_CLIENT_MAX_DEVICES",
        group: .clientTokens,
        meaning: "Active devices, and push-to-start tokens, at most per user per app and environment; one more "
            + "evicts the least recently registered.",
        default: 20,
        example: 5,
        range: 1...1_000
    )
    public static let maxInstancesPerUser = Setting.integer(
        "HERALD_MAX_INSTANCES_PER_USER",
        group: .clientTokens,
        meaning: "Instances of one Live Activity one user may report; one more is refused (409 "
            + "too_many_instances).",
        default: 10,
        example: 4,
        range: 1...1_000
    )
    public static let clientTags = Setting(
        "HERALD_CLIENT_TAGS",
        group: .clientTokens,
        meaning: "The tags a client token may set on its user's devices, comma-separated; a trailing * matches "
            + "every tag that starts with what precedes it. The API key may set any tag.",
        whenUnset: "client tokens may set no tag",
        example: "news,lang-*",
        accepted: "comma-separated tags of 1 to 64 characters, each may end in * (at most 1,000)"
    )

    public static let clientRateLimit = Setting(
        "HERALD_CLIENT_RATE_LIMIT",
        group: .clientTokens,
        meaning: "Requests to /v1/client per user (the client token's sub, per app), a token bucket kept in this "
            + "instance's memory; beyond it 429 rate_limited with Retry-After.",
        default: "10/s,60",
        example: "5/s,30",
        accepted: "N/s,B (N a second, bursts of B; /m, /h per minute, hour) or off"
    )
    public static let clientIPRateLimit = Setting(
        "HERALD_CLIENT_IP_RATE_LIMIT",
        group: .clientTokens,
        meaning: "Requests to /v1/client per client address (the TCP peer; IPv6 by /64), checked before the token; "
            + "kept in this instance's memory; beyond it 429 rate_limited with Retry-After.",
        default: "50/s,300",
        example: "20/s,100",
        accepted: "N/s,B (N a second, bursts of B; /m, /h per minute, hour) or off"
    )

    // MARK: Relay

    public static let relay = Setting(
        "HERALD_RELAY",
        group: .relay,
        meaning: "1 mounts the Mastodon WebPush relay (/push/…) in herald serve; herald relay always serves it.",
        default: "0",
        example: "1",
        accepted: "1 or 0"
    )
    public static let relayMaxInFlight = Setting.integer(
        "HERALD_RELAY_MAX_IN_FLIGHT",
        group: .relay,
        meaning: "Relayed pushes waiting for APNs' answer at most, counted apart from /v1's sends; a relay request "
            + "beyond it is answered 503 with Retry-After.",
        default: 1_024,
        example: 256,
        range: 1...100_000
    )
    public static let relayIPRateLimit = Setting(
        "HERALD_RELAY_IP_RATE_LIMIT",
        group: .relay,
        meaning: "Relay requests per client address (the TCP peer; IPv6 by /64), kept in this instance's memory; "
            + "beyond it 429 rate_limited with Retry-After (Mastodon retries).",
        default: "off",
        example: "20/s,200",
        accepted: "N/s,B (N a second, bursts of B; /m, /h per minute, hour) or off"
    )

    // MARK: APNs

    public static let apnsAuthKey = Setting(
        "APNS_AUTH_KEY",
        group: .apns,
        meaning: "The contents of the app's .p8 token key (PEM, newlines kept or written as \\n); "
            + "or use APNS_AUTH_KEY_FILE.",
        whenUnset: "no APNs app from variables",
        example: "-----BEGIN PRIVATE KEY-----\\nMIGTAgEAMBMG…\\n-----END PRIVATE KEY-----",
        secrecy: .whole,
        accepted: "a P-256 private key in PEM form (the whole AuthKey_KEYID.p8 file)"
    )
    public static let apnsAuthKeyFile = Setting(
        "APNS_AUTH_KEY_FILE",
        group: .apns,
        meaning: "The path of the app's .p8 token key; or use APNS_AUTH_KEY.",
        whenUnset: "no APNs app from variables",
        example: "/etc/herald/AuthKey_ABC123DEFG.p8",
        accepted: "the path of a readable .p8 file"
    )
    public static let apnsKeyID = Setting(
        "APNS_KEY_ID",
        group: .apns,
        meaning: "The Key ID of that .p8 key.",
        whenUnset: "required with APNS_AUTH_KEY or APNS_AUTH_KEY_FILE",
        example: "ABC123DEFG",
        accepted: "10 capital letters and digits"
    )
    public static let appleTeamID = Setting(
        "APPLE_TEAM_ID",
        group: .apns,
        meaning: "The Team ID of the Apple developer account that owns the key.",
        whenUnset: "required with APNS_AUTH_KEY or APNS_AUTH_KEY_FILE",
        example: "DEF123GHIJ",
        accepted: "10 capital letters and digits"
    )
    public static let topic = Setting(
        "TOPIC",
        group: .apns,
        meaning: "The app's bundle ID: the default app, and the app the relay pushes to.",
        whenUnset: "required with APNS_AUTH_KEY or APNS_AUTH_KEY_FILE",
        example: "com.example.app",
        accepted: "a bundle ID: letters, digits, '.', '-' and '_'"
    )
    public static let apnsEnvironment = Setting(
        "APNS_ENVIRONMENT",
        group: .apns,
        meaning: "Where a push that names no environment goes, for every app that serves both: sandbox for "
            + "development builds, production for TestFlight and App Store builds.",
        default: "production",
        example: "sandbox",
        accepted: "production or sandbox"
    )
    public static let appsFile = Setting(
        "HERALD_APPS_FILE",
        group: .apns,
        meaning: "A JSON file describing several apps and their credentials, in addition to the app of the "
            + "variables above.",
        whenUnset: "only the app of the variables above",
        example: "/etc/herald/apps.json",
        accepted: "the path of a readable JSON file: {\"apps\": [{\"bundle_id\": …, \"key_file\": …, …}]}"
    )
    public static let apnsProductionURL = Setting(
        "APNS_PRODUCTION_URL",
        group: .apns,
        meaning: "Where production device pushes and broadcasts go (point it at a simulator to test).",
        default: "https://api.push.apple.com",
        example: "https://127.0.0.1:8443",
        accepted: "https://HOST[:PORT] (http:// for a cleartext simulator)"
    )
    public static let apnsSandboxURL = Setting(
        "APNS_SANDBOX_URL",
        group: .apns,
        meaning: "Where sandbox (development) device pushes and broadcasts go.",
        default: "https://api.sandbox.push.apple.com",
        example: "https://127.0.0.1:8443",
        accepted: "https://HOST[:PORT] (http:// for a cleartext simulator)"
    )
    public static let apnsManagementProductionURL = Setting(
        "APNS_MANAGEMENT_PRODUCTION_URL",
        group: .apns,
        meaning: "Where production broadcast channels are created, listed and deleted.",
        default: "https://api-manage-broadcast.push.apple.com:2196",
        example: "https://127.0.0.1:8443",
        accepted: "https://HOST[:PORT] (http:// for a cleartext simulator)"
    )
    public static let apnsManagementSandboxURL = Setting(
        "APNS_MANAGEMENT_SANDBOX_URL",
        group: .apns,
        meaning: "Where sandbox broadcast channels are created, listed and deleted.",
        default: "https://api-manage-broadcast.sandbox.push.apple.com:2195",
        example: "https://127.0.0.1:8443",
        accepted: "https://HOST[:PORT] (http:// for a cleartext simulator)"
    )
    public static let apnsCAFile = Setting(
        "APNS_CA_FILE",
        group: .apns,
        meaning: "Extra root certificates (PEM) to trust for APNs connections, added to the system store "
            + "(a simulator's certificate).",
        whenUnset: "the system store only",
        example: "/tmp/herald-apns-simulator-8443.pem",
        accepted: "the path of a PEM file"
    )

    // MARK: Jobs

    public static let jobConcurrency = Setting.integer(
        "HERALD_JOB_CONCURRENCY",
        group: .jobs,
        meaning: "How many durable jobs (scheduled sends, retries, clean-ups) one instance runs at once.",
        default: 64,
        example: 128,
        range: 1...1_024
    )
    public static let jobLeaseSeconds = Setting.integer(
        "HERALD_JOB_LEASE_SECONDS",
        group: .jobs,
        meaning: "How long a claimed job is held before another instance may take it over, in seconds "
            + "(renewed while it runs).",
        default: 30,
        example: 60,
        range: 5...3_600,
        unit: "seconds"
    )
    public static let jobRetentionHours = Setting.integer(
        "HERALD_JOB_RETENTION_HOURS",
        group: .jobs,
        meaning: "How long finished jobs and notifications are kept, in hours.",
        default: 168,
        example: 720,
        range: 1...87_600,
        unit: "hours"
    )

    // MARK: Devices

    public static let invalidDeviceRetentionDays = Setting.integer(
        "HERALD_INVALID_DEVICE_RETENTION_DAYS",
        group: .jobs,
        meaning: "How long a device APNs called dead stays in the registry (and in GET /v1/dead-tokens) "
            + "before it is deleted, in days, counted from when Herald learned it.",
        default: 30,
        example: 90,
        range: 1...3_650,
        unit: "days"
    )

    public static let wakeMinInterval = Setting(
        "HERALD_WAKE_MIN_INTERVAL",
        group: .jobs,
        meaning: "The least time between two wake pings to one device, across every wake schedule; pings a "
            + "device would get sooner are skipped and counted.",
        default: "20m",
        example: "30m",
        accepted: "a duration such as 20m, 1h or 90s (0s for no floor)"
    )

    // MARK: Live Activities

    public static let liveActivityRetentionDays = Setting.integer(
        "HERALD_LIVE_ACTIVITY_RETENTION_DAYS",
        group: .jobs,
        meaning: "How long a Live Activity that ended, was cancelled, failed or expired is kept, with its "
            + "instances, users and deliveries, before it is deleted, in days, counted from its last change "
            + "(and never before its channel's HERALD_CHANNEL_RETENTION has passed).",
        default: 30,
        example: 7,
        range: 1...3_650,
        unit: "days"
    )

    public static let channelRetention = Setting.integer(
        "HERALD_CHANNEL_RETENTION",
        group: .jobs,
        meaning: "How long a broadcast channel Herald created for a Live Activity is kept after the activity "
            + "ended, before Herald deletes it on APNs, in seconds.",
        default: 3_600,
        example: 7_200,
        range: 0...604_800,
        unit: "seconds"
    )

    public static let boardMinInterval = Setting(
        "HERALD_BOARD_MIN_INTERVAL",
        group: .jobs,
        meaning: "The least time between two broadcasts of one live board: members' posts in between are "
            + "merged into the next, which always carries the latest board.",
        default: "1s",
        example: "2s",
        accepted: "a duration from 1s to 1h, such as 1s, 5s or 1m"
    )

    // MARK: Webhooks

    public static let webhookAllowHTTP = Setting(
        "HERALD_WEBHOOK_ALLOW_HTTP",
        group: .webhooks,
        meaning: "Accept http:// webhook URLs (delivered as cleartext HTTP/1.1), for local receivers; otherwise "
            + "only https:// URLs are accepted.",
        default: "0",
        example: "1",
        accepted: "1 (allow http://) or 0"
    )
    public static let webhookAllowPrivate = Setting(
        "HERALD_WEBHOOK_ALLOW_PRIVATE",
        group: .webhooks,
        meaning: "Deliver webhooks to loopback, private (RFC 1918), link-local, carrier-grade NAT, unique-local, "
            + "unspecified and multicast addresses, for receivers on this host or a private network; otherwise "
            + "such URLs are refused (400 destination_not_allowed) and so is any delivery whose connection would "
            + "reach such an address.",
        default: "0",
        example: "1",
        accepted: "1 (allow every destination) or 0"
    )
    public static let webhookCAFile = Setting(
        "HERALD_WEBHOOK_CA_FILE",
        group: .webhooks,
        meaning: "Extra root certificates (PEM) to trust for webhook receivers, added to the system store.",
        whenUnset: "the system store only",
        example: "/etc/herald/receiver-ca.pem",
        accepted: "the path of a PEM file"
    )

    // MARK: CloudKit

    public static let cloudKitKeyID = Setting(
        "CLOUDKIT_KEY_ID",
        group: .cloudKit,
        meaning: "The Key ID of a CloudKit server-to-server key (CloudKit Dashboard → API Access → "
            + "Server-to-Server Keys); apps can have their own under \"cloudkit\" in HERALD_APPS_FILE.",
        whenUnset: "no CloudKit key from variables",
        example: "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b",
        accepted: "1 to 128 letters, digits, '-' and '_'"
    )
    public static let cloudKitPrivateKey = Setting(
        "CLOUDKIT_PRIVATE_KEY",
        group: .cloudKit,
        meaning: "The private half of that key (PEM, newlines kept or written as \\n); or use "
            + "CLOUDKIT_PRIVATE_KEY_FILE.",
        whenUnset: "required with CLOUDKIT_KEY_ID, unless CLOUDKIT_PRIVATE_KEY_FILE is set",
        example: "-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEI…\\n-----END EC PRIVATE KEY-----",
        secrecy: .whole,
        accepted: "a P-256 private key in PEM form: SEC1 (openssl ecparam -name prime256v1 -genkey -noout) or PKCS#8"
    )
    public static let cloudKitPrivateKeyFile = Setting(
        "CLOUDKIT_PRIVATE_KEY_FILE",
        group: .cloudKit,
        meaning: "The path of that private key's PEM file; or use CLOUDKIT_PRIVATE_KEY.",
        whenUnset: "required with CLOUDKIT_KEY_ID, unless CLOUDKIT_PRIVATE_KEY is set",
        example: "/etc/herald/cloudkit-eckey.pem",
        accepted: "the path of a readable PEM file"
    )
    public static let cloudKitURL = Setting(
        "CLOUDKIT_URL",
        group: .cloudKit,
        meaning: "Where CloudKit Web Services requests go (point it at a simulator to test).",
        default: "https://api.apple-cloudkit.com",
        example: "https://127.0.0.1:8443",
        accepted: "an https:// or http:// origin without a path"
    )
    public static let cloudKitCAFile = Setting(
        "CLOUDKIT_CA_FILE",
        group: .cloudKit,
        meaning: "Extra root certificates (PEM) to trust for CloudKit connections, added to the system store "
            + "(a simulator's certificate).",
        whenUnset: "the system store only",
        example: "/tmp/herald-apns-simulator-8443.pem",
        accepted: "the path of a PEM file"
    )

    // MARK: Admin console

    public static let admin = Setting(
        "HERALD_ADMIN",
        group: .admin,
        meaning: "1 serves the admin console at /admin (sign-in with an API key); 0 turns it off.",
        default: "1",
        example: "0",
        accepted: "1 or 0"
    )
    public static let adminInsecureCookie = Setting(
        "HERALD_ADMIN_INSECURE_COOKIE",
        group: .admin,
        meaning: "1 sends the console's session cookie without Secure, so that a browser keeps it over plain "
            + "HTTP: for local use only, never behind a public address.",
        default: "0",
        example: "1",
        accepted: "1 or 0"
    )
    public static let adminSessionTTL = Setting.integer(
        "HERALD_ADMIN_SESSION_TTL",
        group: .admin,
        meaning: "How long a console session lasts after sign-in, in seconds; signing out ends it sooner.",
        default: 43_200,
        example: 3_600,
        range: 300...604_800,
        unit: "seconds"
    )
    public static let adminReadOnlyKeys = Setting(
        "HERALD_ADMIN_READONLY_KEYS",
        group: .admin,
        meaning: "Keys that sign in to the admin console to read only: no buttons, no forms, every change "
            + "refused. They do not open /v1.",
        whenUnset: "only the keys of HERALD_API_KEYS sign in, and they may change things",
        example: "ro-0123456789abcdef0123456789abcdef",
        secrecy: .whole,
        accepted: "16 to 512 printable ASCII characters per key, no spaces, comma-separated"
    )
}

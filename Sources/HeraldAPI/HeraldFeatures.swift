import Admin
import Boards
import Channels
import Devices
import HTTPRouting
public import HeraldCore
public import HeraldFeature
import LiveActivities
import Notifications
import Polls
import Relay
import Wake
import Webhooks

/// The features `herald serve` composes: adding a feature is a new module plus one line in
/// ``all`` (and its target in Package.swift).
///
/// ``assembly`` puts the list together with what no feature owns (``coreSettings``,
/// ``HeraldSchema/coreMigrations``): the configuration reference and `herald config` list its
/// settings, the migrator applies its migrations, and `herald serve` registers its routes behind
/// the shared request machinery (API keys, idempotency, the refusal mapping).
public enum HeraldFeatures {
    /// One line per feature.
    public static let all: [HeraldFeature] = [
        Channels.feature,
        Devices.feature,
        Webhooks.feature,
        Notifications.feature,
        Wake.feature,
        LiveActivities.feature,
        Boards.feature,
        Polls.feature,
        Relay.feature,
        Admin.feature,
    ]

    /// The settings every feature and the server itself share, in the order of the reference.
    public static let coreSettings: [Setting] = [
        .host, .port, .maxBodyBytes, .requestTimeout, .maxConnectionsPerIP,
        .logLevel, .logFormat,
        .databaseURL, .databaseStatementTimeout, .databaseAcquireTimeout,
        .apiKeys,
        .metricsToken,
        .clientTokenSecret, .clientTokenKeysFile, .clientTokenAudience, .clientMaxDevices,
        .clientRateLimit, .clientIPRateLimit,
        .apnsAuthKey, .apnsAuthKeyFile, .apnsKeyID, .appleTeamID, .topic, .apnsEnvironment, .appsFile,
        .apnsProductionURL, .apnsSandboxURL, .apnsManagementProductionURL, .apnsManagementSandboxURL, .apnsCAFile,
        .jobConcurrency, .jobLeaseSeconds, .jobRetentionHours,
        .cloudKitKeyID, .cloudKitPrivateKey, .cloudKitPrivateKeyFile, .cloudKitURL, .cloudKitCAFile,
    ]

    /// ``all`` composed with the core: settings, migrations and routes.
    public static let assembly = FeatureAssembly(
        coreSettings: coreSettings,
        coreMigrations: HeraldSchema.coreMigrations,
        features: all
    )

    /// Every setting Herald reads, core first, grouped by the reference.
    public static var settings: [Setting] { assembly.settings }
}

extension APIKeys: RequestAuthenticator {}

extension ClientTokenAuthenticator: RequestAuthenticator {}

extension IdempotencyStore: IdempotentRunner {}

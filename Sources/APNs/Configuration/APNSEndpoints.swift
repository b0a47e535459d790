public import HeraldCore

/// Where each kind of APNs request goes, with Apple's hosts as defaults and the
/// `APNS_*_URL` variables as overrides (to point Herald at the simulator), plus extra trusted
/// roots for TLS.
public struct APNSEndpoints: Sendable, Hashable {
    public var production: APNSEndpoint
    public var sandbox: APNSEndpoint
    public var managementProduction: APNSEndpoint
    public var managementSandbox: APNSEndpoint
    /// `APNS_CA_FILE`: PEM root certificates to trust in addition to the system store.
    public var caFile: String?

    /// Apple's hosts.
    public init() {
        self.production = APNSEnvironment.production.defaultEndpoint
        self.sandbox = APNSEnvironment.sandbox.defaultEndpoint
        self.managementProduction = APNSEnvironment.production.defaultManagementEndpoint
        self.managementSandbox = APNSEnvironment.sandbox.defaultManagementEndpoint
        self.caFile = nil
    }

    /// Every kind of request to one endpoint, trusting `caFile`: a simulator serves them all.
    public init(all endpoint: APNSEndpoint, caFile: String?) {
        self.production = endpoint
        self.sandbox = endpoint
        self.managementProduction = endpoint
        self.managementSandbox = endpoint
        self.caFile = caFile
    }

    /// Device pushes and broadcast sends.
    public func push(_ environment: APNSEnvironment) -> APNSEndpoint {
        environment == .production ? production : sandbox
    }

    /// Broadcast channel management.
    public func management(_ environment: APNSEnvironment) -> APNSEndpoint {
        environment == .production ? managementProduction : managementSandbox
    }

    /// Reads `APNS_PRODUCTION_URL`, `APNS_SANDBOX_URL`, `APNS_MANAGEMENT_PRODUCTION_URL`,
    /// `APNS_MANAGEMENT_SANDBOX_URL` and `APNS_CA_FILE`; unset ones keep Apple's defaults.
    ///
    /// - Parameter fileExists: checks `APNS_CA_FILE`; injectable for tests.
    /// - Throws: ``HeraldCore/ConfigurationError`` with one line per unusable value.
    public static func load(
        environment: [String: String],
        fileExists: (String) -> Bool = APNSAppConfiguration.defaultFileExists
    ) throws(ConfigurationError) -> APNSEndpoints {
        var reader = EnvironmentReader(environment)
        var endpoints = APNSEndpoints()
        func read(_ setting: Setting, into endpoint: inout APNSEndpoint) {
            guard let text = reader.string(setting) else { return }
            if let parsed = APNSEndpoint(url: text) {
                endpoint = parsed
            } else {
                reader.report(
                    "\(setting.name)=\(text) is not valid: use https://HOST[:PORT] (http:// for a cleartext simulator)"
                )
            }
        }
        read(.apnsProductionURL, into: &endpoints.production)
        read(.apnsSandboxURL, into: &endpoints.sandbox)
        read(.apnsManagementProductionURL, into: &endpoints.managementProduction)
        read(.apnsManagementSandboxURL, into: &endpoints.managementSandbox)
        if let path = reader.string(.apnsCAFile) {
            if fileExists(path) {
                endpoints.caFile = path
            } else {
                reader.report("APNS_CA_FILE=\(path) does not exist: set it to a PEM file of root certificates")
            }
        }
        try reader.validate()
        return endpoints
    }
}

import ClientTokens

/// Target `client-token-keys`: the parser of HERALD_CLIENT_TOKEN_KEYS_FILE (both entry forms,
/// the kids' app bindings). Input: the file's bytes.
public enum ClientTokenKeysFileFuzz {
    public static func run(_ data: [UInt8]) {
        _ = kids(data)
    }

    /// The kids of a file the parser accepts, `nil` when it refuses it (the replay test checks
    /// the seeds). An accepted file binds only kids it holds keys for, each to 1 to 100 apps.
    public static func kids(_ data: [UInt8]) -> [String]? {
        guard let file = try? ClientTokenKeysFile.parse(data, source: "fuzz") else { return nil }
        for (kid, apps) in file.apps {
            precondition(file.keys[kid] != nil, "a bound kid without a key")
            precondition((1...ClientTokenKeysFile.maximumAppsPerKey).contains(apps.count), "an unbounded binding")
        }
        return file.keys.keys.sorted()
    }
}

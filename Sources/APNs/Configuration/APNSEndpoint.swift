import Foundation

/// One HTTP/2 server to connect to: host, port and whether to use TLS (always, for Apple; the
/// simulator may also run over cleartext).
public struct APNSEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var usesTLS: Bool

    public init(host: String, port: Int, usesTLS: Bool = true) {
        self.host = host
        self.port = port
        self.usesTLS = usesTLS
    }

    /// Parses `https://HOST[:PORT]` (or `http://` for cleartext); a trailing `/` is allowed, any
    /// other path, a query, a fragment or user info is not. The default ports are 443 and 80.
    public init?(url text: String) {
        guard let components = URLComponents(string: text),
            let scheme = components.scheme?.lowercased(), scheme == "https" || scheme == "http",
            var host = components.host, !host.isEmpty,
            components.path.isEmpty || components.path == "/",
            components.query == nil, components.fragment == nil,
            components.user == nil, components.password == nil
        else { return nil }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let usesTLS = scheme == "https"
        let port = components.port ?? (usesTLS ? 443 : 80)
        guard (1...65_535).contains(port) else { return nil }
        self.init(host: host, port: port, usesTLS: usesTLS)
    }

    /// `https` or `http`, the `:scheme` pseudo-header.
    public var scheme: String { usesTLS ? "https" : "http" }

    /// The `:authority` pseudo-header: the host (bracketed when IPv6), with the port unless it is
    /// the scheme's default.
    public var authority: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return port == (usesTLS ? 443 : 80) ? bracketed : "\(bracketed):\(port)"
    }

    /// `https://host:port`.
    public var description: String {
        let bracketed = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(bracketed):\(port)"
    }
}

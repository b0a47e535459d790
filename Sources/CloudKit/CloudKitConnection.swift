import Foundation
import HTTP2
import HeraldCore
import HeraldIO

/// The one HTTP/2 connection to CloudKit's origin, opened on first use and again after it breaks.
/// `https://` is TLS with ALPN `h2`, trusting the system roots plus `caFile` (a simulator's
/// certificate); `http://` is cleartext prior-knowledge HTTP/2.
actor CloudKitConnection {
    struct Origin: Sendable, Hashable {
        var secure: Bool
        var host: String
        var port: Int

        /// Reads `https://host[:port]` or `http://host[:port]`; a path is not allowed.
        init(url: String) throws(CloudKitError) {
            guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
                scheme == "https" || scheme == "http", let rawHost = components.host, !rawHost.isEmpty,
                components.path.isEmpty || components.path == "/", components.query == nil
            else {
                throw CloudKitError(
                    .invalidConfiguration,
                    reason: "CLOUDKIT_URL \(url) is not an origin: use https://api.apple-cloudkit.com or a simulator's "
                        + "https://127.0.0.1:PORT"
                )
            }
            secure = scheme == "https"
            host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
            let port = components.port ?? (secure ? 443 : 80)
            guard (1...65_535).contains(port) else {
                throw CloudKitError(.invalidConfiguration, reason: "CLOUDKIT_URL \(url) has no usable port")
            }
            self.port = port
        }
    }

    private let origin: Origin
    private let tls: TLSContext?
    private let options: HTTP2ClientConnection.Configuration
    private var connection: HTTP2ClientConnection?

    init(origin: Origin, caFile: String?, options: HTTP2ClientConnection.Configuration) throws(CloudKitError) {
        self.origin = origin
        self.options = options
        if origin.secure {
            var configuration = TLSConfiguration.makeClient()
            configuration.additionalTrustRootsFile = caFile
            do {
                tls = try TLSContext(configuration: configuration)
            } catch {
                throw CloudKitError(
                    .invalidConfiguration,
                    reason: "CLOUDKIT_CA_FILE \(caFile ?? "") cannot be used as PEM root certificates: \(error)"
                )
            }
        } else {
            tls = nil
        }
    }

    /// Sends `request`; a connection that breaks is dropped so the next request opens a new one.
    func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        let current = try await usable()
        do {
            return try await current.send(request)
        } catch {
            if !current.status.isUsable, connection === current { connection = nil }
            throw error
        }
    }

    func close() async {
        let current = connection
        connection = nil
        await current?.close()
    }

    private func usable() async throws -> HTTP2ClientConnection {
        if let connection, connection.status.isUsable { return connection }
        if let stale = connection {
            connection = nil
            await stale.close()
        }
        let fresh = try await HTTP2ClientConnection.connect(
            host: origin.host,
            port: origin.port,
            tls: tls,
            configuration: options
        )
        if let raced = connection, raced.status.isUsable {
            await fresh.close()
            return raced
        }
        connection = fresh
        return fresh
    }
}

public import Foundation

extension APNSClient {
    /// Sends a broadcast to a channel's subscribers (to the push host, not the management host).
    public func send(_ request: APNSBroadcastRequest) async throws -> APNSSendResult {
        try request.validate()
        let transport = self.transport
        return try await result(
            perform(label: "broadcast", policy: retryPolicy) {
                try await transport.send(APNSTransportRequest(request.httpRequest(authorization: $0?.token)))
            }
        )
    }

    // MARK: Channel management

    /// Creates a broadcast channel and returns the id APNs assigned.
    ///
    /// Not retried on 500: the channel may exist already.
    /// - Throws: ``APNSRejection`` when APNs refuses, ``APNSUnexpectedResponseError`` when a 2xx
    ///   carries no `apns-channel-id`, and what the sends throw.
    public func createChannel(
        bundleID: String,
        storagePolicy: APNSChannelMessageStoragePolicy,
        requestID: UUID? = nil
    ) async throws -> APNSChannelID {
        var policy = retryPolicy
        policy.retryableStatuses.remove(500)
        let response = try await channelRequest(
            .create(bundleID: bundleID, storagePolicy: storagePolicy, requestID: requestID),
            policy: policy
        )
        guard let id = response.headerValue("apns-channel-id"), !id.isEmpty else {
            throw APNSUnexpectedResponseError(status: response.status, message: "no apns-channel-id header")
        }
        return APNSChannelID(rawValue: id)
    }

    /// Reads a channel's storage policy and push type.
    public func channelConfiguration(
        bundleID: String,
        channelID: APNSChannelID,
        requestID: UUID? = nil
    ) async throws -> APNSChannelConfiguration {
        let response = try await channelRequest(.read(bundleID: bundleID, channelID: channelID, requestID: requestID))
        guard let configuration = APNSChannelConfiguration(parsing: response.body) else {
            throw APNSUnexpectedResponseError(
                status: response.status,
                message: "the body is not a channel configuration"
            )
        }
        return configuration
    }

    /// Deletes a channel. Messages already stored may still be delivered.
    public func deleteChannel(bundleID: String, channelID: APNSChannelID, requestID: UUID? = nil) async throws {
        _ = try await channelRequest(.delete(bundleID: bundleID, channelID: channelID, requestID: requestID))
    }

    /// Lists every channel of the app in this environment.
    public func allChannels(bundleID: String, requestID: UUID? = nil) async throws -> [APNSChannelID] {
        let response = try await channelRequest(.listAll(bundleID: bundleID, requestID: requestID))
        guard let ids = APNSChannelList.parse(response.body) else {
            throw APNSUnexpectedResponseError(status: response.status, message: "the body is not a channel list")
        }
        return ids
    }

    private func channelRequest(
        _ request: APNSChannelRequest,
        policy: APNSRetryPolicy? = nil
    ) async throws -> APNSHTTPResponse {
        try request.validate()
        let transport = self.transport
        switch try await perform(
            label: "channel",
            policy: policy ?? retryPolicy,
            { try await transport.send(APNSTransportRequest(request.httpRequest(authorization: $0?.token))) }
        ) {
        case .success(let response, _): return response.httpResponse
        case .failure(let response, let attempts): throw APNSRejection(response: response, attempts: attempts)
        }
    }
}

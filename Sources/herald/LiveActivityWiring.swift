import APNs
import ClientTokens
import Devices
import HTTPRouting
import HeraldAPI
import LiveActivities
import Notifications
import Storage

/// The Live Activities parts of `herald serve`: the sender (its jobs), the channel-management
/// pools, and the routes under `/v1` and `/v1/client`.
struct LiveActivityWiring {
    let sender: LiveActivitySender
    let channels: ManagementChannels

    init(
        _ database: any Database,
        _ devices: DeviceStore,
        _ clients: APNSClientProvider,
        _ endpoints: APNSEndpoints?,
        _ channelRetention: Double
    ) {
        channels = ManagementChannels(endpoints: endpoints ?? APNSEndpoints())
        sender = LiveActivitySender(
            store: LiveActivityStore(database: database),
            devices: devices,
            clients: clients,
            channels: channels,
            channelRetention: channelRetention
        )
    }

    func register(on router: inout Router, keys: APIKeys, clientTokens: ClientTokenConfiguration) {
        let service = LiveActivityService(sender: sender)
        LiveActivityRoutes(service: service, keys: keys).register(on: &router)
        ClientLiveActivityRoutes(service: service, authenticator: ClientTokenAuthenticator(clientTokens))
            .register(on: &router)
    }
}

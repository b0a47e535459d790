import APNs
import APNsTransport
import ClientTokens
import Devices
import HTTPRouting
import HeraldAPI
import LiveActivities
import Notifications
import Storage

/// The Live Activities parts of `herald serve`: the sender (its jobs) and the routes under `/v1`
/// and `/v1/client`. Channels are created and deleted through `clients`' management clients, the
/// pools `/v1/channels` uses too, which `clients.shutdown()` closes.
struct LiveActivityWiring {
    let sender: LiveActivitySender
    /// `HERALD_MAX_INSTANCES_PER_USER` and `HERALD_CLIENT_MAX_DEVICES` (push-to-start tokens).
    let quotas: LiveActivityQuotas

    init(
        _ database: any Database,
        _ devices: DeviceStore,
        _ clients: APNSClientProvider,
        _ channelRetention: Double,
        _ quotas: LiveActivityQuotas = LiveActivityQuotas()
    ) {
        self.quotas = quotas
        sender = LiveActivitySender(
            store: LiveActivityStore(database: database),
            devices: devices,
            clients: clients,
            channels: clients,
            channelRetention: channelRetention
        )
    }

    func register(on router: inout Router, keys: APIKeys, clientTokens: ClientTokenConfiguration) {
        let service = LiveActivityService(sender: sender, quotas: quotas)
        LiveActivityRoutes(service: service, keys: keys).register(on: &router)
        ClientLiveActivityRoutes(service: service, authenticator: ClientTokenAuthenticator(clientTokens))
            .register(on: &router)
    }
}

import APNs
import Foundation
import Synchronization

/// Everything the simulator's connections share: deliveries, device tokens, channels and faults,
/// behind one lock. Each request takes the lock once, to finish (state checks, faults, record).
final class SimulatorStore: Sendable {
    struct State: Sendable {
        var deliveries: DeliveryLog
        var tokens: DeviceTokenRegistry
        var channels: ChannelRegistry
        var faults: FaultPlan
        var devices: VirtualDeviceRegistry
    }

    private let state: Mutex<State>

    /// Every registry is bounded: deliveries are a ring, the others refuse new entries when full.
    init(
        deliveryCapacity: Int,
        channelLimit: Int,
        totalChannelLimit: Int = 100_000,
        tokenLimit: Int = 100_000,
        faultLimit: Int = 1_000,
        devices: VirtualDeviceRegistry = VirtualDeviceRegistry()
    ) {
        state = Mutex(
            State(
                deliveries: DeliveryLog(capacity: deliveryCapacity),
                tokens: DeviceTokenRegistry(limit: tokenLimit),
                channels: ChannelRegistry(limit: channelLimit, totalLimit: totalChannelLimit),
                faults: FaultPlan(limit: faultLimit),
                devices: devices
            )
        )
    }

    func withState<T: Sendable>(_ body: (inout State) -> T) -> T {
        state.withLock { body(&$0) }
    }

    /// Finishes a device push: `rejection` is what validation found (nil when it passed). Then the
    /// token registry, the faults and the record; an accepted push then reaches the virtual
    /// devices (`virtual`).
    func finishDevice(
        _ record: inout APNSSimulatorDelivery,
        push: DevicePush?,
        rejection: SimulatorRejection?,
        streamNumber: Int,
        now: Date,
        virtual: VirtualDeviceInput? = nil
    ) -> FaultEffects {
        let (effects, final) = state.withLock { state -> (FaultEffects, SimulatorRejection?) in
            var rejection = rejection
            if rejection == nil, let push { rejection = state.tokens.check(push) }
            var effects =
                state.faults.isEmpty ? FaultEffects() : state.faults.connectionEffects(streamNumber: streamNumber)
            if !state.faults.isEmpty {
                effects.delay = state.faults.delay(kind: .device, token: record.token)
                if rejection == nil { rejection = state.faults.response(kind: .device, token: record.token, now: now) }
            }
            if !effects.close {
                var finished = record
                finished.apply(rejection)
                state.deliveries.append(finished)
                if rejection == nil, let virtual, let push {
                    state.devices.apply(
                        virtual,
                        token: push.token,
                        bundleID: push.bundleID,
                        channels: state.channels,
                        requestID: record.apnsID,
                        now: now
                    )
                }
            }
            return (effects, rejection)
        }
        record.apply(final)
        return effects
    }

    /// Finishes a broadcast: the channel must exist for the app and, with policy 0, the expiration
    /// must be 0; then faults and the record; an accepted one then reaches the activities
    /// subscribed to the channel (`message`).
    func finishBroadcast(
        _ record: inout APNSSimulatorDelivery,
        push: BroadcastPush?,
        rejection: SimulatorRejection?,
        streamNumber: Int,
        now: Date,
        message: LiveActivityMessage? = nil
    ) -> FaultEffects {
        let (effects, final) = state.withLock { state -> (FaultEffects, SimulatorRejection?) in
            var rejection = rejection
            if rejection == nil, let push {
                if let channel = state.channels.channel(bundleID: push.bundleID, id: push.channelID) {
                    if channel.storagePolicy == .noMessageStored, push.expiration != 0 {
                        rejection = .badRequest(.badExpirationDate)
                    }
                } else {
                    rejection = .badRequest(.channelNotRegistered)
                }
            }
            var effects =
                state.faults.isEmpty ? FaultEffects() : state.faults.connectionEffects(streamNumber: streamNumber)
            if !state.faults.isEmpty {
                effects.delay = state.faults.delay(kind: .broadcast, token: nil)
                if rejection == nil { rejection = state.faults.response(kind: .broadcast, token: nil, now: now) }
            }
            if !effects.close {
                var finished = record
                finished.apply(rejection)
                state.deliveries.append(finished)
                if rejection == nil, let message, let push {
                    state.devices.broadcast(
                        message,
                        bundleID: push.bundleID,
                        channelID: push.channelID,
                        requestID: record.requestID,
                        now: now
                    )
                }
            }
            return (effects, rejection)
        }
        record.apply(final)
        return effects
    }

    /// What a channel management request answers.
    enum ChannelResult: Sendable {
        case created(APNSSimulatorChannel)
        case read(APNSSimulatorChannel)
        case deleted
        case list([String])
        case rejected(SimulatorRejection)
    }

    /// Runs a checked channel operation (or accounts for a refused one), with faults.
    func finishChannelRequest(
        _ request: ChannelRequest?,
        rejection: SimulatorRejection?,
        streamNumber: Int,
        now: Date
    ) -> (ChannelResult, FaultEffects) {
        state.withLock { state in
            var effects =
                state.faults.isEmpty ? FaultEffects() : state.faults.connectionEffects(streamNumber: streamNumber)
            if !state.faults.isEmpty { effects.delay = state.faults.delay(kind: .channels, token: nil) }
            if let rejection { return (.rejected(rejection), effects) }
            guard let request else { return (.rejected(.badPath), effects) }
            if !state.faults.isEmpty, let fault = state.faults.response(kind: .channels, token: nil, now: now) {
                return (.rejected(fault), effects)
            }
            switch request.operation {
            case .create(let policy):
                switch state.channels.create(bundleID: request.bundleID, policy: policy, now: now) {
                case .success(let channel): return (.created(channel), effects)
                case .failure(let rejection): return (.rejected(rejection), effects)
                }
            case .read(let id):
                guard let channel = state.channels.channel(bundleID: request.bundleID, id: id) else {
                    return (.rejected(.badRequest(.channelNotRegistered)), effects)
                }
                return (.read(channel), effects)
            case .delete(let id):
                guard state.channels.delete(bundleID: request.bundleID, id: id) != nil else {
                    return (.rejected(.badRequest(.channelNotRegistered)), effects)
                }
                return (.deleted, effects)
            case .listAll:
                return (.list(state.channels.ids(bundleID: request.bundleID)), effects)
            }
        }
    }

    /// Connection-level faults and delays for a request that is not a push or channel operation.
    func effects(streamNumber: Int) -> FaultEffects {
        state.withLock { state in
            state.faults.isEmpty ? FaultEffects() : state.faults.connectionEffects(streamNumber: streamNumber)
        }
    }
}

extension APNSSimulatorDelivery {
    /// Sets the answer: 200 without a reason, or the rejection's status, reason and timestamp.
    mutating func apply(_ rejection: SimulatorRejection?) {
        status = rejection?.status ?? 200
        reason = rejection?.reason
        timestamp = rejection?.timestamp
    }
}

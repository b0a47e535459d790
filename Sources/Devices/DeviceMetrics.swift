import HeraldCore

/// The registry's Prometheus series.
struct DeviceMetrics: Sendable {
    /// `herald_device_registrations_total{result}`: `created` or `updated`.
    let registrations: Counter
    /// `herald_devices_invalidated_total{reason}`: devices that became invalid, by APNs' reason
    /// (or `evicted`, by a user's quota).
    let invalidations: Counter
    /// `herald_device_reassignments_total`: device tokens registered to another user than before.
    let reassignments: Counter

    init(registry: MetricsRegistry) {
        registrations = registry.counter(
            "herald_device_registrations_total",
            help: "Device registrations stored, by result (created, updated)."
        )
        invalidations = registry.counter(
            "herald_devices_invalidated_total",
            help: "Devices that became invalid because APNs called their token dead, or evicted by their user's "
                + "quota, by reason."
        )
        reassignments = registry.counter(
            "herald_device_reassignments_total",
            help: "Device tokens registered to another user than the one they were registered to."
        )
    }
}

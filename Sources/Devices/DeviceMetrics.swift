import HeraldCore

/// The registry's Prometheus series.
struct DeviceMetrics: Sendable {
    /// `herald_device_registrations_total{result}`: `created` or `updated`.
    let registrations: Counter
    /// `herald_devices_invalidated_total{reason}`: devices that became invalid, by APNs' reason.
    let invalidations: Counter

    init(registry: MetricsRegistry) {
        registrations = registry.counter(
            "herald_device_registrations_total",
            help: "Device registrations stored, by result (created, updated)."
        )
        invalidations = registry.counter(
            "herald_devices_invalidated_total",
            help: "Devices that became invalid because APNs called their token dead, by reason."
        )
    }
}

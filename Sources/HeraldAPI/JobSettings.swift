public import HeraldCore
public import Jobs

/// The job worker's settings for `herald serve`: `HERALD_JOB_CONCURRENCY` (jobs run at once,
/// default 64), `HERALD_JOB_LEASE_SECONDS` (how long a claimed job is held before another
/// instance may take it over, default 30; renewed while it runs) and
/// `HERALD_JOB_RETENTION_HOURS` (how long finished jobs are kept, default 168).
public enum JobSettings {
    public static func load(environment: [String: String]) throws(ConfigurationError) -> JobWorkerConfiguration {
        var reader = EnvironmentReader(environment)
        var configuration = JobWorkerConfiguration()
        configuration.concurrency = reader.integer(.jobConcurrency) ?? 64
        configuration.lease = Double(reader.integer(.jobLeaseSeconds) ?? 30)
        configuration.retention = Double(reader.integer(.jobRetentionHours) ?? 168) * 3_600
        try reader.validate()
        return configuration
    }
}

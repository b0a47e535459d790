import Foundation
import HeraldCore
import Jobs

// CloudKit mode: one record per run, then the cleanup of the older ones.
extension WakeRunner {
    func publishRecord(_ schedule: WakeSchedule, run: inout WakeRun, isLastAttempt: Bool) async throws -> JobOutcome {
        let labels: MetricLabels = [("mode", "cloudkit")]
        guard let publisher, let target = schedule.cloudkit else {
            run.status = .failed
            run.error = "CloudKit is not configured: set CLOUDKIT_KEY_ID and CLOUDKIT_PRIVATE_KEY (or _FILE)"
            return .failed(reason: run.error ?? "")
        }
        if run.recordName == nil {
            do {
                run.recordName = try await publisher.createRecord(
                    container: target.container,
                    environment: target.environment,
                    recordType: target.recordType,
                    field: target.field,
                    unixSeconds: EpochTime.seconds(clock.now())
                )
                metrics.pings.increment(labels: labels + [("result", "sent")])
            } catch {
                let failure = Self.failure(error)
                run.errorCodes.append(failure.code)
                run.error = "creating the record failed: \(failure.code)"
                metrics.pings.increment(labels: labels + [("result", "failed")])
                if failure.isRetryable, !isLastAttempt {
                    run.status = .retrying
                    return .retry(
                        reason: "CloudKit answered \(failure.code)",
                        after: failure.retryAfter.map { max(1, $0.timeInterval) }
                    )
                }
                run.status = .failed
                run.failed = 1
                return .failed(reason: "CloudKit answered \(failure.code)")
            }
        }
        run.sent = 1
        run.error = nil
        run.status = .done
        do {
            _ = try await publisher.deleteOlderRecords(
                container: target.container,
                environment: target.environment,
                recordType: target.recordType,
                field: target.field,
                keep: target.keep
            )
        } catch {
            // The record was created: the run did its work; the next run's cleanup catches up.
            let failure = Self.failure(error)
            run.errorCodes.append(failure.code)
            run.error = "cleanup failed: \(failure.code)"
            logger.warning(
                "wake ping cleanup failed",
                metadata: ["schedule": .string("\(schedule.id)"), "code": .string(failure.code)]
            )
        }
        return .done
    }

    /// What a publisher's error says; an unknown error is retryable.
    static func failure(_ error: any Error) -> WakeCloudKitError {
        if let failure = error as? any WakeCloudKitFailure {
            return WakeCloudKitError(
                code: failure.code,
                reason: "\(failure)",
                isRetryable: failure.isRetryable,
                retryAfter: failure.retryAfter
            )
        }
        return WakeCloudKitError(code: "UNKNOWN_ERROR", reason: "\(error)", isRetryable: true)
    }
}

import Foundation
import Jobs

/// This process as the job queue names it in `lease_owner`: read here, in the executable, and
/// handed to the workers.
enum ProcessIdentity {
    static func jobOwner() -> String {
        JobWorker.owner(host: ProcessInfo.processInfo.hostName, processID: ProcessInfo.processInfo.processIdentifier)
    }
}

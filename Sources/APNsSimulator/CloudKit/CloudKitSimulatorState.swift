import APNs
import Foundation

/// A query subscription the control API configured: records of `recordType` created in
/// `container` (and `environment`, when set) fire a silent push to each of `tokens` for `topic`.
struct APNSSimulatorCloudKitSubscription: Sendable, Hashable {
    var id: String
    var container: String
    /// nil: both environments.
    var environment: String?
    var recordType: String
    var tokens: [String]
    var topic: String

    init(
        id: String,
        container: String,
        environment: String?,
        recordType: String,
        tokens: [String],
        topic: String
    ) {
        self.id = id
        self.container = container
        self.environment = environment
        self.recordType = recordType
        self.tokens = tokens.map { $0.lowercased() }
        self.topic = topic
    }
}

/// An injected CloudKit failure (`POST /cloudkit/faults`): the next `times` requests (nil: all)
/// to `operation` (nil: both) are answered `status` with `serverErrorCode` and `retryAfter`.
struct APNSSimulatorCloudKitFault: Sendable, Hashable {
    var serverErrorCode: String
    var status: Int
    var retryAfter: Int?
    var times: Int?
    /// `modify` or `query`; nil: both.
    var operation: String?

    init(
        serverErrorCode: String,
        status: Int,
        retryAfter: Int? = nil,
        times: Int? = nil,
        operation: String? = nil
    ) {
        self.serverErrorCode = serverErrorCode
        self.status = status
        self.retryAfter = retryAfter
        self.times = times
        self.operation = operation
    }
}

/// Records, subscriptions and faults, each bounded.
struct CloudKitSimulatorState: Sendable {
    /// Records by database (`container/environment`), then by name.
    var databases: [String: [String: CloudKitStoredRecord]] = [:]
    var recordCount = 0
    let recordLimit: Int
    var subscriptions: [APNSSimulatorCloudKitSubscription] = []
    let subscriptionLimit: Int
    var faults: [(id: Int, fault: APNSSimulatorCloudKitFault, fired: Int)] = []
    let faultLimit: Int
    var nextSequence = 1
    var nextFaultID = 1

    init(recordLimit: Int, subscriptionLimit: Int, faultLimit: Int) {
        self.recordLimit = max(1, recordLimit)
        self.subscriptionLimit = max(1, subscriptionLimit)
        self.faultLimit = max(1, faultLimit)
    }

    static func databaseKey(container: String, environment: String) -> String {
        container + "/" + environment
    }

    /// The fault that fires for a request to `operation`, counting it; nil when none does.
    mutating func fireFault(operation: String) -> APNSSimulatorCloudKitFault? {
        guard let index = faults.firstIndex(where: { $0.fault.operation == nil || $0.fault.operation == operation })
        else { return nil }
        faults[index].fired += 1
        let fault = faults[index].fault
        if let times = fault.times, faults[index].fired >= times { faults.remove(at: index) }
        return fault
    }

    mutating func addFault(_ fault: APNSSimulatorCloudKitFault) -> Int? {
        guard faults.count < faultLimit else { return nil }
        let id = nextFaultID
        nextFaultID += 1
        faults.append((id, fault, 0))
        return id
    }

    /// The subscriptions a new record of `recordType` fires.
    func subscriptions(
        container: String,
        environment: String,
        recordType: String
    ) -> [APNSSimulatorCloudKitSubscription] {
        subscriptions.filter {
            $0.container == container && $0.recordType == recordType && ($0.environment ?? environment) == environment
        }
    }
}

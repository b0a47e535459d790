public import HeraldCore

/// The wake schedules API's refusals (``WakeError``).
public enum WakeDomain: RefusalDomain {}

/// Why a wake schedule request was refused: invalid, too large, not found (no schedule has the
/// id), limit reached (as many schedules exist as are allowed), or not configured (the mode needs
/// CloudKit keys or an APNs app the server was not given).
public typealias WakeError = Refusal<WakeDomain>

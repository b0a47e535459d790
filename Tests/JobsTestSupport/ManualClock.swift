// The manual clock the job tests move is HeraldCore's; re-exported so that the test targets
// importing this one keep finding it.
@_exported public import HeraldCore

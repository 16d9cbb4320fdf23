import GeolocateConfig
import GeolocateModel

/// One risk event as the command line asked for it; `nil` fields were not given.
package struct TriggerRequest: Sendable {
    package var action: String
    package var mode: CollectionMode
    package var timeoutMilliseconds: Int64?
    /// `--permission`: the permissions granted for this call (`[]` for none), instead of config `permissions`.
    package var permission: [Permission]?
    package var now: Int64?
    package var source: SourceSpecifier?
    package var replaySpeed: ReplaySpeed
    /// `--policy` (or `--enforce`): the record carries a policy decision.
    package var policy: Bool
    /// `--pam`: who the login hook runs for, carried in the record.
    package var subject: Subject?
    /// When the action began (a `nowSeconds` reading of the command's monotonic clock): the
    /// gate's start, so its query and the previous report's lock end by its own deadline;
    /// `nil` for when the trigger begins.
    package var startedAt: Double?

    package init(action: String, mode: CollectionMode = .default, timeoutMilliseconds: Int64? = nil,
                 permission: [Permission]? = nil, now: Int64? = nil, source: SourceSpecifier? = nil,
                 replaySpeed: ReplaySpeed = .asap, policy: Bool = false, subject: Subject? = nil) {
        self.action = action
        self.mode = mode
        self.timeoutMilliseconds = timeoutMilliseconds
        self.permission = permission
        self.now = now
        self.source = source
        self.replaySpeed = replaySpeed
        self.policy = policy
        self.subject = subject
    }
}

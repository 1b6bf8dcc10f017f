/// `expensectl`'s exit statuses (sysexits.h), documented in expensectl(1).
enum ExitStatus: Int32, Sendable {
    case success = 0
    /// The daemon refused the operation: no such expense, ambiguous id, wrong state.
    case refused = 1
    case usage = 64
    case dataError = 65
    case noInput = 66
    case unavailable = 69
    case software = 70
    case ioError = 74
    case tempFailure = 75
    case noPermission = 77

    /// The status for an error code the daemon answered with.
    init(errorCode: String) {
        switch errorCode {
        case "invalid_field", "unknown_field", "missing_field", "receipt_invalid", "receipt_too_large", "receipt_missing":
            self = .dataError
        case "not_found", "ambiguous_id", "invalid_state", "conflict":
            self = .refused
        case "permission_denied":
            self = .noPermission
        case "too_many_connections", "shutting_down", "idle_timeout":
            self = .tempFailure
        case "storage_failed":
            self = .ioError
        default:
            self = .software
        }
    }
}

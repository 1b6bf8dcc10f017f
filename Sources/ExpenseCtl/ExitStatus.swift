import ExpenseCore

extension ExitStatus {
    /// The daemon refused the operation: no such expense, ambiguous id, wrong state.
    static var refused: ExitStatus { .failure }

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

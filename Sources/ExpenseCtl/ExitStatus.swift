import ControlProtocol
import ExpenseCore

extension ExitStatus {
    /// The daemon refused the operation: no such expense, ambiguous id, wrong state.
    static var refused: ExitStatus { .failure }

    /// The status for an error code the daemon answered with.
    init(errorCode: ControlErrorCode) {
        switch errorCode {
        case .invalidField, .unknownField, .missingField, .receiptInvalid, .receiptTooLarge, .receiptMissing:
            self = .dataError
        case .notFound, .ambiguousID, .invalidState, .conflict:
            self = .refused
        case .permissionDenied, .noAccount:
            self = .noPermission
        case .tooManyConnections, .shuttingDown, .idleTimeout:
            self = .tempFailure
        case .storageFailed:
            self = .ioError
        default:
            self = .software
        }
    }
}

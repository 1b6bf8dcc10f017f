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
        case .notFound, .ambiguousID, .invalidState, .conflict, .noReceipt:
            self = .refused
        case .receiptDamaged:
            self = .dataError
        case .serverUnreachable:
            self = .tempFailure
        case .serverRefused:
            self = .unavailable
        case .permissionDenied, .noAccount:
            self = .noPermission
        case .tooManyConnections, .shuttingDown, .idleTimeout:
            self = .tempFailure
        case .outboxFull:
            // Room frees as the server takes what is queued: try again later.
            self = .tempFailure
        case .storageFailed:
            self = .ioError
        default:
            self = .software
        }
    }
}

import ExpenseCore
import Posix

/// Why a receipt was not taken.
public enum ReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLarge(limit: Int)
    /// Not a receipt (not a regular file, empty, not of a kind ReceiptKind names, damaged).
    case invalid(String)
    /// A valid start of a receipt of this kind that ends before its
    /// structure does: perhaps still being written.
    case truncated(ReceiptKind, String)
    case io(SystemCallError)

    /// Why, as a predicate about the file: "is truncated: …".
    public var reason: String {
        switch self {
        case .tooLarge(let limit): "is larger than the limit of \(limit) bytes"
        case .invalid(let why), .truncated(_, let why): why
        case .io(let error): "cannot be stored: \(error)"
        }
    }

    public var description: String { "receipt \(reason)" }
}

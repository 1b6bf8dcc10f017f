import ExpenseCore

/// Why a user could not be added.
public enum UserError: Error, CustomStringConvertible {
    case invalidName(String)
    case exists(String)

    public var description: String {
        switch self {
        case .invalidName(let name):
            "invalid user name '\(LogText.printable(name, limit: 64))': use 1 to 64 letters, digits, '.', '_', '-' or '@'"
        case .exists(let name): "user '\(name)' already exists"
        }
    }
}

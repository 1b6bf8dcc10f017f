import ExpenseCore

/// Why a user could not be added or changed.
public enum UserError: Error, CustomStringConvertible, Equatable {
    case invalidName(String)
    case exists(String)
    case notFound(String)
    case deactivated(String)

    public var description: String {
        switch self {
        case .invalidName(let name):
            "invalid user name \(LogText.quoted(name, limit: 64)): a user name is 1 to 64 of the ASCII letters A-Z and a-z, the digits 0-9, '.', '_', '-' and '@', and not '.' or '..'"
        case .exists(let name): "user '\(name)' already exists"
        case .notFound(let name): "no user '\(name)'"
        case .deactivated(let name): "user '\(name)' is deactivated: it keeps its expenses and gets no token again"
        }
    }
}

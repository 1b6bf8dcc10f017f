/// The paths the API serves (contract.md, "Endpoints").
enum Route: Equatable {
    /// `/healthz`
    case health
    /// `/v1/expenses`
    case expenses
    /// `/v1/expenses/{transaction_id}`
    case expense(String)
    /// `/v1/expenses/{transaction_id}/receipt`
    case receipt(String)
    /// `/v1/uploads/{id}`: a resumable upload (contract.md, "Resumable uploads").
    case upload(String)

    /// The route of `path`, matched exactly (no trailing slash, no escapes).
    init?(path: String) {
        switch path {
        case "/healthz": self = .health
        case "/v1/expenses": self = .expenses
        default:
            let uploads = "/v1/uploads/"
            if path.hasPrefix(uploads) {
                let id = path.dropFirst(uploads.count)
                guard !id.isEmpty, !id.contains("/") else { return nil }
                self = .upload(String(id))
                return
            }
            let prefix = "/v1/expenses/"
            guard path.hasPrefix(prefix) else { return nil }
            let rest = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
            switch rest.count {
            case 1 where !rest[0].isEmpty: self = .expense(String(rest[0]))
            case 2 where !rest[0].isEmpty && rest[1] == "receipt": self = .receipt(String(rest[0]))
            default: return nil
            }
        }
    }

    /// Methods served here, for `405` and its `Allow` header.
    var allowedMethods: [String] {
        switch self {
        case .health: ["GET", "HEAD"]
        case .expenses: ["GET", "HEAD", "POST"]
        case .expense: ["GET", "HEAD", "PATCH", "DELETE"]
        case .receipt: ["GET", "HEAD", "POST", "PUT"]
        case .upload: ["HEAD", "PATCH", "DELETE"]
        }
    }
}

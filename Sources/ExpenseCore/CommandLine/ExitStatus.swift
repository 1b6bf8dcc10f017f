/// The exit statuses of expensed, expensectl and expense-server
/// (sysexits.h, and 1 for a plain failure), each listed in its man page.
public enum ExitStatus: Int32, Sendable {
    case success = 0
    /// expensectl: the daemon refused the operation; expense-server: a command failed.
    case failure = 1
    case usage = 64
    case dataError = 65
    case noInput = 66
    case unavailable = 69
    case software = 70
    case osError = 71
    case cannotCreate = 73
    case ioError = 74
    case tempFailure = 75
    case noPermission = 77
    case config = 78
}

import ExpenseCore
import Posix

extension ClientID {
    /// A new client id made now (the daemon passes its own clock).
    public static func make() -> String {
        make(milliseconds: Clock.wallMilliseconds)
    }
}

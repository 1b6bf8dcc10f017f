/// The operations of the control protocol, written once: the parser, the
/// daemon's table of services, `expensectl` and the docs' test all take
/// their list from here (docs/control-protocol.md, "Operations").
public enum ControlOperation: String, Sendable, CaseIterable {
    case add, list, show, retry, discard, status, watch, sync, stats, edit, delete, resolve, receipt, read
}

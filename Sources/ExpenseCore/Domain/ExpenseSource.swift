/// Where an expense came from, kept with it on this device: the spool
/// file (and sidecar) it was made of and when it was dropped, or the
/// receipt path given to `expensectl add`. Names are display forms: bytes
/// that are not printable UTF-8 appear as `\xNN`, so a hostile name cannot
/// forge a line of `show` or of the log.
public struct ExpenseSource: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// Taken from the spool.
        case spool
        /// A receipt file given to `expensectl add --receipt`.
        case file
    }

    public var kind: Kind
    /// The spool file's name (the receipt's, when a pair), or the path given to `add`.
    public var name: String
    /// The sidecar's name, when the expense's fields came from one.
    public var sidecar: String?
    /// When the spool file was dropped (its inode's change time, which a
    /// rename into the spool sets), in milliseconds since the epoch.
    public var droppedMilliseconds: Int64?

    public init(kind: Kind, name: String, sidecar: String? = nil, droppedMilliseconds: Int64? = nil) {
        self.kind = kind
        self.name = name
        self.sidecar = sidecar
        self.droppedMilliseconds = droppedMilliseconds
    }

    /// One short line: `spool:scan.jpg`, `spool:scan.jpg+scan.json`,
    /// `file:/home/ann/r.pdf`; the journal field `EXPENSE_SOURCE`.
    public var compact: String {
        "\(kind.rawValue):\(name)" + (sidecar.map { "+\($0)" } ?? "")
    }
}

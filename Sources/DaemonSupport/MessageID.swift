/// Fixed `MESSAGE_ID`s of the events worth finding in the journal
/// (docs/journal.md): `journalctl MESSAGE_ID=…` lists every occurrence.
public enum MessageID: String, Sendable {
    case expenseQueued = "3743bddee0664b02937c2ba44fbdf002"
    case expenseApplied = "783906402b934080891b5b79eef3414b"
    case needsAttention = "217ef2cedfd24a1ba9e8cf63bc61ad5e"
    case spoolRejected = "c2d1580180594f6980a08910650bd49b"
    case authPaused = "fc254255431541268849a88877fa317e"
    case receiptUploaded = "c90c68368a614c90a2a809c551a87d96"
    case expenseIncomplete = "7595d7204a654167b362fb056e8a6f12"
}

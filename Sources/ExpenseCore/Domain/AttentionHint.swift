/// What a person can do about a job that needs attention, by the class of
/// the failure that stopped it (``JobUpdate/needsAttention``, or the
/// store's `local` and `gone`). `show`, the journal and `retry` all say
/// this, so no hint names a command that cannot work.
public enum AttentionHint {
    /// Whether sending the job again can ever apply it. Only a change to an
    /// expense deleted on the server (`gone`: a 410, or a deletion a
    /// refresh brought) cannot: the server keeps a tombstone for good.
    public static func canRetry(errorClass: String?) -> Bool {
        errorClass != "gone" && errorClass != "unsupported"
    }

    /// One sentence for the job's expense `transactionID`.
    public static func text(errorClass: String?, transactionID id: String) -> String {
        let discard = "'expensectl discard \(id)' drops the expense's pending work"
        switch errorClass {
        case "gone":
            return "The expense was deleted on the server: this change can never apply, and retrying cannot help; \(discard)."
        case "unsupported":
            return "The backend cannot make this change through its API: make it there by hand (see the last error), then \(discard)."
        case "too_large":
            return "The server refuses a receipt this large (its limit is in the last error); once the limit is raised there, "
                + "'expensectl retry \(id)' sends it again; otherwise attach a smaller receipt, or \(discard)."
        case "transient":
            return "The server kept failing (see the last error); once it works again 'expensectl retry \(id)' sends it again, or \(discard)."
        case "waiting":
            return "The server never had the expense this receipt belongs to; 'expensectl retry \(id)' tries again, or \(discard)."
        case "same_receipt":
            return "Another expense of this account has the same receipt (see the last error); if this one is an expense of its own, "
                + "'expensectl retry \(id)' sends it anyway; otherwise \(discard)."
        case "local":
            return "The receipt's copy in the state directory cannot be read; 'expensectl retry \(id)' once it can, or \(discard)."
        default:
            return "The server refused this request (see the last error); 'expensectl retry \(id)' sends the same request again, "
                + "which helps only once what it objected to has changed on the server; otherwise \(discard)."
        }
    }
}

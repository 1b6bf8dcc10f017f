/// What an expense must have before a backend can create it there
/// (docs/backends.md, "Incomplete expenses"): ihatemoney's bill needs an
/// amount and a date, a beancount transaction an amount, its currency and
/// a date; expense-server takes a receipt alone. An expense without them
/// is *incomplete*: its create is held, with everything queued behind it,
/// until an edit completes it. A value; the backend declares it.
///
/// Held is not failed, as with a metered link (`MeteredHold`): the create
/// is only not claimed, so it counts no attempt, gets no backoff, notes
/// no error and wakes no timer.
public struct RequiredFields: Sendable, Equatable {
    /// The fields' JSON names, in ``ExpenseFields/names`` order.
    public let names: [String]
    /// Who needs them, for messages: `ihatemoney`, `fava`.
    public let backend: String

    /// - Parameter names: JSON names of ``ExpenseFields``; a name that is
    ///   not one is a programmer's error.
    public init(_ names: Set<String>, backend: String) {
        precondition(names.isSubset(of: ExpenseFields.names), "not a field: \(names.subtracting(ExpenseFields.names).sorted())")
        self.names = ExpenseFields.names.filter(names.contains)
        self.backend = backend
    }

    /// A backend that takes an expense with any fields, a receipt alone included.
    public static let none = RequiredFields([], backend: "")

    /// True when nothing is required: nothing is ever held.
    public var isEmpty: Bool { names.isEmpty }

    /// The required fields `fields` has no value for, in display order.
    public func missing(in fields: ExpenseFields) -> [String] {
        names.filter { fields[$0] == nil }
    }

    /// Whether a job of `kind` with `fields`, handed to the network `sends`
    /// times, is held: a create that never left (a create the server may
    /// hold is sent again as it is, never held back) and lacks a required
    /// field. The jobs behind it (its receipt, edits a sent create could
    /// not take) wait for it as they always do, so they are held with it;
    /// an edit of it merges into it and may complete it.
    public func holds(_ kind: JobKind, fields: ExpenseFields, sends: Int) -> Bool {
        kind == .create && sends == 0 && !missing(in: fields).isEmpty
    }

    /// What `view` lacks while it is held as incomplete (its create, never
    /// sent, lacks it); empty when it is not held.
    public func missing(whileHeld view: ExpenseView) -> [String] {
        guard let create = view.jobs.first(where: { $0.kind == .create }), create.state == .queued,
              holds(.create, fields: create.fields, sends: create.sends) else { return [] }
        return missing(in: create.fields)
    }

    /// Why an expense with `fields` waits, for the journal and `show`:
    /// "ihatemoney needs an amount and a date to create it"; nil when it
    /// lacks nothing.
    public func explanation(for fields: ExpenseFields) -> String? {
        let missing = missing(in: fields)
        guard !missing.isEmpty else { return nil }
        return "\(backend) needs \(Self.phrase(missing)) to create it"
    }

    /// The rule, for `status`: "ihatemoney needs an amount and a date to
    /// create an expense"; nil when nothing is required.
    public var rule: String? {
        isEmpty ? nil : "\(backend) needs \(Self.phrase(names)) to create an expense"
    }

    /// "an amount", "an amount and a date", "an amount, a currency and a date".
    public static func phrase(_ names: [String]) -> String {
        let words = names.map { name in
            let word = name.replacing("_", with: " ")
            return (word.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + word
        }
        guard words.count > 1 else { return words.first ?? "" }
        return words.dropLast().joined(separator: ", ") + " and " + words[words.count - 1]
    }
}

/// Sending paused because the server refused our token: which version of
/// the token file it refused, until a newer one is read or `sync` ends the
/// pause. (A refusal of a token the file has replaced since pauses nothing:
/// the engine checks the generation before it pauses.)
public struct CredentialsPause: Sendable, Equatable {
    /// The generation of the token refused, while paused.
    public private(set) var refusedTokenGeneration: Int?

    public init() {}

    public var isPaused: Bool { refusedTokenGeneration != nil }

    /// Pauses for the refused token of `generation`.
    /// - Returns: true when this starts the pause (to log it once).
    mutating func pause(refusedGeneration generation: Int) -> Bool {
        defer { refusedTokenGeneration = generation }
        return !isPaused
    }

    /// Ends the pause when the token read now is another than the refused
    /// one, or on `force` (`sync`).
    /// - Returns: true when it ended.
    mutating func resume(tokenGeneration generation: Int, force: Bool) -> Bool {
        guard let refused = refusedTokenGeneration, force || refused != generation else { return false }
        refusedTokenGeneration = nil
        return true
    }

    /// Ends the pause whatever the token: the server could not be reached,
    /// so the refusal says nothing of it now.
    mutating func end() {
        refusedTokenGeneration = nil
    }
}

/// What the HTTP layer is told (the `serve` options that concern it).
public struct APISettings: Sendable, Equatable {
    /// Largest receipt accepted, enforced from `Content-Length` before any byte is read.
    public var receiptMaxBytes: Int64 = 25 << 20
    /// Largest JSON body accepted.
    public var jsonMaxBytes = 64 << 10
    /// Seconds a request's body may take to arrive in full.
    public var requestTimeoutSeconds = 300
    /// Seconds a resumable upload is kept after its last append.
    public var uploadExpirySeconds: Int64 = 86_400
    public var faults = FaultInjector.Options()

    public init() {}
}

import Synchronization

/// Chaos for tests, off unless asked for (docs/server.md, "Fault
/// injection"). Every request but `/healthz` draws its decisions from one
/// seeded generator, in arrival order, so a run with the same seed and the
/// same sequence of requests injects the same faults.
public final class FaultInjector: Sendable {
    public struct Options: Sendable, Equatable {
        /// Probability of closing the connection before processing.
        public var dropRequest = 0.0
        /// Probability of processing (committing) and then closing unanswered.
        public var dropResponse = 0.0
        /// Probability of answering `503` with `Retry-After` without processing.
        public var errorRate = 0.0
        /// Delay before processing every request.
        public var delayMilliseconds = 0
        public var seed: UInt64 = 1

        public init() {}

        public var isEnabled: Bool { dropRequest > 0 || dropResponse > 0 || errorRate > 0 || delayMilliseconds > 0 }
    }

    /// What happens to one request.
    struct Decision: Sendable, Equatable {
        var dropRequest = false
        var error = false
        var dropResponse = false
    }

    let options: Options
    private let state: Mutex<UInt64>

    init(_ options: Options) {
        self.options = options
        state = Mutex(options.seed)
    }

    /// The next request's faults. Three numbers are drawn for every request,
    /// whichever faults are on, so decisions line up across configurations.
    func decide() -> Decision {
        guard options.isEnabled else { return Decision() }
        let (a, b, c) = state.withLock { s in (Self.next(&s), Self.next(&s), Self.next(&s)) }
        return Decision(dropRequest: a < options.dropRequest, error: b < options.errorRate, dropResponse: c < options.dropResponse)
    }

    /// SplitMix64, as a uniform double in [0, 1).
    private static func next(_ state: inout UInt64) -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(UInt64(1) << 53)
    }
}

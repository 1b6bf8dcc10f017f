/// A reproducible generator (SplitMix64) for property and torture tests:
/// the same seed gives the same sequence of decisions, so a failure found
/// with a printed seed can be run again.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound`.
    public mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }

    /// A generator of its own for one of several threads, derived from this
    /// one's seed, so that each thread's decisions are reproducible however
    /// the threads interleave.
    public func derived(_ stream: Int) -> SeededRandom {
        var mixer = SeededRandom(seed: state ^ (UInt64(stream) &* 0xD1B5_4A32_D192_ED03))
        return SeededRandom(seed: mixer.next())
    }
}

import DaemonSupport
import ExpenseCore
import Posix
import Synchronization

/// Keeps `metrics_file` holding the daemon's figures (``MetricsText``),
/// for node_exporter's textfile collector: written at start, then again
/// when they may have changed, at most once a second however often that
/// is (a burst of adds is one write), each time whole under a temporary
/// name and renamed over the last, so a reader never sees half a file.
final class MetricsFile: Sendable {
    let path: String
    private let logger: Logger
    private let pokes: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    /// The last write failed (and said so): said again only once one works.
    private let failing = Atomic<Bool>(false)
    /// The write, with its `fsync`s, off Swift's cooperative pool.
    private let writer = BlockingExecutor(label: "metrics", width: 1)

    /// The shortest time between two writes.
    static let gapMilliseconds: Int64 = 1000

    init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
        (pokes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// The figures may have changed. Cheap: pokes between writes collapse into one.
    func poke() { continuation.yield(()) }

    func stop() { continuation.finish() }

    /// Writes what `figures` renders, now and after each poke, until stopped.
    func run(figures: @escaping @Sendable () async -> String?) async {
        poke()
        for await _ in pokes {
            if let text = await figures() { try? await writer.run { [self] in write(text) } }
            try? await Task.sleep(for: .milliseconds(Self.gapMilliseconds))
        }
    }

    private func write(_ text: String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        do {
            // node_exporter reads it as another user: world-readable, as its own
            // files are. Made again at every start: no fsync twice a second.
            try FileSystem.replaceAtomically(Array(text.utf8), to: name, in: directory, mode: 0o644)
            if failing.exchange(false, ordering: .relaxed) { logger.notice("Metrics file '\(path)' written again") }
        } catch {
            if !failing.exchange(true, ordering: .relaxed) {
                logger.warning("Failed to write metrics file '\(path)': \(error.reason); trying again when the figures change, ignoring")
            }
        }
    }
}

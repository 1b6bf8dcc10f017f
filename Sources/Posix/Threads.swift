internal import CShims

/// Dedicated threads for blocking loops (`poll`, `read`, `curl_multi_poll`),
/// which must stay off Swift's cooperative pool: it has one thread per core.
public enum Threads {
    private final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Runs `body` on a new detached thread named `name` (15 bytes shown).
    /// Wraps `pthread_create(3)`.
    public static func spawn(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        let rc = cshims_thread_start({ raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            box.body()
        }, box, name)
        // Thread creation fails only when the process is out of resources;
        // nothing can run without its loops.
        precondition(rc == 0, "pthread_create failed: \(rc)")
    }
}

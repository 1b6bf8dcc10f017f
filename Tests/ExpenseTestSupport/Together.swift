import Foundation
import Synchronization

/// Runs `body(index)` for each index below `count`, each on a thread of its
/// own, all released at once when every thread is ready: the way to make
/// requests race. Returns each result in index order; one still running
/// after `timeout` seconds is a failure.
public func together<T: Sendable>(_ count: Int, timeout: Double = 120, _ body: @escaping @Sendable (Int) throws -> T) -> [Result<T, Error>] {
    let results = Mutex<[Result<T, Error>?]>(Array(repeating: nil, count: count))
    let ready = DispatchGroup()
    let gate = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for index in 0..<count {
        ready.enter()
        done.enter()
        Thread {
            ready.leave()
            gate.wait()
            let result = Result { try body(index) }
            results.withLock { $0[index] = result }
            done.leave()
        }.start()
    }
    ready.wait()
    for _ in 0..<count { gate.signal() }
    _ = done.wait(timeout: .now() + timeout)
    return results.withLock { $0 }.map { $0 ?? .failure(TestFailure("still running after \(timeout) s")) }
}

import ExpenseCore
import OutboxStore
import Posix

extension Drainer {
    /// Fetches what changed on the server since the stored cursor and
    /// upserts it (tombstones included), page by page, storing the cursor
    /// with each page. Runs inside a pass, so refreshes never overlap.
    /// - Returns: why the pass must stop (unreachable, refused credentials), or nil.
    func refresh() async -> Stop? {
        state.withLock { $0.refreshRequested = false }
        var cursor = try? await store.refreshCursor()
        var fetched = 0
        for _ in 0..<10_000 where !isStopping {
            let (token, _, generation) = tokens.current()
            let reply = await backend.fetchChanges(since: cursor, token: token)
            if case .unanswered(let reason) = reply {
                noteUnreachable("Server unreachable (\(reason)); refresh and sending wait for it", reason: reason)
                return .unreachable
            }
            markProgress()
            let now = Clock.wallMilliseconds
            let page: ChangesPage
            switch reply {
            case .unanswered:
                preconditionFailure("handled above")
            case .refused(let code):
                noteAnswer { $0.answered(at: now) }
                return pauseForCredentials(refusedGeneration: generation, code: code) ? .credentials : nil
            case .failed(let failure):
                noteAnswer { $0.failed(failure.outcome.className, "refresh: \(failure.summary)", at: now) }
                logger.warning("Refresh failed: server answered \(failure.summary); trying again at the next refresh")
                state.withLock { $0.lastRefresh = Clock.monotonicNanoseconds }
                return nil
            case .malformed:
                noteAnswer { $0.succeeded(at: now) }
                logger.warning("Refresh failed: the server's listing is not what contract.md describes; trying again at the next refresh")
                state.withLock { $0.lastRefresh = Clock.monotonicNanoseconds }
                return nil
            case .page(let p):
                noteAnswer { $0.succeeded(at: now) }
                page = p
            }
            do {
                _ = try await store.storeRefreshPage(page.expenses, cursor: page.nextCursor, now: Clock.wallMilliseconds)
            } catch {
                logger.error("Failed to store refreshed expenses: \(error)")
                return nil
            }
            fetched += page.expenses.count
            cursor = page.nextCursor ?? cursor
            if !page.hasMore || page.nextCursor == nil { break }
        }
        state.withLock { $0.lastRefresh = Clock.monotonicNanoseconds }
        if fetched > 0 {
            logger.info("Refreshed \(fetched) expense(s) from the server")
            onChange()
        }
        return nil
    }
}

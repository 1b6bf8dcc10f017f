import ExpenseCore
import OutboxStore
import Posix

extension Drainer {
    /// Fetches what changed on the server since the stored cursor and
    /// upserts it (tombstones included), page by page, storing the cursor
    /// with each page. Runs inside a pass, so refreshes never overlap.
    /// Each account's changes come with its own token and cursor, and are
    /// cached as its own; a paused account, or one without a token, waits.
    /// - Returns: why the pass must stop (unreachable, refused credentials), or nil.
    func refresh() async -> Stop? {
        state.withLock { $0.refreshRequested = false }
        let paused = record.current.pausedAccounts
        var fetched = 0
        for account in tokens.accountsToRefresh() where !paused.contains(account) && !isStopping {
            let source = tokens.source(for: account)
            source.reloadIfDue()
            if tokens.holdsWithoutToken(account) && source.latest().token == nil { continue }
            let (stop, count) = await refresh(account: account, source: source)
            fetched += count
            if stop == .unreachable || stop == .credentials { return stop }
        }
        state.withLock { $0.lastRefresh = Clock.monotonicNanoseconds }
        if fetched > 0 {
            logger.info("Refreshed \(fetched) expense(s) from the server")
            onChange()
        }
        return nil
    }

    /// One account's refresh: its pages since its cursor.
    /// - Returns: why the pass must stop, or nil; and how many expenses came.
    private func refresh(account: String, source: TokenSource) async -> (Stop?, Int) {
        var cursor = try? await store.refreshCursor(account: account)
        var fetched = 0
        for _ in 0..<10_000 where !isStopping {
            let (token, _, generation) = source.current()
            let reply = await backend.fetchChanges(since: cursor, token: token, account: account)
            if case .unanswered(let reason) = reply {
                noteUnreachable("Server unreachable (\(reason)); refresh and sending wait for it", reason: reason)
                return (.unreachable, fetched)
            }
            markProgress()
            let now = Clock.wallMilliseconds
            let page: ChangesPage
            switch reply {
            case .unanswered:
                preconditionFailure("handled above")
            case .refused(let code):
                noteAnswer { $0.answered(at: now) }
                let paused = await pauseForCredentials(account: account, refusedGeneration: generation, code: code)
                return (paused && tokens.directory == nil ? .credentials : nil, fetched)
            case .failed(let failure):
                noteAnswer { $0.failed(account: account, failure.outcome.className, "refresh: \(failure.summary)", at: now) }
                logger.warning("Refresh failed: server answered \(failure.summary); trying again at the next refresh", account: account)
                return (nil, fetched)
            case .malformed:
                noteAnswer { $0.succeeded(account: account, at: now) }
                logger.warning("Refresh failed: the server's listing is not what contract.md describes; trying again at the next refresh", account: account)
                return (nil, fetched)
            case .page(let p):
                noteAnswer { $0.succeeded(account: account, at: now) }
                page = p
            }
            do {
                _ = try await store.storeRefreshPage(page.expenses, cursor: page.nextCursor, now: Clock.wallMilliseconds, account: account)
            } catch {
                logger.error("Failed to store refreshed expenses: \(error)", account: account)
                return (nil, fetched)
            }
            fetched += page.expenses.count
            cursor = page.nextCursor ?? cursor
            if !page.hasMore || page.nextCursor == nil { break }
        }
        return (nil, fetched)
    }
}

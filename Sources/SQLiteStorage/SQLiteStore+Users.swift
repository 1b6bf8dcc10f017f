import ServerStorage
import SQLite

extension SQLiteStore {
    public func insertUser(name: String, tokenHash: String, isAdmin: Bool, createdAt: String) throws -> Bool {
        try write { w in
            try w.db.execute("INSERT INTO users (name, token_hash, is_admin, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
                             [.text(name), .text(tokenHash), .integer(isAdmin ? 1 : 0), .text(createdAt)])
            return w.db.changes == 1
        }
    }

    public func users() throws -> [UserRecord] {
        try read { db in
            try db.query("SELECT \(UserRecord.columns) FROM users ORDER BY name") { UserRecord(row: $0) }
        }
    }

    public func account(forTokenHash tokenHash: String) throws -> Account? {
        try read { db in
            try db.queryFirst("SELECT id, name, is_admin FROM users WHERE token_hash = ? AND state = 'active'", [.text(tokenHash)]) {
                Account(id: $0.int64(0), name: $0.string(1), isAdmin: $0.bool(2))
            }
        }
    }

    public func replaceToken(name: String, tokenHash: String) throws -> UserUpdate {
        try write { w in
            try w.db.execute("UPDATE users SET token_hash = ?, state = 'active' WHERE name = ? AND state <> 'deactivated'",
                             [.text(tokenHash), .text(name)])
            return try Self.endSessions(w.db, name: name)
        }
    }

    public func setState(name: String, _ state: UserState) throws -> UserUpdate {
        try write { w in
            try w.db.execute("UPDATE users SET state = ? WHERE name = ? AND state <> 'deactivated'", [.text(state.rawValue), .text(name)])
            return try Self.endSessions(w.db, name: name)
        }
    }

    /// After an update of `name`'s row: its sessions end when it changed;
    /// otherwise why it did not.
    private static func endSessions(_ db: Connection, name: String) throws -> UserUpdate {
        guard db.changes == 0 else {
            try db.execute("DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE name = ?)", [.text(name)])
            return .updated
        }
        return try db.scalarInt("SELECT count(*) FROM users WHERE name = ?", [.text(name)]) == 0 ? .noSuchUser : .deactivated
    }
}

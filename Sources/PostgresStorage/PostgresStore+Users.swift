import Postgres
import ServerStorage

extension PostgresStore {
    public func insertUser(name: String, tokenHash: String, isAdmin: Bool, createdAt: String) throws -> Bool {
        try write { writer in
            try writer.db.execute("INSERT INTO users (name, token_hash, is_admin, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT (name) DO NOTHING",
                                  [.text(name), .text(tokenHash), .bool(isAdmin), .text(createdAt)]) == 1
        }
    }

    public func users() throws -> [UserRecord] {
        try read { db in
            try db.query("SELECT \(UserRecord.columns) FROM users ORDER BY name") { UserRecord(row: $0) }
        }
    }

    public func account(forTokenHash tokenHash: String) throws -> Account? {
        try read { db in
            try db.queryFirst("SELECT id, name, is_admin FROM users WHERE token_hash = $1 AND state = 'active'", [.text(tokenHash)]) {
                Account(id: $0.int64(0), name: $0.string(1), isAdmin: $0.bool(2))
            }
        }
    }

    public func replaceToken(name: String, tokenHash: String) throws -> UserUpdate {
        try write { writer in
            let changed = try writer.db.execute("UPDATE users SET token_hash = $1, state = 'active' WHERE name = $2 AND state <> 'deactivated'",
                                                [.text(tokenHash), .text(name)])
            return try Self.endSessions(writer.db, name: name, changed: changed)
        }
    }

    public func setState(name: String, _ state: UserState) throws -> UserUpdate {
        try write { writer in
            let changed = try writer.db.execute("UPDATE users SET state = $1 WHERE name = $2 AND state <> 'deactivated'",
                                                [.text(state.rawValue), .text(name)])
            return try Self.endSessions(writer.db, name: name, changed: changed)
        }
    }

    /// After an update of `name`'s row: its sessions end when it changed;
    /// otherwise why it did not.
    private static func endSessions(_ db: Connection, name: String, changed: Int) throws -> UserUpdate {
        guard changed == 0 else {
            _ = try db.execute("DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE name = $1)", [.text(name)])
            return .updated
        }
        return try db.scalarInt("SELECT count(*) FROM users WHERE name = $1", [.text(name)]) == 0 ? .noSuchUser : .deactivated
    }
}

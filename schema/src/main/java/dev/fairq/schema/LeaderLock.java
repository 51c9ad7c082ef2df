package dev.fairq.schema;

import org.jooq.DSLContext;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The active scheduler's lock: a PostgreSQL session advisory lock, held on a dedicated connection (never a
 * pooled one: the lock belongs to the session, and a pool would hand that session to someone else). When the
 * holder's process dies or its connection is terminated, PostgreSQL drops the lock.
 */
public final class LeaderLock {
    /** Advisory lock key: two ints, "fairq" and "scheduler". */
    private static final int LOCK_CLASS = 1717658993, LOCK_ID = 1;
    private static final String TRY_LOCK = "SELECT pg_try_advisory_lock(" + LOCK_CLASS + ", " + LOCK_ID + ")";
    /**
     * Some session holds the lock (a two-int advisory lock shows its keys as classid and objid) in this database:
     * pg_locks shows the whole cluster's, and a fairq on another database of the same server (staging beside
     * production) holds a lock with the same keys, which made this one's health check report a leader it did not have.
     */
    private static final NamedSql HELD = NamedSql.of("SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
            + "AND granted AND classid = " + LOCK_CLASS + " AND objid = " + LOCK_ID
            + " AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))");

    private LeaderLock() {}

    /** Tries the lock on this session: true when this session holds it (now or already). */
    public static boolean tryLock(Connection c) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(TRY_LOCK)) {
            rs.next();
            return rs.getBoolean(1);
        }
    }

    /** Whether any session, this process's or another's, holds the lock now. */
    public static boolean held(DSLContext db) {
        return Boolean.TRUE.equals(HELD.bind().fetch(db).get(0).get(0, Boolean.class));
    }
}

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

    /**
     * Ends the session holding the lock when it has run no statement for longer than the stall (a healthy leader
     * runs one every tick, at least every idle interval): its process is frozen (SIGSTOP, a long pause, a VM
     * migration) while its connection stays up, so PostgreSQL would keep the lock for it forever. Safe because a
     * leader admits only on that session: once it is gone the old process cannot admit anything.
     */
    private static final String END_STALLED = "SELECT count(*) FILTER (WHERE pg_terminate_backend(l.pid)) FROM pg_locks l "
            + "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND l.classid = "
            + LOCK_CLASS + " AND l.objid = " + LOCK_ID + " AND l.objsubid = 2"
            + " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            + " AND a.state <> 'active' AND a.state_change < clock_timestamp() - make_interval(secs => ?)";

    private LeaderLock() {}

    /** Ends the lock holder's session if it has been idle longer than {@code stall} (see END_STALLED): true if it did. */
    public static boolean endStalledHolder(Connection c, java.time.Duration stall) throws SQLException {
        try (java.sql.PreparedStatement s = c.prepareStatement(END_STALLED)) {
            s.setDouble(1, stall.toMillis() / 1000.0);
            try (ResultSet rs = s.executeQuery()) {
                rs.next();
                return rs.getLong(1) > 0;
            }
        }
    }

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

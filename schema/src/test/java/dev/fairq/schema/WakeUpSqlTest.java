package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Where the workers' wake-up (NOTIFY fairq_ready) is sent: in the statement for a caller that owns no transaction
 * boundary, or, quietly, by the caller once its statement committed ({@link Waker}: a NOTIFY holds the notification
 * queue's lock through its transaction's commit, so the API and the scheduler send theirs on their own).
 */
class WakeUpSqlTest extends StoreTestSupport {

    /**
     * The notifications on fairq_ready that {@code action} sent: after it returns, a marker is sent on the same
     * channel, and PostgreSQL delivers notifications in commit order, so everything before the marker is the action's.
     */
    private List<String> readyNotificationsOf(Runnable action) throws Exception {
        List<String> got = new ArrayList<>();
        try (Connection listen = Database.dedicated(db.jdbcUrl, db.user, db.password, "wake-listener")) {
            try (Statement s = listen.createStatement()) {
                s.execute("LISTEN fairq_ready");
            }
            action.run();
            dsl.execute("SELECT pg_notify('fairq_ready', 'marker')");
            PGConnection pg = listen.unwrap(PGConnection.class);
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (System.nanoTime() < deadline) {
                PGNotification[] ns = pg.getNotifications(500);
                if (ns == null) continue;
                for (PGNotification n : ns) {
                    if (n.getParameter().equals("marker")) return got;
                    got.add(n.getName());
                }
            }
        }
        throw new AssertionError("the marker notification never arrived; before it: " + got);
    }

    @Test
    void theQuietAdmissionWakesNoOneAndTheWakeAfterItDoes() throws Exception {
        long a = enqueue(job(T1)), b = enqueue(job(T1));
        assertEquals(List.of(), readyNotificationsOf(
                () -> assertEquals(List.of(a), store.admitQuietly(dsl, List.of(a), List.of(1.0)))));
        assertEquals(JobStatus.ready, status(a));
        assertEquals(List.of("fairq_ready"), readyNotificationsOf(() -> store.leases().wakeWorkers(dsl)));
        // the admission a caller without a waker uses still wakes in its statement
        assertEquals(List.of("fairq_ready"), readyNotificationsOf(
                () -> assertEquals(List.of(b), store.admit(dsl, List.of(b), List.of(2.0)))));
    }

    @Test
    void anUnflushedEnqueueUsesTheGrantButLeavesTheWakeToItsCaller() throws Exception {
        store.admission().grant(dsl, List.of(T1, T2));
        List<EnqueueResult> quiet = new ArrayList<>();
        assertEquals(List.of(), readyNotificationsOf(
                () -> quiet.addAll(store.enqueueAllUnflushed(dsl, List.of(job(T1).build())))));
        assertEquals(JobStatus.ready, quiet.get(0).job().getStatus(), "the grant admitted it in its enqueue");
        assertEquals(JobStatus.ready, status(quiet.get(0).job().getId()));
        // the API's with FAIRQ_SUBMIT_START=flush: as quiet
        store.admission().grant(dsl, List.of(T1));
        assertEquals(List.of(), readyNotificationsOf(
                () -> quiet.addAll(store.enqueueAllWakingAfterCommit(dsl, List.of(job(T1).build())))));
        assertEquals(JobStatus.ready, quiet.get(1).job().getStatus());
        // the application's own enqueue (in its transaction) wakes the workers at its commit
        List<EnqueueResult> own = new ArrayList<>();
        assertEquals(List.of("fairq_ready"), readyNotificationsOf(
                () -> own.addAll(store.enqueueAll(dsl, List.of(job(T2).build())))));
        assertEquals(JobStatus.ready, own.get(0).job().getStatus());
    }
}

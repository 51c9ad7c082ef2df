package dev.fairq.scheduler;

import dev.fairq.schema.Database;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.SettableClock;
import dev.fairq.testing.TestDatabase;
import org.jooq.DSLContext;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link Scheduler} on a {@link SettableClock}, ticked by the test against the real test database. Nothing runs
 * in the background: every admission happens inside {@link #tick()}, so a test decides exactly what the
 * scheduler sees and when. Workers are simulated by {@link #completeReady()} (frees the buffer by marking
 * the admitted jobs succeeded) or by {@link JobStore#claim}/{@link JobStore#finish} where a test needs the
 * real running/finished life cycle.
 */
final class SimulatedScheduler {
    final TestDatabase db;
    final DSLContext dsl;
    /** The queue's clock: statements and the scheduler's monotonic time move only when the test says so. */
    final SettableClock clock = new SettableClock();
    final JobStore store = new JobStore(clock);
    final Scheduler scheduler;

    /** Receives the wake-ups the database sends (enqueues, retries, promotions name their tenant), as the service does. */
    private final Connection listener;

    SimulatedScheduler(TestDatabase db, SchedulerConfig config) {
        this.db = db;
        this.dsl = db.dsl();
        this.scheduler = new Scheduler(store, config);
        try {
            listener = Database.dedicated(db.jdbcUrl, db.user, db.password, "simulated-scheduler");
            try (Statement s = listener.createStatement()) {
                s.execute("LISTEN fairq_jobs");
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    Scheduler.TickResult tick() {
        deliverWakeUps();
        return scheduler.tick(dsl);
    }

    /** Hands the scheduler every wake-up committed so far (a round trip collects those the server sent). */
    void deliverWakeUps() {
        for (PGNotification n : pendingWakeUps()) scheduler.onWakeUp(n.getParameter());
    }

    /** Loses every wake-up committed so far (the scheduler never hears of them). */
    void dropWakeUps() {
        pendingWakeUps();
    }

    private PGNotification[] pendingWakeUps() {
        try (Statement s = listener.createStatement()) {
            s.execute("SELECT 1");
            PGNotification[] ns = listener.unwrap(PGConnection.class).getNotifications();
            return ns == null ? new PGNotification[0] : ns;
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The simulated workers run every ready job to completion at once (no claim, just frees the buffer). */
    int completeReady() {
        return dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE status = 'ready'");
    }

    /** One admission round followed by the simulated workers emptying the buffer; the round's picks in order. */
    List<String> round() {
        List<String> admitted = tick().admittedTenants();
        completeReady();
        return admitted;
    }

    /** Rounds until at least {@code n} admissions were made; returns all of them in admission order. */
    List<String> admissions(int n) {
        List<String> out = new ArrayList<>();
        int idle = 0;
        while (out.size() < n) {
            List<String> r = round();
            out.addAll(r);
            idle = r.isEmpty() ? idle + 1 : 0;
            if (idle > 3) throw new AssertionError("the scheduler stopped admitting after " + out.size() + " of " + n);
        }
        return out;
    }

    void enqueue(List<JobRequest> requests) {
        store.enqueueAll(dsl, requests);
    }

    /** {@code n} plain jobs of one tenant, due a minute ago (so the database clock never holds them back). */
    static List<JobRequest> jobs(String tenant, int n) {
        return jobs(tenant, n, b -> b);
    }

    /** {@code n} jobs as {@link #jobs(String, int)}, each builder passed through {@code with} (a key, a type). */
    static List<JobRequest> jobs(String tenant, int n, java.util.function.UnaryOperator<JobRequest.Builder> with) {
        OffsetDateTime due = OffsetDateTime.now(ZoneOffset.UTC).minusMinutes(1);
        List<JobRequest> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) out.add(with.apply(JobRequest.builder(tenant, "noop").runAt(due)).build());
        return out;
    }

    long count(String sql, Object... binds) {
        return db.count(sql, binds);
    }

    static long countOf(List<String> admissions, String tenant) {
        return admissions.stream().filter(tenant::equals).count();
    }
}

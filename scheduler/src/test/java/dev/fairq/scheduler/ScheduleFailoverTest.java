package dev.fairq.scheduler;

import dev.fairq.schema.Database;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.SettableClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Schedules through a failover: two {@link SchedulerService}s on their own connections fire 200 every-minute
 * schedules on a settable clock (a minute passes when the test says so); the leader's session is killed while
 * a minute's fires are being handled, the standby takes over, and every schedule still has exactly one job per
 * minute: none twice, none missing.
 */
class ScheduleFailoverTest extends ScheduleTenantsTest {
    static final int SCHEDULES = 200;
    final List<SchedulerService> services = new ArrayList<>();
    SettableClock clock;
    JobStore store;

    @BeforeEach
    void schedules() {
        clock = new SettableClock(START);
        store = new JobStore(clock);
        ScheduleService schedules = new ScheduleService(store);
        for (int i = 0; i < SCHEDULES; i++) {
            schedules.put(dsl, i % 2 == 0 ? "acme" : "globex", "every-minute-" + i, ScheduleDefinition.builder(
                    "* * * * *", i % 3 == 0 ? "Europe/Berlin" : "UTC", ScheduleDefinition.JobTemplate.of("report")).build());
        }
    }

    @AfterEach
    void stop() {
        services.forEach(SchedulerService::close);
    }

    private SchedulerService start(String name, AtomicBoolean partitioned) {
        SchedulerConfig config = SchedulerConfig.builder().fixedBuffer(4, 4).build();
        // small batches, so that a minute's 200 fires take several transactions and the kill lands among them
        ScheduleFirer firer = new ScheduleFirer(store, ScheduleObserver.NONE, ScheduleFirer.DEFAULT_LOOKAHEAD,
                ScheduleFirer.DEFAULT_MISSED_AFTER, 10, Duration.ofMillis(20));
        SchedulerService s = new SchedulerService(new Scheduler(store, config), firer, store, config, () -> {
            if (partitioned.get()) throw new SQLException(name + " is cut off from the database (simulated)");
            return Database.dedicated(db.jdbcUrl, db.user, db.password, name);
        });
        services.add(s);
        return s.start();
    }

    private long jobs() {
        return db.count("SELECT count(*) FROM jobs");
    }

    @Test
    void aFailoverWhileAMinutesFiresAreHandledFiresEachOfThemExactlyOnce() {
        AtomicBoolean onePartitioned = new AtomicBoolean(), twoPartitioned = new AtomicBoolean();
        SchedulerService one = start("sched-fire-1", onePartitioned), two = start("sched-fire-2", twoPartitioned);
        await().atMost(Duration.ofSeconds(20)).until(() -> one.isLeader() ^ two.isLeader());
        int minutes = 6;
        for (int m = 1; m <= minutes; m++) {
            clock.advance(Duration.ofSeconds(60)); // 12:0m:10: the fire of 12:0m is due (10 s late)
            if (m == 3) {
                long before = jobs();
                await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(1)).until(() -> jobs() > before);
                SchedulerService leader = one.isLeader() ? one : two;
                (leader == one ? onePartitioned : twoPartitioned).set(true);
                long killed = db.count("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                        + "WHERE application_name = ?", leader == one ? "sched-fire-1" : "sched-fire-2");
                assertTrue(killed >= 1, "the leader's sessions (admission, maintenance, firing) were killed");
                System.out.printf("SCHEDULE-FAILOVER killed the leader with %d of %d fires of minute 3 enqueued%n",
                        jobs() - before, SCHEDULES);
            }
            long expected = (long) SCHEDULES * m;
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> jobs() >= expected);
            assertEquals(expected, jobs(), "minute " + m);
        }
        assertEquals((long) SCHEDULES * minutes, db.count("SELECT count(DISTINCT (tenant_id, job_key)) FROM jobs"));
        // each schedule: the fires 12:01 .. 12:06, one job each
        assertEquals(SCHEDULES, db.count("SELECT count(DISTINCT (tenant_id, left(job_key, -21))) FROM jobs"));
        assertEquals(0, db.count("""
                SELECT count(*) FROM (SELECT tenant_id, left(job_key, -21), count(*) AS n,
                                             min(right(job_key, 20)) AS first, max(right(job_key, 20)) AS last
                                      FROM jobs GROUP BY 1, 2) x
                WHERE n <> ? OR first <> '2026-06-01T12:01:00Z' OR last <> '2026-06-01T12:06:00Z'""", minutes));
        assertEquals(0, db.count("SELECT count(*) FROM schedules WHERE skipped > 0 OR fired <> ?", minutes));
    }
}

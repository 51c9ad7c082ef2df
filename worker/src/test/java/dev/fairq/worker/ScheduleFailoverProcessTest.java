package dev.fairq.worker;

import org.junit.jupiter.api.AfterEach;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.QueueClock;
import dev.fairq.schema.Schedules;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The active scheduler is a separate process, SIGKILLed while it is firing 5,000 schedules that are due at the
 * same instant (five batches of 1,000: the kill lands after the first commits). The standby (this JVM) takes
 * over and fires the rest: every schedule gets exactly one job for that instant, none twice, none missing.
 * missed_runs is run_all, so that a loaded machine making the fire more than 60 s late still fires it once.
 */
class ScheduleFailoverProcessTest extends PlatformTest {
    private static final int SCHEDULES = 5_000;
    private static final String CHILD = "fairq-child-scheduler-fire";
    private Process child;

    @Override
    void prepareDatabase() {
        db.createTenant("acme");
        db.createTenant("globex");
    }

    @AfterEach
    void stopWhatTheTestStarted() throws Exception {
        if (child != null) child.destroyForcibly().waitFor();
    }

    private long lockHolders(String applicationName) {
        return db.count("""
                SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = ? AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())""", applicationName);
    }

    private OffsetDateTime dbNow() {
        return db.dsl().resultQuery("SELECT now()").fetchOne(0, OffsetDateTime.class);
    }

    @Test
    void sigkillOfTheSchedulerWhileItFiresLeavesEachFireExactlyOneJob() throws Exception {
        child = SchedulerProcessMain.start(db, CHILD, "fairq-child-scheduler-fire");
        await("the child process leads").atMost(Duration.ofMinutes(1)).until(() -> lockHolders(CHILD) == 1);
        SchedulerService standby = platform.startScheduler(SchedulerConfig.defaults());

        // the fire: this minute's start, due already
        Instant fire = dbNow().toInstant().truncatedTo(ChronoUnit.MINUTES);
        List<Schedules.Write> writes = new ArrayList<>();
        for (int i = 0; i < SCHEDULES; i++) {
            writes.add(new Schedules.Write(i % 2 == 0 ? "acme" : "globex", "s" + i, "* * * * *", "UTC", "noop", "{}",
                    "default", 0, null, null, "run_all", 10, "allow", false, null, null, fire));
        }
        new Schedules(QueueClock.SYSTEM).insertMissing(db.dsl(), writes); // one statement: all due at once
        String key = "%:" + fire; // the job_keys of this fire: schedule:<name>:<fire>
        await("the child fires").atMost(Duration.ofMinutes(2)).pollInterval(Duration.ofMillis(2))
                .until(() -> db.count("SELECT coalesce(max(id), 0) FROM jobs") >= 1);
        child.destroyForcibly().waitFor(); // SIGKILL mid-batch
        long atKill = db.count("SELECT count(*) FROM jobs WHERE job_key LIKE ?", key);

        await("the standby takes over").atMost(Duration.ofSeconds(30)).until(standby::isLeader);
        await("every schedule fired").atMost(Duration.ofMinutes(3)).pollInterval(Duration.ofMillis(200))
                .until(() -> db.count("SELECT count(*) FROM jobs WHERE job_key LIKE ?", key) >= SCHEDULES);
        System.out.printf("SCHEDULE-PROCESS-FAILOVER fires=%d jobs_at_kill=%d%n", SCHEDULES, atKill);

        assertTrue(atKill < SCHEDULES, "the kill came while the child was firing");
        assertEquals(SCHEDULES, db.count("SELECT count(*) FROM jobs WHERE job_key LIKE ?", key), "one job per fire");
        assertEquals(SCHEDULES, db.count("SELECT count(DISTINCT (tenant_id, job_key)) FROM jobs WHERE job_key LIKE ?", key));
        assertEquals(0, db.count("SELECT count(*) FROM jobs WHERE job_key NOT LIKE 'schedule:s%:%'"));
        assertEquals(0, db.count("""
                SELECT count(*) FROM (SELECT tenant_id, left(job_key, -21), count(*) FROM jobs
                                      GROUP BY 1, 2 HAVING count(*) <> count(DISTINCT job_key)) x"""));
        assertEquals(0, db.count("SELECT count(*) FROM schedules WHERE next_fire_at <= ?::timestamptz", fire.toString()),
                "every schedule moved on past the fire");
        assertEquals(0, lockHolders(CHILD));
    }
}

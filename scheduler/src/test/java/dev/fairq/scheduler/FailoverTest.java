package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.Database;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.LeaderLock;
import dev.fairq.testing.TestDatabase;
import org.jooq.DSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static dev.fairq.scheduler.SimulatedScheduler.jobs;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Leader election for real: two {@link SchedulerService}s on their own dedicated connections, real time, no
 * worker (a fixed buffer lets the leader admit on its own), and the test itself as the worker: a claim loop
 * that logs every claim into test_runs and finishes the job. Who leads is read from PostgreSQL itself (the
 * holder of the advisory lock), not only from the services' own flags.
 */
class FailoverTest {
    static final Duration TAKEOVER = Duration.ofSeconds(5);
    static final Duration LEASE = Duration.ofMinutes(5);

    final TestDatabase db = TestDatabase.get();
    final JobStore store = new JobStore();
    final List<Node> nodes = new ArrayList<>();
    DSLContext dsl;

    /** A scheduler process: its service, and a switch that cuts it off from the database (a partition). */
    final class Node {
        final String name;
        final AtomicBoolean partitioned = new AtomicBoolean();
        final SchedulerService service;

        Node(String name) {
            this.name = name;
            SchedulerConfig config = SchedulerConfig.builder().fixedBuffer(4, 4).build();
            Scheduler scheduler = new Scheduler(store, config);
            this.service = new SchedulerService(scheduler, store, config, () -> {
                if (partitioned.get()) throw new SQLException(name + " is cut off from the database (simulated)");
                return Database.dedicated(db.jdbcUrl, db.user, db.password, name);
            });
        }

        boolean leader() {
            return service.isLeader();
        }

        @Override
        public String toString() {
            return name;
        }
    }

    @BeforeEach
    void reset() {
        db.reset();
        db.createTenant("t");
        dsl = db.dsl();
    }

    @AfterEach
    void stop() {
        nodes.forEach(n -> n.service.close());
    }

    private Node start(String name) {
        Node n = new Node(name);
        nodes.add(n);
        n.service.start();
        return n;
    }

    /** The application_name of the session holding the scheduler's advisory lock; null when nobody does. */
    private String lockHolder() {
        List<String> holders = dsl.fetch("""
                SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                WHERE l.locktype = 'advisory' AND l.classid = 1717658993 AND l.objid = 1 AND l.objsubid = 2
                  AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())""").getValues(0, String.class);
        assertTrue(holders.size() <= 1, "more than one session holds the scheduler lock: " + holders);
        return holders.isEmpty() ? null : holders.get(0);
    }

    /** The backend pid of the session holding the scheduler's advisory lock; null when nobody does. */
    private Integer lockHolderPid() {
        return dsl.resultQuery("""
                SELECT l.pid FROM pg_locks l
                WHERE l.locktype = 'advisory' AND l.classid = 1717658993 AND l.objid = 1 AND l.objsubid = 2
                  AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())""").fetchOptional(0, Integer.class).orElse(null);
    }

    /** Waits until exactly one of the nodes leads, by its own flag and by the lock in PostgreSQL. */
    private Node awaitSingleLeader(Duration atMost, Node... candidates) {
        Node[] found = new Node[1];
        await().atMost(atMost).pollInterval(Duration.ofMillis(20)).until(() -> {
            Node leading = null;
            int leaders = 0;
            for (Node n : candidates) {
                if (n.leader()) {
                    leaders++;
                    leading = n;
                }
            }
            if (leaders != 1 || !leading.name.equals(lockHolder())) return false;
            found[0] = leading;
            return true;
        });
        return found[0];
    }

    /** Two nodes started together: the one that came to lead, and the other. */
    record Pair(Node leader, Node standby) {}

    /** Starts two nodes and waits (up to 20 s) until exactly one of them leads. */
    private Pair startPair() {
        Node one = start("sched-test-1"), two = start("sched-test-2");
        Node leader = awaitSingleLeader(Duration.ofSeconds(20), one, two);
        return new Pair(leader, leader == one ? two : one);
    }

    /** The claim loop, one pass: claim what is ready, log each claim, finish them. Returns jobs run so far. */
    private long claimAndRun() {
        List<ClaimedJob> claimed = store.claim(dsl, "w", 8, LEASE);
        for (ClaimedJob j : claimed) {
            dsl.execute("INSERT INTO test_runs (job_id, attempt, worker) VALUES (?, ?, 'w')", j.id(), j.attempt());
        }
        if (!claimed.isEmpty()) {
            store.finish(dsl, "w", claimed.stream().map(j -> new JobOutcome.Succeeded(j.id(), j.attempt())).toList());
        }
        return runs();
    }


    private long runs() {
        return db.count("SELECT count(*) FROM test_runs");
    }

    private void runUntil(long total) {
        await().atMost(Duration.ofSeconds(60)).pollInSameThread().pollInterval(Duration.ofMillis(10))
                .until(() -> claimAndRun() >= total);
    }

    private long activeJobs() {
        return db.count("SELECT count(*) FROM jobs WHERE status IN ('ready', 'running')");
    }

    /** Every job ran exactly once: one claim each, first attempt, all succeeded, nothing left over. */
    private void assertEachJobRanOnce(long jobs) {
        assertEquals(jobs, runs(), "claims logged");
        assertEquals(jobs, db.count("SELECT count(DISTINCT job_id) FROM test_runs"),
                "a job was claimed twice");
        assertEquals(0, db.count("SELECT count(*) FROM test_runs WHERE attempt <> 1"));
        assertEquals(jobs, db.count(
                "SELECT count(*) FROM jobs WHERE status = 'succeeded' AND attempts = 1 AND admitted_at IS NOT NULL"));
        assertEquals(0, activeJobs());
    }

    /** Kills the node's sessions and waits (in PostgreSQL, up to 5 s) until they are gone with their locks. */
    private long terminate(Node n) {
        return db.count("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
                + "WHERE application_name = ?", n.name);
    }

    private long sessionsOf(Node n) {
        return db.count("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", n.name);
    }

    @Test
    void standbyTakesOverWhenTheLeadersConnectionIsKilled() {
        Pair pair = startPair();
        Node leader = pair.leader(), standby = pair.standby();

        store.enqueueAll(dsl, jobs("t", 60));
        runUntil(20);
        assertTrue(activeJobs() <= 8, "the leader keeps the buffer at capacity + minBuffer");

        // The leader's process is cut off: its session is killed and it cannot connect again.
        leader.partitioned.set(true);
        assertTrue(terminate(leader) >= 1, "the leader's sessions (admission, and maintenance) were killed");
        await().atMost(TAKEOVER).pollInterval(Duration.ofMillis(20)).until(standby::leader);
        assertEquals(standby, awaitSingleLeader(TAKEOVER, pair.leader(), pair.standby()));

        // Admission goes on under the new leader, and no job runs twice.
        runUntil(60);
        assertEachJobRanOnce(60);

        // The old one comes back as a standby: it reconnects, but the lock stays where it is.
        leader.partitioned.set(false);
        await().atMost(Duration.ofSeconds(10)).until(() -> sessionsOf(leader) == 1);
        await().during(Duration.ofMillis(2_500)).atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
                .until(() -> !leader.leader() && standby.leader() && standby.name.equals(lockHolder()));
    }

    @Test
    void closingTheLeaderHandsOver() {
        Pair pair = startPair();
        Node leader = pair.leader(), standby = pair.standby();

        store.enqueueAll(dsl, jobs("t", 30));
        runUntil(30);

        leader.service.close();
        assertTrue(!leader.leader());
        assertEquals(standby, awaitSingleLeader(TAKEOVER, pair.leader(), pair.standby()));
        await().atMost(Duration.ofSeconds(5)).until(() -> sessionsOf(leader) == 0); // no session left behind

        store.enqueueAll(dsl, jobs("t", 30));
        runUntil(60);
        assertEachJobRanOnce(60);

        // what the health check reads: some process holds the leader's lock, until none does
        assertTrue(SchedulerService.leaderExists(dsl));
        standby.service.close();
        await().atMost(Duration.ofSeconds(10)).until(() -> !SchedulerService.leaderExists(dsl));
    }

    /**
     * Without a partition the killed leader competes for the lock again after its standbyPoll, like the
     * standby does: either may win, and nothing prefers the standby. What is guaranteed is that one of them
     * leads again within the takeover time and admission goes on with no job run twice.
     */
    @Test
    void afterAKilledConnectionSomeoneLeadsAgain() {
        Pair pair = startPair();
        Node leader = pair.leader();

        store.enqueueAll(dsl, jobs("t", 40));
        runUntil(10);
        Integer killedPid = lockHolderPid();
        assertNotEquals(null, killedPid);
        assertTrue(terminate(leader) >= 1);
        // a standby (or the old leader's new session) may hold the lock already; never the killed session
        assertNotEquals(killedPid, lockHolderPid(), "the killed session took its lock with it");
        Node next = awaitSingleLeader(TAKEOVER, pair.leader(), pair.standby());
        assertNotEquals(null, next);

        runUntil(40);
        assertEachJobRanOnce(40);
    }

    /**
     * A frozen leader (SIGSTOP, a long pause) keeps its connection and so the lock while it runs nothing: here a
     * session that took the lock and went silent. The standby ends that session after LEADER_STALL and leads;
     * the frozen one's session is gone, so it could not admit anything when it thaws.
     */
    @Test
    void aStandbyEndsAFrozenLeadersSessionAndTakesOver() throws SQLException {
        try (Connection frozen = Database.dedicated(db.jdbcUrl, db.user, db.password, "sched-frozen")) {
            assertTrue(LeaderLock.tryLock(frozen));
            Node standby = start("sched-test-1");
            store.enqueueAll(dsl, jobs("t", 20));
            assertEquals(standby, awaitSingleLeader(SchedulerService.LEADER_STALL.plus(TAKEOVER), standby));
            runUntil(20);
            assertEachJobRanOnce(20);
            assertThrows(SQLException.class, () -> LeaderLock.tryLock(frozen), "the frozen leader's session was ended");
        }
    }

    /** A healthy leader with nothing to do still runs a statement every tick: no standby takes it for frozen. */
    @Test
    void anIdleLeaderIsNotTakenForFrozen() {
        Pair pair = startPair();
        Integer pid = lockHolderPid();
        await().during(SchedulerService.LEADER_STALL.plusSeconds(3)).atMost(SchedulerService.LEADER_STALL.plusSeconds(10))
                .pollInterval(Duration.ofMillis(200))
                .until(() -> pair.leader().leader() && !pair.standby().leader() && pid.equals(lockHolderPid()));
    }

    /**
     * The new leader knows nothing of the old one's active set: it finds every tenant with work waiting (one
     * loose index scan when it takes over) and admits all of them, each job once, mid-flood.
     */
    @Test
    void aNewLeaderFindsEveryTenantWithWorkMidFlood() {
        List<String> tenants = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            String id = "f" + i;
            db.createTenant(id);
            tenants.add(id);
        }
        Pair pair = startPair();
        Node leader = pair.leader(), standby = pair.standby();
        for (String t : tenants) store.enqueueAll(dsl, jobs(t, 5));
        runUntil(300);

        leader.partitioned.set(true);
        assertTrue(terminate(leader) >= 1);
        assertEquals(standby, awaitSingleLeader(TAKEOVER, pair.leader(), pair.standby()));
        runUntil(1000);
        assertEachJobRanOnce(1000);
        assertEquals(200, db.count("SELECT count(DISTINCT tenant_id) FROM jobs WHERE status = 'succeeded'"),
                "every tenant's jobs ran");
    }
}

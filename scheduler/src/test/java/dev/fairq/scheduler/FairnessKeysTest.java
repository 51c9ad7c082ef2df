package dev.fairq.scheduler;

import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Fair shares within a tenant: its share is split among its fairness keys with jobs waiting, by weight, one level
 * below the tenants; a key that floods delays another key of the same tenant no more than a tenant that floods
 * delays another tenant. On a settable clock against the real database.
 *
 * <p>The assertions count admissions per key, so the scheduler here shares by job count
 * ({@link SchedulerConfig.FairShare#JOBS}), not the default (worker time), where the same counts would hold only
 * because every job is charged the same estimate.
 */
class FairnessKeysTest extends SimulatedSchedulerTest {
    /** A buffer of 10, shares by job count (see the class comment). */
    private static SchedulerConfig byJobs() {
        return SchedulerConfig.builder().fixedBuffer(10, 0).fairShare(SchedulerConfig.FairShare.JOBS).build();
    }

    private static List<JobRequest> keyed(String tenant, String key, int n) {
        return SimulatedScheduler.jobs(tenant, n, b -> b.fairnessKey(key));
    }

    /** Rounds of 10 admissions (the workers empty the buffer each time) until n jobs were admitted; their keys. */
    private List<String> admittedKeys(SimulatedScheduler s, int n) {
        List<String> keys = new ArrayList<>();
        for (int round = 0; round < 10 * n && keys.size() < n; round++) {
            s.tick();
            keys.addAll(s.dsl.fetch("SELECT coalesce(fairness_key, '-') || '@' || tenant_id FROM jobs "
                    + "WHERE status = 'ready' ORDER BY ready_rank, id").getValues(0, String.class));
            s.completeReady();
        }
        return keys;
    }

    private static long count(List<String> keys, String key) {
        return keys.stream().filter(key::equals).count();
    }

    @Test
    void aFloodingKeyDoesNotDelayAnotherKeyOfTheSameTenant() {
        db.createTenant("t");
        SimulatedScheduler s = new SimulatedScheduler(db, byJobs());
        s.enqueue(keyed("t", "x", 2_000)); // first: without keys y would wait behind all of them
        s.enqueue(keyed("t", "y", 50));
        List<String> first = admittedKeys(s, 100);
        assertEquals(50, count(first.subList(0, 100), "y@t"), "y's 50 jobs go in the first 100, one in two");
        List<String> firstTen = first.subList(0, 10);
        assertTrue(count(firstTen, "y@t") >= 4, "y starts at once: " + firstTen);
        TenantState t = s.scheduler.tenants().get("t");
        assertTrue(t.keyPass.size() <= 2, "only keys with work are remembered: " + t.keyPass.keySet());
    }

    @Test
    void keyWeightsSplitTheTenantsShare() {
        db.createTenant("t");
        db.dsl().execute("UPDATE tenants SET key_weights = '{\"x\": 3}' WHERE id = 't'");
        SimulatedScheduler s = new SimulatedScheduler(db, byJobs());
        s.enqueue(keyed("t", "x", 600));
        s.enqueue(keyed("t", "y", 600));
        List<String> keys = admittedKeys(s, 400);
        assertEquals(300, count(keys.subList(0, 400), "x@t"), 3);
        assertEquals(100, count(keys.subList(0, 400), "y@t"), 3);
    }

    @Test
    void keysSplitTheTenantsShareAndNotTheOtherTenants() {
        db.createTenant("t");
        db.createTenant("u");
        SimulatedScheduler s = new SimulatedScheduler(db, byJobs());
        for (int k = 0; k < 20; k++) s.enqueue(keyed("t", "k" + k, 30));
        s.enqueue(SimulatedScheduler.jobs("u", 600));
        List<String> keys = admittedKeys(s, 400);
        long ofT = keys.subList(0, 400).stream().filter(k -> k.endsWith("@t")).count();
        assertEquals(200, ofT, 2, "tenants still share by weight, however many keys t has");
        Map<String, Long> perKey = new HashMap<>();
        for (String k : keys.subList(0, 400)) if (k.endsWith("@t")) perKey.merge(k, 1L, Long::sum);
        assertEquals(20, perKey.size(), "every key of t was served: none starved");
        for (Map.Entry<String, Long> e : perKey.entrySet()) {
            assertEquals(10, e.getValue(), 1, e.getKey() + " got its tenth of t's share");
        }
    }

    @Test
    void jobsWithoutAKeyAreOneMoreKeyAndConcurrencyLimitsStillHold() {
        db.createTenant("t");
        db.dsl().execute("UPDATE tenants SET concurrency_limits = '{\"api\": 1}' WHERE id = 't'");
        SimulatedScheduler s = new SimulatedScheduler(db, byJobs());
        s.enqueue(SimulatedScheduler.jobs("t", 200));
        OffsetDateTime due = OffsetDateTime.now(ZoneOffset.UTC).minusMinutes(1);
        List<JobRequest> both = new ArrayList<>();
        for (String key : List.of("a", "b", "c")) {
            for (int i = 0; i < 20; i++) {
                both.add(JobRequest.builder("t", "noop").runAt(due).fairnessKey(key).concurrencyKey("api").build());
            }
        }
        s.enqueue(both);
        for (int round = 0; round < 30; round++) {
            s.tick();
            assertTrue(db.count("SELECT count(*) FROM jobs WHERE concurrency_key = 'api' AND status IN ('ready', 'running')") <= 1,
                    "three fairness keys share one concurrency key of limit 1");
            s.completeReady();
        }
        assertEquals(30, db.count("SELECT count(*) FROM jobs WHERE concurrency_key = 'api' AND status = 'succeeded'"),
                "one api job a round");
        assertTrue(db.count("SELECT count(*) FROM jobs WHERE fairness_key IS NULL AND status = 'succeeded'") >= 200,
                "the jobs without a key took the rest");
    }

    /** Workers take the first {@code n} ready jobs in claim order and finish them. */
    private static void runFirst(SimulatedScheduler s, int n) {
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', attempts = 1, started_at = now(), finished_at = now() "
                + "WHERE id IN (SELECT id FROM jobs WHERE status = 'ready' ORDER BY ready_rank, id LIMIT ?)", n);
    }

    /** How many ready jobs of the tenant's other keys a ready job of key {@code key} has ahead of it in claim order. */
    private static long aheadOf(SimulatedScheduler s, String key) {
        return s.count("SELECT count(*) FROM jobs o, jobs k WHERE k.fairness_key = ? AND k.status = 'ready' "
                + "AND o.status = 'ready' AND o.fairness_key <> ? AND (o.ready_rank, o.id) < (k.ready_rank, k.id)", key, key);
    }

    /** Tenant t, a buffer of 50 filled by key x's 1,000 jobs (shares by job count). */
    private SimulatedScheduler bufferFilledByX() {
        db.createTenant("t");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(50, 0)
                .fairShare(SchedulerConfig.FairShare.JOBS).build());
        s.enqueue(keyed("t", "x", 1_000));
        s.tick();
        assertEquals(50, s.count("SELECT count(*) FROM jobs WHERE status = 'ready'"), "x fills the buffer");
        return s;
    }

    /** y's one job is in, at the claim point: it ties with the first buffered job, which goes first on its id. */
    private static void assertYAtTheClaimPoint(SimulatedScheduler s, int nth) {
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"), "y's job is in");
        long ahead = aheadOf(s, "y");
        assertTrue(ahead <= 1, "y's job " + nth + " is not queued behind x's buffer: " + ahead + " ahead");
    }

    @Test
    void aTricklingKeysEveryJobStartsAheadOfAFloodingKeysBuffer() {
        SimulatedScheduler s = bufferFilledByX();
        for (int i = 0; i < 5; i++) {
            runFirst(s, 10); // the workers take ten of the buffered jobs
            s.enqueue(keyed("t", "y", 1)); // y trickles: one job now and then, far below its half of t's share
            s.tick();
            assertYAtTheClaimPoint(s, i + 1);
            runFirst(s, 1);
        }
    }

    /**
     * A key whose previous job already started has nothing in the ready buffer: its next job starts at the claim
     * point even when the key is still ahead of the key virtual time of admissions (a round that admitted only a
     * few of the flooding key's jobs did not move it past the trickling key). Ranked by its tenant's pass, each such
     * job queued behind the flooding key's whole buffer (subkeys: y's p99 170 ms under the flood, 25 ms alone).
     */
    @Test
    void aKeyWithNothingBufferedStartsAtTheClaimPointWhileStillAheadOfTheKeyVirtualTime() {
        SimulatedScheduler s = bufferFilledByX();
        for (int i = 0; i < 5; i++) {
            s.enqueue(keyed("t", "y", 1));
            s.tick(); // from the second job on, the round admits one of x's and y's: y stays ahead of the key time
            assertYAtTheClaimPoint(s, i + 1);
            runFirst(s, 3); // y's job and two of x's: the next round has room for two
        }
    }

    /**
     * A key whose one job, cut in at the claim point, has not started yet (every thread busy) has its next job ranked
     * one of the other key's jobs after it, not by the tenant's pass behind the other key's whole buffer (subkeys: a trickling key's job
     * 145 ms behind 148 of the flooding key's, its previous one still waiting at the front 23 ms later).
     */
    @Test
    void aKeysNextJobFollowsItsOneBufferedJobNotTheTenantsPass() {
        SimulatedScheduler s = bufferFilledByX();
        s.enqueue(keyed("t", "y", 1));
        s.tick(); // a full buffer still takes a newly active key's first job, at the claim point
        assertYAtTheClaimPoint(s, 1);
        // three of x's last buffered jobs finish (the first job, y's, waits for a thread): room for two
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', attempts = 1, started_at = now(), finished_at = now() "
                + "WHERE id IN (SELECT id FROM jobs WHERE status = 'ready' AND fairness_key = 'x' ORDER BY ready_rank DESC LIMIT 3)");
        s.enqueue(keyed("t", "y", 1));
        s.tick();
        assertEquals(2, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"), "y's second job is in");
        long second = s.count("SELECT max(id) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'");
        long ahead = s.count("SELECT count(*) FROM jobs o, jobs k WHERE k.id = ? AND o.status = 'ready' "
                + "AND o.fairness_key <> 'y' AND (o.ready_rank, o.id) < (k.ready_rank, k.id)", second);
        // x's first buffered job, y's first, x's next, then y's second: the key order alternates the two keys
        assertTrue(ahead <= 2, "y's second job is queued behind x's buffer: " + ahead + " ahead");
    }

    /**
     * A key with nothing buffered that gets several jobs in one round (its jobs came faster than the rounds): each of
     * them goes where the key order puts it among the tenant's buffered jobs, one of y's after each of x's. Only the
     * first used to cut in; the others took the tenant's pass, behind x's whole buffer (subkeys: y's job 197 ms
     * behind 250 of x's, the previous one of the same round started 10 ms after its creation).
     */
    @Test
    void aKeysJobsOfOneRoundAlternateWithTheBufferedJobsOfTheOtherKey() {
        SimulatedScheduler s = bufferFilledByX();
        runFirst(s, 10); // room for ten
        s.enqueue(keyed("t", "y", 3));
        s.tick();
        List<Long> ahead = s.dsl.fetch("SELECT (SELECT count(*) FROM jobs o WHERE o.status = 'ready' AND o.fairness_key = 'x' "
                + "AND (o.ready_rank, o.id) < (k.ready_rank, k.id)) FROM jobs k WHERE k.fairness_key = 'y' AND k.status = 'ready' "
                + "ORDER BY k.id").getValues(0, Long.class);
        assertEquals(3, ahead.size(), "y's three jobs are in: " + ahead);
        for (int i = 0; i < 3; i++) {
            assertTrue(ahead.get(i) <= i + 1, "y's job " + (i + 1) + " has " + ahead.get(i) + " of x's ahead: " + ahead);
        }
        assertTrue(ahead.get(0) < ahead.get(1) && ahead.get(1) < ahead.get(2), "x's jobs between y's: " + ahead);
    }

    /**
     * Placing a key's jobs among its tenant's buffered ones never ranks them ahead of another tenant's jobs that were
     * ahead of the tenant's whole buffer: the tenant's jobs change places only within the span of ranks it holds.
     */
    @Test
    void aKeysPlacementStaysWithinItsTenantsSpanOfTheBuffer() {
        db.createTenant("t");
        db.createTenant("u");
        db.dsl().execute("UPDATE tenants SET weight = 4 WHERE id = 'u'"); // u's jobs are ranked four to one of t's
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(40, 0)
                .fairShare(SchedulerConfig.FairShare.JOBS).build());
        s.enqueue(keyed("t", "x", 1_000));
        s.enqueue(SimulatedScheduler.jobs("u", 1_000));
        s.tick();
        // t's first five buffered jobs start: u's jobs ranked below t's buffer now lead the claim order,
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', attempts = 1, started_at = now(), finished_at = now() "
                + "WHERE id IN (SELECT id FROM jobs WHERE status = 'ready' AND tenant_id = 't' ORDER BY ready_rank, id LIMIT 5)");
        // and u's last 20 (room for a round in which t, a fifth of it, takes y's three jobs and two of x's)
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', attempts = 1, started_at = now(), finished_at = now() "
                + "WHERE id IN (SELECT id FROM jobs WHERE status = 'ready' AND tenant_id = 'u' ORDER BY ready_rank DESC, id DESC LIMIT 20)");
        double tFirst = ((Number) s.dsl.fetchValue("SELECT min(ready_rank) FROM jobs WHERE status = 'ready' AND tenant_id = 't'"))
                .doubleValue();
        long uAhead = s.count("SELECT count(*) FROM jobs WHERE status = 'ready' AND tenant_id = 'u' AND ready_rank < ?", tFirst);
        assertTrue(uAhead >= 10, "u has jobs ahead of t's buffer: " + uAhead);
        // with a concurrency key (no limit: unlimited) so that the round places them: a job that takes t's new-key grant
        // in its enqueue is ranked where t's next job stood when the grant was made (KeyGrantsTest)
        s.enqueue(SimulatedScheduler.jobs("t", 3, b -> b.fairnessKey("y").concurrencyKey("c")));
        s.tick();
        assertEquals(3, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"), "y's jobs are in");
        long passed = s.count("SELECT count(*) FROM jobs u, jobs y WHERE u.status = 'ready' AND u.tenant_id = 'u' "
                + "AND u.ready_rank < ? AND y.fairness_key = 'y' AND (y.ready_rank, y.id) < (u.ready_rank, u.id)", tFirst);
        assertEquals(0, passed, "y's jobs passed none of the " + uAhead + " jobs of u ranked ahead of t's buffer");
    }

    /**
     * A key's next jobs are spaced by the tenant's own rank gap, so they never pile up on one rank: spaced by the
     * buffer's mean gap, once the buffered jobs tied (a key grant's job raised to the claim point) that gap was 0, and
     * every next job of the flooding key tied there too, ahead of all later jobs by id (subkeys: y's job 2.1 s
     * behind 2,239 of x's jobs, all at one rank).
     */
    @Test
    void aFloodingKeysJobsNeverPileUpOnOneRank() {
        SimulatedScheduler s = bufferFilledByX();
        s.enqueue(keyed("t", "y", 1));
        s.tick(); // y's job is in, x's buffer ties with it
        s.dsl.execute("UPDATE jobs SET ready_rank = 5 WHERE status = 'ready'"); // every buffered job on one rank
        runFirst(s, 20);
        s.enqueue(keyed("t", "y", 1));
        s.tick();
        List<Double> xRanks = s.dsl.fetch("SELECT ready_rank FROM jobs WHERE status = 'ready' AND fairness_key = 'x' "
                + "AND ready_rank > 5 ORDER BY ready_rank").getValues(0, Double.class);
        assertTrue(xRanks.size() >= 10, "x's new jobs are ranked after the tied ones: " + xRanks);
        for (int i = 1; i < xRanks.size(); i++) {
            assertTrue(xRanks.get(i) > xRanks.get(i - 1), "x's new jobs each have a rank of their own: " + xRanks);
        }
    }

    /**
     * A full buffer takes a new key's jobs that came together, not only the first (two a round): the second waited for
     * a round with room (subkeys: two of y's jobs 9 ms apart, the second admitted 76 ms after its creation).
     */
    @Test
    void aFullBufferTakesANewKeysJobsThatCameTogether() {
        SimulatedScheduler s = bufferFilledByX();
        s.enqueue(keyed("t", "y", 3));
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"),
                "the first took t's new-key grant in its enqueue");
        s.tick();
        assertEquals(3, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"),
                "and two more of y's jobs in one round of a full buffer");
        assertEquals(50, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'x' AND status = 'ready'"),
                "and none more of x's");
    }
}

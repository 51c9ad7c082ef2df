package dev.fairq.scheduler;

import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Key grants (V13__key_grants.sql): a quiet fairness key of a busy tenant has its next job inserted ready in its
 * enqueue, at the rank the scheduler would have given it, while the grant is accounted as an admission (token,
 * max_running, the tenant's virtual time). On a settable clock against the real database.
 */
class KeyGrantsTest extends SimulatedSchedulerTest {
    private static final int SLOTS = Scheduler.KEY_GRANT_SLOTS;

    private static List<JobRequest> keyed(String tenant, String key, int n) {
        return SimulatedScheduler.jobs(tenant, n, b -> b.fairnessKey(key));
    }

    /** A buffer of 10, shares by job count (so every pick costs 1). */
    private SimulatedScheduler scheduler() {
        return new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(10, 0)
                .fairShare(SchedulerConfig.FairShare.JOBS).build());
    }

    /**
     * Tenant t floods with key x; y's first job is admitted with the first round (a buffer of 10), its second, which
     * comes once the first ran, by the next round, which takes it although the buffer is full (y's newcomer).
     */
    private SimulatedScheduler floodWithOneOfY() {
        db.createTenant("t");
        SimulatedScheduler s = scheduler();
        s.enqueue(keyed("t", "x", 1_000));
        s.enqueue(keyed("t", "y", 1));
        s.tick();
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"), "y's job is in");
        assertEquals(SLOTS, keyGrants(s), "y's last waiting job was admitted: y is quiet, granted (every slot) in the same tick");
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE fairness_key = 'y'");
        s.clock.advance(Duration.ofMillis(30));
        s.enqueue(keyed("t", "y", 1));
        s.tick();
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"), "y's second job is in");
        return s;
    }

    /** The key's one ready job is ranked among x's buffered jobs (its tenant's), not at the front of everyone. */
    private static void assertRankedAmongXsBufferedJobs(SimulatedScheduler s, String key) {
        double rank = ((Number) s.dsl.fetchValue("SELECT ready_rank FROM jobs WHERE fairness_key = ? AND status = 'ready'", key))
                .doubleValue();
        double first = ((Number) s.dsl.fetchValue("SELECT min(ready_rank) FROM jobs WHERE fairness_key = 'x' AND status = 'ready'"))
                .doubleValue();
        double last = ((Number) s.dsl.fetchValue("SELECT max(ready_rank) FROM jobs WHERE fairness_key = 'x' AND status = 'ready'"))
                .doubleValue();
        assertTrue(rank >= first - 1e-9 && rank < last,
                "ranked among the tenant's buffered jobs (" + first + " .. " + last + "), not at the front of everyone: " + rank);
    }

    /** The grants of named keys, not the tenant's new-key grant. */
    private static long keyGrants(SimulatedScheduler s) {
        return s.count("SELECT count(*) FROM key_grants WHERE fairness_key <> chr(1)");
    }

    /** Every key grant, the new-key grants included: each holds a place and a token. */
    private static long allKeyGrants(SimulatedScheduler s) {
        return s.count("SELECT count(*) FROM key_grants");
    }

    @Test
    void aQuietKeyOfABusyTenantHasItsNextJobInsertedReadyAmongItsTenantsBufferedJobs() {
        SimulatedScheduler s = floodWithOneOfY();
        assertEquals(Collections.nCopies(SLOTS, "y"), s.dsl.fetchValues("SELECT fairness_key FROM key_grants WHERE tenant_id = 't' AND fairness_key <> chr(1)"),
                "y had its second job admitted, its last waiting: granted (every slot) in the same tick");
        assertEquals(0, s.count("SELECT count(*) FROM admission_grants WHERE used_at IS NULL"), "a tenant with jobs waiting holds no tenant grant");

        s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE fairness_key = 'y'");
        s.enqueue(keyed("t", "y", 2));
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"),
                "y's next job took the grant in its enqueue, without a round");
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'pending'"),
                "one statement takes one of a key's grants");
        assertEquals(SLOTS - 1, keyGrants(s), "the spares are left for y's next enqueues");
        assertRankedAmongXsBufferedJobs(s, "y");
    }

    /** Each key grant holds a place under max_running: lowering it to what is admitted and running takes them all back. */
    @Test
    void loweringMaxRunningTakesBackTheKeyGrantsBeyondTheNewCap() {
        SimulatedScheduler s = floodWithOneOfY();
        assertTrue(allKeyGrants(s) > 0);
        long active = s.count("SELECT count(*) FROM jobs WHERE tenant_id = 't' AND status IN ('ready', 'running')");
        s.dsl.execute("UPDATE tenants SET max_running = " + active + " WHERE id = 't'");
        s.clock.advance(RELOAD);
        s.tick();
        assertEquals(0, allKeyGrants(s), "no place is left under the new max_running for a grant to hold");
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE fairness_key = 'y'");
        s.enqueue(keyed("t", "y", 1));
        s.enqueue(keyed("t", "w", 1));
        assertEquals(0, s.count("SELECT count(*) FROM jobs WHERE fairness_key IN ('y', 'w') AND status = 'ready'"),
                "neither a known key's job nor a new key's took a grant past the cap");
        assertEquals(active - 1, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 't' AND status IN ('ready', 'running')"));
    }

    private static long newKeyGrants(SimulatedScheduler s, String tenant) {
        return s.count("SELECT count(*) FROM key_grants WHERE fairness_key = chr(1) AND tenant_id = '" + tenant + "'");
    }

    /**
     * A busy tenant that uses fairness keys holds a new-key grant: the first job of a key it never used (so no key grant
     * of its own) is inserted ready in its enqueue, among the tenant's buffered jobs, and the next tick renews the grant.
     * A key with a due job waiting and a job without a fairness key do not take it.
     */
    @Test
    void aNewKeysFirstJobIsInsertedReadyThroughTheTenantsNewKeyGrant() {
        db.createTenant("t");
        SimulatedScheduler s = scheduler();
        s.enqueue(keyed("t", "x", 1_000));
        s.tick();
        assertEquals(1, newKeyGrants(s, "t"), "a busy keyed tenant holds one");
        int tokens = s.scheduler.tenants().get("t").bucket().available();

        s.enqueue(keyed("t", "z", 2));
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'z' AND status = 'ready'"),
                "z's first job went in with its enqueue, without a round");
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'z' AND status = 'pending'"), "one a statement");
        assertEquals(0, newKeyGrants(s, "t"), "used");
        assertRankedAmongXsBufferedJobs(s, "z");

        s.completeReady();
        s.tick();
        assertEquals(1, newKeyGrants(s, "t"), "renewed by the next tick");
        assertTrue(s.scheduler.tenants().get("t").bucket().available() < tokens, "the used grant spent a token");

        // a key with a due job waiting (one only the scheduler admits: a concurrency key) does not pass it
        s.enqueue(SimulatedScheduler.jobs("t", 1, b -> b.fairnessKey("w").concurrencyKey("c")));
        s.enqueue(keyed("t", "w", 1));
        assertEquals(2, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'w' AND status = 'pending'"));
        // nor does a job without a fairness key
        s.enqueue(SimulatedScheduler.jobs("t", 1, b -> b));
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key IS NULL AND status = 'pending'"));
        assertEquals(1, newKeyGrants(s, "t"), "still there");
    }

    /**
     * An enqueue that cannot use the new-key grant (its key has jobs waiting) does not lock it: a new key's first job,
     * enqueued while that transaction is still open, takes it.
     */
    @Test
    void anEnqueueThatCannotUseTheNewKeyGrantLeavesItToOneThatCan() throws Exception {
        db.createTenant("t");
        SimulatedScheduler s = scheduler();
        s.enqueue(keyed("t", "x", 1_000));
        s.tick();
        assertEquals(1, newKeyGrants(s, "t"));
        try (java.sql.Connection c = db.dataSource().getConnection()) {
            c.setAutoCommit(false);
            s.store.enqueueAll(org.jooq.impl.DSL.using(c, org.jooq.SQLDialect.POSTGRES), keyed("t", "x", 1));
            s.enqueue(keyed("t", "z", 1)); // on another connection, while x's enqueue is open
            assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'z' AND status = 'ready'"),
                    "z's first job took the grant: x's open enqueue did not hold it");
            c.rollback();
        }
    }

    /**
     * A tenant never holds its new-key grant in its last place under max_running (here 2, a buffer of one: it alternates
     * with another tenant, one job in, one place left): the grant needs a place left beside it. Held in the last one,
     * it would have shut the tenant's rounds out until it was taken back, 2 s later.
     */
    @Test
    void theNewKeyGrantNeverTakesATenantsLastPlace() {
        db.createTenant("one", 1, 1_000_000, 1_000_000, 2);
        db.createTenant("big");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(1, 0)
                .fairShare(SchedulerConfig.FairShare.JOBS).build());
        s.enqueue(keyed("one", "x", 50));
        s.enqueue(keyed("big", "x", 50));
        List<String> picks = new java.util.ArrayList<>();
        for (int round = 0; round < 10; round++) {
            picks.addAll(s.tick().admittedTenants());
            assertEquals(0, newKeyGrants(s, "one"), "round " + round + ": no new-key grant in one's last place");
            s.completeReady();
            s.clock.advance(Duration.ofMillis(10));
        }
        assertTrue(java.util.Collections.frequency(picks, "one") >= 4, "one keeps its turns: " + picks);
        assertTrue(newKeyGrants(s, "big") <= 1, "big, with room, may hold one");
    }

    /**
     * The spares beyond two go slot by slot across the keys and only to a tenant with room: three quiet keys under
     * the tenant's cap of key grants get two each before any gets a third; with fewer than SPARE_KEY_GRANT_ROOM places
     * free a key gets two.
     */
    @Test
    void spareKeyGrantsAreSharedAmongTheKeysAndNeedRoom() {
        db.createTenant("t");
        SimulatedScheduler s = scheduler();
        s.enqueue(keyed("t", "x", 1_000));
        for (String key : List.of("y", "z", "w")) s.enqueue(keyed("t", key, 1));
        s.tick();
        assertEquals(3, s.count("SELECT count(*) FROM jobs WHERE fairness_key IN ('y', 'z', 'w') AND status = 'ready'"));
        assertEquals(Scheduler.MAX_KEY_GRANTS_PER_TENANT, allKeyGrants(s), "the tenant's cap of key grants (its new-key grant one of them)");
        for (String key : List.of("y", "z", "w")) {
            long held = s.count("SELECT count(*) FROM key_grants WHERE fairness_key = '" + key + "'");
            assertTrue(held >= 2 && held <= SLOTS, key + " holds " + held + ": every key its first two, spares after");
        }
    }

    @Test
    void aTenantWithLittleRoomGetsTwoKeyGrantsAKey() {
        // a buffer of 10 filled, then one place fewer than SPARE_KEY_GRANT_ROOM free
        db.createTenant("small", 1, 1_000_000, 1_000_000, 10 + Scheduler.SPARE_KEY_GRANT_ROOM - 1);
        SimulatedScheduler s = scheduler();
        s.enqueue(keyed("small", "x", 1_000));
        s.enqueue(keyed("small", "y", 1));
        s.tick();
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'small' AND fairness_key = 'y' AND status = 'ready'"));
        assertEquals(2, s.count("SELECT count(*) FROM key_grants WHERE tenant_id = 'small' AND fairness_key <> chr(1)"),
                "under SPARE_KEY_GRANT_ROOM places free: two, not " + SLOTS);
    }

    /** A job of the key that came without the grant (scheduled later) keeps its place: the grant is not used. */
    @Test
    void aKeyGrantIsNotUsedWhileAJobOfTheKeyIsWaiting() {
        SimulatedScheduler s = floodWithOneOfY();
        assertEquals(SLOTS, keyGrants(s));
        // a due job of y that cannot take a grant (a concurrency key: only the scheduler admits those), then one that could
        s.enqueue(SimulatedScheduler.jobs("t", 1, b -> b.fairnessKey("y").concurrencyKey("c")));
        s.enqueue(keyed("t", "y", 1));
        assertEquals(2, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'pending'"),
                "a job of y is waiting: the grant is not taken, the later job does not pass it");
        assertEquals(SLOTS, keyGrants(s), "and they are still there");
        // a job of y scheduled for later holds nothing back: the next due one takes the grant once the others ran
        s.tick();
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE status = 'ready'");
        s.enqueue(List.of(JobRequest.builder("t", "noop").fairnessKey("y").delay(Duration.ofHours(1)).build()));
        s.tick();
        assertEquals(SLOTS, keyGrants(s), "y's waiting jobs were admitted: y is quiet, its grants stay");
        s.enqueue(keyed("t", "y", 1));
        assertEquals(SLOTS - 1, keyGrants(s), "a job of y due only later does not keep a grant from being used");
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'pending'"),
                "only the later one waits");
    }

    /**
     * Grants of both kinds hold a place under max_running and a token: with a cap of 12 over a buffer of 10 (room
     * left for grants) and the workers starting everything ready, the tenant's ready and running jobs plus its
     * grants never exceed 12, while y trickles and x floods.
     */
    @Test
    void keyGrantsCountAgainstMaxRunningAndTokens() {
        db.createTenant("t", 1, 1_000_000, 1_000_000, 12);
        SimulatedScheduler s = scheduler();
        s.enqueue(keyed("t", "x", 200));
        int grantsSeen = 0;
        for (int round = 0; round < 40; round++) {
            if (s.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'pending'") == 0) {
                s.enqueue(keyed("t", "y", 1)); // y trickles: a job whenever its last one is in
            }
            s.clock.advance(Duration.ofMillis(10));
            s.tick();
            long held = s.count("SELECT count(*) FROM jobs WHERE tenant_id = 't' AND status IN ('ready', 'running')")
                    + allKeyGrants(s) + s.count("SELECT count(*) FROM admission_grants WHERE used_at IS NULL");
            assertTrue(held <= 12, "round " + round + ": " + held + " places held under max_running 12");
            grantsSeen += (int) keyGrants(s);
            // the workers finish what runs and start what is ready: every other round, so the cap binds
            if (round % 2 == 1) {
                s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now(), locked_by = NULL, locked_until = NULL "
                        + "WHERE status = 'running'");
                s.dsl.execute("UPDATE jobs SET status = 'running', started_at = now(), attempts = 1, locked_by = 'w', "
                        + "locked_until = now() + interval '5 minutes' WHERE status = 'ready'");
            }
        }
        assertTrue(grantsSeen > 0, "y got key grants along the way (the check is not vacuous)");

        db.dsl().execute("INSERT INTO tenants (id, weight, rate_per_second, burst, max_running, max_queued) "
                + "VALUES ('slow', 1, 0.001, 1, 100, 1000)"); // one token, then practically none
        s.enqueue(keyed("slow", "x", 5));
        s.enqueue(keyed("slow", "y", 1));
        s.tick();
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'slow' AND status = 'ready'"), "its one token");
        s.tick();
        assertEquals(0, s.count("SELECT count(*) FROM key_grants WHERE tenant_id = 'slow'"), "no token left for a key grant");
    }

    /** A paused tenant's key grants go back, and so does one unused for the key grant window; tokens return. */
    @Test
    void keyGrantsAreTakenBackWhenPausedOrUnusedAndTheirTokensReturn() {
        SimulatedScheduler s = floodWithOneOfY();
        assertEquals(SLOTS, keyGrants(s));
        s.clock.advance(Duration.ofNanos(Scheduler.KEY_GRANT_WINDOW_NANOS + 1_000_000));
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE status = 'ready'");
        s.dsl.execute("DELETE FROM jobs WHERE status = 'pending'"); // x's flood is gone: nothing admits, y stays quiet
        s.tick();
        assertEquals(0, allKeyGrants(s), "unused for longer than the window: taken back (the new-key grant too: t is quiet)");
        // the bucket refilled to its burst over the window: all of it is available but what a grant now reserves
        // (t, quiet now, holds a tenant grant)
        assertEquals(1_000_000 - s.count("SELECT count(*) FROM admission_grants WHERE used_at IS NULL"),
                s.scheduler.tenants().get("t").bucket().available(), "the key grant's token came back");

        SimulatedScheduler p = floodWithPaused();
        assertEquals(0, p.count("SELECT count(*) FROM key_grants WHERE tenant_id = 'p'"), "a paused tenant holds no key grant");
    }

    private SimulatedScheduler floodWithPaused() {
        db.createTenant("p");
        SimulatedScheduler s = scheduler();
        s.enqueue(keyed("p", "x", 100));
        s.enqueue(keyed("p", "y", 1));
        s.tick();
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE fairness_key = 'y'");
        s.clock.advance(Duration.ofMillis(30));
        s.enqueue(keyed("p", "y", 1));
        s.tick();
        assertEquals(SLOTS, s.count("SELECT count(*) FROM key_grants WHERE tenant_id = 'p' AND fairness_key <> chr(1)"));
        s.dsl.execute("UPDATE tenants SET paused = true WHERE id = 'p'");
        s.clock.advance(RELOAD);
        s.tick();
        return s;
    }

    /** A new leader adopts the key grants it finds: each reserves a token, as the grant's maker had. */
    @Test
    void aNewLeaderAdoptsTheKeyGrantsItFinds() {
        SimulatedScheduler s = floodWithOneOfY();
        assertEquals(SLOTS, keyGrants(s));
        SimulatedScheduler next = scheduler();
        assertEquals(0, next.tick().admitted(), "the buffer is full, and this leader heard no wake-up");
        assertEquals(SLOTS, keyGrants(next), "kept");
        assertEquals(1_000_000 - allKeyGrants(next), next.scheduler.tenants().get("t").bucket().available(),
                "each adopted grant reserved a token");
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE fairness_key = 'y'");
        next.enqueue(keyed("t", "y", 1));
        assertEquals(1, next.count("SELECT count(*) FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"),
                "and an enqueue uses it");
    }

    /**
     * A grant used after the buffer moved past its rank is ranked at the claim point: below it, the job would pull the
     * virtual time back and every tenant lifted to it would win its picks until its pass caught up. With nothing
     * buffered it goes to the front (-Infinity, which LOAD leaves out of the virtual time).
     */
    @Test
    void aGrantUsedAfterTheBufferMovedOnIsRankedAtTheClaimPoint() {
        SimulatedScheduler s = floodWithOneOfY();
        double granted = ((Number) s.dsl.fetchValue("SELECT max(ready_rank) FROM key_grants WHERE fairness_key = 'y'")).doubleValue();
        for (int i = 0; i < 3; i++) { // the workers run the buffer, the scheduler refills it with x's jobs
            s.completeReady();
            s.tick();
        }
        assertEquals(SLOTS, keyGrants(s), "the grants are still there, unused");
        double claim = ((Number) s.dsl.fetchValue("SELECT min(ready_rank) FROM jobs WHERE status = 'ready'")).doubleValue();
        assertTrue(claim > granted, "the claim point " + claim + " moved past the grant's rank " + granted);
        s.enqueue(keyed("t", "y", 1));
        double used = ((Number) s.dsl.fetchValue("SELECT ready_rank FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"))
                .doubleValue();
        assertEquals(claim, used, 1e-9, "ranked at the claim point, not at the grant's stale rank");
    }

    @Test
    void aGrantUsedWithNothingBufferedGoesToTheFront() {
        SimulatedScheduler s = floodWithOneOfY();
        assertEquals(SLOTS, keyGrants(s));
        s.completeReady();
        s.dsl.execute("DELETE FROM jobs WHERE status = 'pending'");
        s.enqueue(keyed("t", "y", 1));
        assertEquals(Double.NEGATIVE_INFINITY, s.dsl.fetchValue(
                "SELECT ready_rank FROM jobs WHERE fairness_key = 'y' AND status = 'ready'"), "nothing buffered: the front");
    }

    /**
     * A key admitted only once lately keeps an unused grant for 200 ms (a tenant with a key per order would otherwise
     * hold four places and tokens unused), one admitted twice for the 2 s window.
     */
    @Test
    void aKeySeenOnceKeepsAnUnusedGrantBriefly() {
        db.createTenant("o");
        SimulatedScheduler s = scheduler();
        s.enqueue(keyed("o", "x", 1_000));
        s.enqueue(keyed("o", "once", 1));
        s.tick();
        assertEquals(Collections.nCopies(SLOTS, "once"), s.dsl.fetchValues("SELECT fairness_key FROM key_grants WHERE fairness_key <> chr(1)"));
        s.clock.advance(Duration.ofNanos(Scheduler.KEY_GRANT_FIRST_NANOS + 1_000_000));
        s.tick();
        assertEquals(0, keyGrants(s), "seen once, unused for 200 ms: taken back");
    }

    @Test
    void aTricklingKeyKeepsAnUnusedGrantForTheWindow() {
        SimulatedScheduler t = floodWithOneOfY(); // y admitted twice, 30 ms apart
        t.clock.advance(Duration.ofNanos(Scheduler.KEY_GRANT_FIRST_NANOS + 1_000_000));
        t.tick();
        assertEquals(SLOTS, t.count("SELECT count(*) FROM key_grants WHERE fairness_key = 'y'"), "a trickling key keeps them");
    }
}

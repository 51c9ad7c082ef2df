package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static dev.fairq.scheduler.SimulatedScheduler.jobs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Admission grants: a quiet, recently active tenant's next job is inserted ready, without a scheduler round
 * trip, while the grant is accounted as an admission (token, max_running) and never makes anyone wait.
 */
class AdmissionGrantsTest extends SimulatedSchedulerTest {
    private SimulatedScheduler scheduler() {
        return new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(8, 4).build());
    }

    /** Grants outstanding: an enqueue marks the one it takes used (V15) and the scheduler clears it. */
    private long grants(SimulatedScheduler s) {
        return s.count("SELECT count(*) FROM admission_grants WHERE used_at IS NULL");
    }

    private long usedGrants(SimulatedScheduler s) {
        return s.count("SELECT count(*) FROM admission_grants WHERE used_at IS NOT NULL");
    }

    private long status(SimulatedScheduler s, String tenant, String status) {
        return s.count("SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = ?::job_status", tenant, status);
    }

    /** Admits the tenant's first job the ordinary way, runs it, so the tenant is active and quiet. */
    private void runOneJob(SimulatedScheduler s, String tenant) {
        s.enqueue(jobs(tenant, 1));
        assertEquals(List.of(tenant), s.tick().admittedTenants());
        List<ClaimedJob> claimed = s.store.claim(s.dsl, "w", 1, LEASE);
        assertEquals(1, claimed.size());
        s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(claimed.get(0).id(), claimed.get(0).attempt())));
    }

    /** A scheduler that has granted {@code tenant} (run once, now quiet) its next admission: the one grant there is. */
    private SimulatedScheduler grantedTo(String tenant) {
        SimulatedScheduler s = scheduler();
        runOneJob(s, tenant);
        s.tick();
        assertEquals(1, grants(s));
        return s;
    }

    @Test
    void aQuietActiveTenantsNextJobIsInsertedReadyAndTheGrantIsRenewed() {
        db.createTenant("q");
        db.createTenant("never");
        SimulatedScheduler s = scheduler();
        runOneJob(s, "q");
        s.tick();
        assertEquals(List.of("q"), s.dsl.fetchValues("SELECT tenant_id FROM admission_grants WHERE used_at IS NULL"),
                "one grant, for the tenant that was active; none for one that never was");

        s.enqueue(jobs("q", 3));
        assertEquals(1, status(s, "q", "ready"), "the first job took the grant");
        assertEquals(2, status(s, "q", "pending"), "one grant admits one job");
        assertEquals(0, grants(s));
        assertEquals(Double.NEGATIVE_INFINITY, s.dsl.fetchValue(
                "SELECT ready_rank FROM jobs WHERE tenant_id = 'q' AND status = 'ready'"), "front of the claim order");

        s.tick(); // the rest is admitted the ordinary way, and nothing is left waiting: quiet again, granted again
        assertEquals(3, status(s, "q", "ready"));
        assertEquals(1, grants(s), "granted in the round that admitted its last waiting job");
        s.completeReady();
        s.tick();
        assertEquals(1, grants(s), "still one grant");
    }

    @Test
    void aGrantTakesATokenAndAPlaceUnderMaxRunning() {
        db.createTenant("slow", 1, 0.001, 1, 100); // one token, then practically none
        db.createTenant("capped", 1, 1_000_000, 1_000_000, 1);
        SimulatedScheduler s = scheduler();
        runOneJob(s, "slow");
        runOneJob(s, "capped");
        s.enqueue(jobs("capped", 1));
        s.tick();
        assertEquals(1, status(s, "capped", "ready"));
        s.store.claim(s.dsl, "w", 1, LEASE); // capped now runs its one job
        s.tick();
        assertEquals(0, grants(s), "no token left for slow, no room under max_running 1 for capped");

        s.completeReady();
        s.dsl.execute("UPDATE jobs SET status = 'succeeded', finished_at = now(), locked_by = NULL, locked_until = NULL "
                + "WHERE status = 'running'");
        s.tick();
        assertEquals(List.of("capped"), s.dsl.fetchValues("SELECT tenant_id FROM admission_grants WHERE used_at IS NULL"));
        s.enqueue(jobs("capped", 2));
        s.tick();
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'capped' AND status IN ('ready', 'running')"),
                "the granted job fills max_running 1: the tick admits nothing more");
    }

    /**
     * A grant holds a place under max_running, so lowering max_running live takes back the grants beyond the new
     * room. Measured over the API before the fix: max_running 2, one job running and a grant out; max_running
     * lowered to 1; 10 s later the next submit took the grant and ran beside the first: 2 running, cap 1 (the grant
     * stays for a minute of quiet).
     */
    @Test
    void loweringMaxRunningTakesBackTheGrantsBeyondTheNewCap() {
        db.createTenant("c", 1, 1_000_000, 1_000_000, 2);
        SimulatedScheduler s = grantedTo("c");
        s.enqueue(jobs("c", 1)); // takes the grant: ready
        assertEquals(1, s.store.claim(s.dsl, "w", 1, LEASE).size(), "now running");
        s.tick(); // quiet again, room for one more under 2: granted again
        assertEquals(1, grants(s));

        s.dsl.execute("UPDATE tenants SET max_running = 1 WHERE id = 'c'");
        s.clock.advance(RELOAD);
        s.tick();
        assertEquals(0, grants(s), "one running fills max_running 1: the grant's place is gone");
        s.enqueue(jobs("c", 1));
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'c' AND status IN ('ready', 'running')"),
                "the next job waits: it did not take a grant past the new cap");
        assertEquals(1, status(s, "c", "pending"));
        s.tick();
        assertEquals(1, status(s, "c", "pending"), "nor does a round admit it");
    }

    /**
     * The rate bound counts starts, and a grant can be used long after it was made: its token stays reserved,
     * so a full bucket plus a grant is still at most burst jobs at once.
     */
    @Test
    void aGrantPlusAFullBucketIsStillAtMostBurstJobsAtOnce() {
        db.createTenant("r", 1, 10, 5, 1_000);
        SimulatedScheduler s = grantedTo("r");
        s.clock.advance(Duration.ofSeconds(60)); // far more than enough to refill the bucket
        s.enqueue(jobs("r", 100));
        s.tick();
        assertEquals(5, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'r' AND status = 'ready'"),
                "the granted job and four more: burst 5, not 6");
        s.completeReady();
        s.clock.advance(Duration.ofMillis(100)); // one more token at 10/s
        s.tick();
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'r' AND status = 'ready'"));
    }

    /**
     * With more grants out than {@link Scheduler#GRANT_READ_EVERY_TICK_UP_TO}, the ticks between two full reads take
     * the unused ones from memory, and every tick reads the used ones (V15): a used grant is noticed, and its tenant
     * granted again, at the next tick, not at the next full read; and the remembered ages still take a grant back
     * when its window ends on a tick that does not read them.
     */
    @Test
    void withManyGrantsOutAUsedOneIsNoticedAtTheNextTickAndTheirAgesAreKept() {
        int n = Scheduler.GRANT_READ_EVERY_TICK_UP_TO + 6;
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ids.add(String.format("m%03d", i));
            db.createTenant(ids.get(i));
        }
        SimulatedScheduler s = scheduler();
        for (String id : ids) runOneJob(s, id);
        Duration readEvery = Duration.ofNanos(Scheduler.GRANT_READ_EVERY_NANOS);
        s.clock.advance(readEvery);
        s.tick();
        assertEquals(n, grants(s), "every quiet tenant holds a grant");

        s.enqueue(jobs("m000", 1));
        assertEquals(1, status(s, "m000", "ready"), "the job took m000's grant");
        assertEquals(1, usedGrants(s), "and marked it used");
        s.clock.advance(Duration.ofMillis(100)); // well before the next full read
        s.tick();
        assertEquals(n, grants(s), "the next tick saw it used: m000 (its job only ready, nothing waiting) is granted again");
        assertEquals(0, usedGrants(s), "the used row became the new grant");

        // the first grants end their window between a read and the next tick, which does not read them
        s.clock.advance(Duration.ofNanos(Scheduler.GRANT_WINDOW_NANOS).minus(readEvery).minusMillis(100).minusMillis(10));
        s.tick();
        assertEquals(n, grants(s), "a read 10 ms before the window ends keeps them all");
        s.clock.advance(Duration.ofMillis(15));
        s.tick();
        assertEquals(List.of("m000"), s.dsl.fetchValues("SELECT tenant_id FROM admission_grants WHERE used_at IS NULL"),
                "taken back by their remembered age; m000's newer grant stays");
    }

    /** A used grant whose tenant is not granted again (work waits behind it now) is deleted: used rows do not pile up. */
    @Test
    void aUsedGrantIsClearedWhenItsTenantIsNotGrantedAgain() {
        db.createTenant("c");
        SimulatedScheduler s = scheduler();
        runOneJob(s, "c");
        s.tick();
        assertEquals(1, grants(s));
        s.enqueue(jobs("c", 1)); // takes the grant
        s.enqueue(jobs("c", 30, b -> b.concurrencyKey("k"))); // and more than a round's worth waits behind it
        assertEquals(1, usedGrants(s));
        s.tick();
        assertEquals(0, usedGrants(s), "the tick that saw it used cleared it");
        assertEquals(0, grants(s), "and made none: c has work waiting");
    }

    /** A grant taken back unused gives its token back. */
    @Test
    void aRevokedGrantRefundsItsToken() {
        db.createTenant("u", 1, 0.001, 2, 1_000); // two tokens, then practically none
        SimulatedScheduler s = scheduler();
        runOneJob(s, "u"); // one token spent
        s.tick();
        assertEquals(1, grants(s), "the last token is reserved for the grant");
        s.enqueue(List.of(JobRequest.builder("u", "noop").delay(Duration.ofMillis(1)).build())); // not grantable
        s.tick(); // work waiting: the grant goes back, with its token, which the waiting job then gets
        assertEquals(0, grants(s));
        s.clock.advance(Duration.ofMillis(2)); // the job comes due (its timer fires)
        s.tick();
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'u' AND status = 'ready'"),
                "the refunded token admitted the job");
    }

    @Test
    void grantsAreTakenBackFromPausedTenantsAndTenantsWithWorkWaiting() {
        db.createTenant("p");
        db.createTenant("k");
        SimulatedScheduler s = scheduler();
        runOneJob(s, "p");
        runOneJob(s, "k");
        s.tick();
        assertEquals(2, grants(s));

        s.dsl.execute("UPDATE tenants SET paused = true WHERE id = 'p'");
        // k gets a job that cannot take the grant (scheduled later): its grant goes back at the next tick, and
        // none is made while the job waits
        s.enqueue(List.of(JobRequest.builder("k", "noop").delay(Duration.ofHours(1)).build()));
        s.clock.advance(RELOAD);
        s.tick();
        assertEquals(0, grants(s), "paused tenant and tenant with a job waiting hold no grant");
        s.enqueue(jobs("p", 1));
        assertEquals(1, status(s, "p", "pending"), "a paused tenant's job waits");
    }

    /** A job_key replay inserts nothing, so it leaves the grant for the next job (bad input changes nothing). */
    @Test
    void aJobKeyReplayLeavesTheGrant() {
        db.createTenant("k");
        SimulatedScheduler s = scheduler();
        s.enqueue(List.of(JobRequest.builder("k", "noop").jobKey("once").build()));
        s.tick();
        List<ClaimedJob> claimed = s.store.claim(s.dsl, "w", 1, LEASE);
        s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(claimed.get(0).id(), claimed.get(0).attempt())));
        s.tick();
        assertEquals(1, grants(s));

        s.enqueue(List.of(JobRequest.builder("k", "noop").jobKey("once").build())); // the same key again
        assertEquals(1, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'k'"), "nothing inserted");
        assertEquals(1, grants(s), "the grant is still there");
        s.enqueue(jobs("k", 1));
        assertEquals(1, status(s, "k", "ready"), "and the next job takes it");
        assertEquals(0, grants(s));
    }

    @Test
    void twentyConcurrentEnqueuesTakeTheGrantOnce() throws Exception {
        db.createTenant("c");
        SimulatedScheduler s = grantedTo("c");
        ExecutorService pool = Executors.newFixedThreadPool(20);
        try {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                done.add(pool.submit(() -> {
                    go.await();
                    s.store.enqueue(db.dsl(), JobRequest.builder("c", "noop").build());
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) f.get(60, TimeUnit.SECONDS);
        } finally {
            pool.shutdownNow();
        }
        assertEquals(1, status(s, "c", "ready"), "exactly one of the twenty took the grant");
        assertEquals(20, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'c' AND status IN ('ready', 'pending')"));
        assertEquals(0, grants(s));
    }

    @Test
    void anOpenTransactionTakingAGrantMakesNobodyWait() throws Exception {
        db.createTenant("o");
        SimulatedScheduler s = grantedTo("o");
        ExecutorService pool = Executors.newFixedThreadPool(2);
        CountDownLatch enqueued = new CountDownLatch(1), release = new CountDownLatch(1);
        try {
            Future<?> open = pool.submit(() -> db.dsl().transaction(c -> {
                s.store.enqueue(c.dsl(), JobRequest.builder("o", "noop").build());
                enqueued.countDown();
                release.await(); // the grant's row stays locked while this transaction is open
            }));
            assertTrue(enqueued.await(60, TimeUnit.SECONDS));
            // without SKIP LOCKED this enqueue (and the tick below) would wait for the open transaction: the
            // time-out turns that wait into a failure instead of a hung build
            pool.submit(() -> s.store.enqueue(s.dsl, JobRequest.builder("o", "noop").build())).get(30, TimeUnit.SECONDS);
            assertEquals(1, status(s, "o", "pending"), "the second enqueue did not wait and found no grant");
            s.dsl.execute("UPDATE tenants SET paused = true WHERE id = 'o'");
            s.clock.advance(RELOAD);
            pool.submit(s::tick).get(30, TimeUnit.SECONDS); // revoking skips the locked grant, does not wait
            release.countDown();
            open.get(60, TimeUnit.SECONDS);
        } finally {
            release.countDown();
            pool.shutdownNow();
        }
        assertEquals(0, grants(s), "the open transaction took the grant when it committed");
        assertEquals(2, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'o' AND status <> 'succeeded'"),
                "both enqueues stored their job");
    }

    @Test
    void plainFifoGrantsNothing() {
        db.createTenant("f");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fair(false).fixedBuffer(8, 4).build());
        runOneJob(s, "f");
        s.tick();
        assertEquals(0, grants(s));
    }

    /**
     * A round that admits a tenant's last waiting job grants it at once, and the wake-up of that job arriving only
     * after the round (it was read before its notification) does not take the grant back: the next job takes it.
     * Taken back, a tenant trickling every 30 ms under a flood lost every grant to the previous job's wake-up.
     */
    @Test
    void aGrantMadeWithATenantsLastAdmissionSurvivesThatJobsLateWakeUp() {
        db.createTenant("q");
        SimulatedScheduler s = scheduler();
        runOneJob(s, "q");
        s.tick();
        assertEquals(1, grants(s));
        s.dsl.execute("UPDATE admission_grants SET used_at = now()"); // as if used by a job that came without a grant in time

        s.enqueue(jobs("q", 1));
        s.scheduler.rescanSoon();
        s.clock.advance(SchedulerConfig.DEFAULT_ACTIVE_RESCAN); // the rescan finds the job, its wake-up is not read yet
        assertEquals(List.of("q"), s.scheduler.tick(s.dsl).admittedTenants());
        assertEquals(1, grants(s), "granted in the round that admitted its last waiting job");
        String grantRow = s.dsl.fetchValue("SELECT xmin::text FROM admission_grants WHERE used_at IS NULL").toString();
        s.tick(); // delivers the job's wake-up, late: nothing is waiting
        // the same row: taken back and made again within the tick, an enqueue in between would have found none
        assertEquals(List.of(grantRow), s.dsl.fetchValues("SELECT xmin::text FROM admission_grants WHERE used_at IS NULL"),
                "the late wake-up left the grant");
        s.enqueue(jobs("q", 1));
        assertEquals(0, status(s, "q", "pending"), "the next job took the grant");

        s.enqueue(jobs("q", 1)); // no grant: admitted by a round, which grants again
        s.tick();
        assertEquals(2, grants(s), "its grant again, and a spare: two grants used within 250 ms (V16)");
        // real work waiting (jobs with a key never take a grant), more than one round admits: the grant goes back
        s.enqueue(jobs("q", 30, b -> b.concurrencyKey("k")));
        s.tick();
        assertTrue(status(s, "q", "pending") > 0, "more than a round's worth");
        assertEquals(0, grants(s), "a tenant with work waiting holds no grant");
    }

    // The spare tenant grant (V16__spare_tenant_grants.sql): a tenant whose grants are used faster than a tick renews
    // them holds a second one, so two enqueues between two ticks both start without a round; a quiet tenant still holds
    // one; the spare goes back after a second unused, and a tenant without room or tokens for two gets none.

    /** The unused grants' slots of the tenant (V16: 0, and 1 for a spare). */
    private List<Integer> unusedSlots(SimulatedScheduler s, String tenant) {
        return s.dsl.fetchValues("SELECT slot::int FROM admission_grants WHERE tenant_id = ? AND used_at IS NULL ORDER BY slot",
                tenant).stream().map(v -> ((Number) v).intValue()).toList();
    }

    /** Runs the tenant's first job, then ticks once: active and quiet, it holds one grant. */
    private void activated(SimulatedScheduler s, String tenant) {
        runOneJob(s, tenant);
        s.tick();
        assertEquals(List.of(0), unusedSlots(s, tenant));
    }

    /** One enqueue taking the tenant's grant, its job run at once, {@code gap} later a tick. */
    private void useGrantThenTick(SimulatedScheduler s, String tenant, Duration gap) {
        s.enqueue(jobs(tenant, 1));
        s.completeReady();
        s.clock.advance(gap);
        s.tick();
    }

    @Test
    void aTenantUsingItsGrantsQuicklyHoldsASpareAndTwoEnqueuesBetweenTicksBothStart() {
        db.createTenant("hot");
        SimulatedScheduler s = scheduler();
        activated(s, "hot");

        useGrantThenTick(s, "hot", Duration.ofMillis(20)); // the first use seen: not yet a quick one
        assertEquals(List.of(0), unusedSlots(s, "hot"), "renewed; one use alone earns no spare");
        useGrantThenTick(s, "hot", Duration.ofMillis(20)); // the second, 20 ms after the first
        assertEquals(List.of(0, 1), unusedSlots(s, "hot"), "two uses 20 ms apart: a spare beside the renewed grant");

        s.enqueue(jobs("hot", 1));
        assertEquals(1, unusedSlots(s, "hot").size(), "an enqueue takes one grant, not both");
        s.enqueue(jobs("hot", 1)); // before any tick: the spare admits this one
        assertEquals(2, status(s, "hot", "ready"), "both jobs inserted ready, with no round between them");
        assertEquals(0, status(s, "hot", "pending"));
        assertEquals(List.of(), unusedSlots(s, "hot"));
        s.completeReady();
        s.clock.advance(Duration.ofMillis(20));
        s.tick();
        assertEquals(List.of(0, 1), unusedSlots(s, "hot"), "both renewed while it stays quick");

        s.clock.advance(Duration.ofMillis(1_100)); // quiet for more than a second
        s.tick();
        assertEquals(List.of(0), unusedSlots(s, "hot"), "the spare went back unused; the first grant stays (a minute)");
        s.enqueue(jobs("hot", 1));
        s.enqueue(jobs("hot", 1));
        assertEquals(1, status(s, "hot", "ready"), "one grant: the second job waits for a round");
        assertEquals(1, status(s, "hot", "pending"));
    }

    @Test
    void aTenantUsingItsGrantSecondsApartHoldsOne() {
        db.createTenant("slow");
        SimulatedScheduler s = scheduler();
        activated(s, "slow");
        for (int i = 0; i < 4; i++) {
            useGrantThenTick(s, "slow", Duration.ofMillis(500));
            assertEquals(List.of(0), unusedSlots(s, "slow"), "uses 500 ms apart: its grant is renewed in time, no spare");
        }
    }

    @Test
    void noSpareWithoutRoomUnderMaxRunningOrATokenForIt() {
        db.createTenant("capped", 1, 1_000_000, 1_000_000, 1);
        db.createTenant("poor", 1, 0.001, 4, 100); // four tokens, then practically none
        SimulatedScheduler s = scheduler();
        activated(s, "capped");
        activated(s, "poor"); // its first job and its grant: two of its four tokens
        for (int i = 0; i < 3; i++) {
            useGrantThenTick(s, "capped", Duration.ofMillis(20));
            assertEquals(List.of(0), unusedSlots(s, "capped"), "max_running 1 holds one grant at most");
        }
        useGrantThenTick(s, "poor", Duration.ofMillis(20)); // renewed with the third token
        useGrantThenTick(s, "poor", Duration.ofMillis(20)); // a quick use: renewed with the fourth, none for a spare
        assertEquals(List.of(0), unusedSlots(s, "poor"), "no token for the spare");
        s.enqueue(jobs("poor", 2));
        assertEquals(4, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'poor' AND status <> 'pending'"),
                "four tokens, four jobs admitted, grants included");
    }
    // More spares (V17__more_spare_grants.sql): a tenant that finds every grant used gets twice as many, up to eight;
    // each spare unused for a second goes back, and the count starts again at two after a pause.

    /** {@code n} single-job enqueues between two ticks, the jobs run at once, then a tick 20 ms later. */
    private void burstThenTick(SimulatedScheduler s, String tenant, int n) {
        for (int i = 0; i < n; i++) s.enqueue(jobs(tenant, 1));
        s.completeReady();
        s.clock.advance(Duration.ofMillis(20));
        s.tick();
        s.completeReady();
    }

    @Test
    void aTenantThatFindsEveryGrantUsedGetsTwiceAsManyUpToEight() {
        db.createTenant("hot");
        SimulatedScheduler s = scheduler();
        activated(s, "hot");
        useGrantThenTick(s, "hot", Duration.ofMillis(20));
        useGrantThenTick(s, "hot", Duration.ofMillis(20));
        assertEquals(List.of(0, 1), unusedSlots(s, "hot"), "a first spare (V16)");

        burstThenTick(s, "hot", 2);
        assertEquals(List.of(0, 1), unusedSlots(s, "hot"), "two enqueues, two grants: none missed, no third");
        burstThenTick(s, "hot", 3); // one more than it holds: the last waits for a round
        assertEquals(List.of(0, 1, 2, 3), unusedSlots(s, "hot"), "a miss doubles its grants");
        burstThenTick(s, "hot", 4);
        assertEquals(4, unusedSlots(s, "hot").size(), "four enqueues, four grants: no miss");
        burstThenTick(s, "hot", 5);
        assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7), unusedSlots(s, "hot"));
        s.enqueue(jobs("hot", 8));
        assertEquals(1, status(s, "hot", "ready"), "eight jobs in one statement take one grant");
        assertEquals(7, status(s, "hot", "pending"), "the rest wait for a round");
        s.clock.advance(Duration.ofMillis(20));
        s.tick();
        s.completeReady();
        burstThenTick(s, "hot", 9);
        assertEquals(8, unusedSlots(s, "hot").size(), "eight at most");
        assertEquals(0, status(s, "hot", "pending"));

        s.clock.advance(Duration.ofMillis(1_100)); // quiet for more than a second: every spare goes back
        s.tick();
        assertEquals(List.of(0), unusedSlots(s, "hot"), "the spares went back unused; the first grant stays");
        useGrantThenTick(s, "hot", Duration.ofMillis(20));
        useGrantThenTick(s, "hot", Duration.ofMillis(20));
        assertEquals(List.of(0, 1), unusedSlots(s, "hot"), "quick again: one spare to start with");
    }

    @Test
    void sparesNeverExceedMaxRunning() {
        db.createTenant("capped", 1, 1_000_000, 1_000_000, 3);
        SimulatedScheduler s = scheduler();
        activated(s, "capped");
        useGrantThenTick(s, "capped", Duration.ofMillis(20));
        useGrantThenTick(s, "capped", Duration.ofMillis(20));
        for (int i = 0; i < 6; i++) {
            burstThenTick(s, "capped", 3); // those without a grant take room at the round; the next tick grants into it
            assertTrue(unusedSlots(s, "capped").size() <= 3, "max_running 3: three grants at most");
            s.clock.advance(Duration.ofMillis(20));
            s.tick();
            assertTrue(unusedSlots(s, "capped").size() <= 3, "max_running 3: three grants at most");
        }
        assertEquals(3, unusedSlots(s, "capped").size(), "and it got there");
    }

    /**
     * Each grant holds a token of the bucket, so lowering burst live takes back the grants beyond the new burst. Before,
     * a tenant holding its grant and a spare, its burst lowered to 1, still started two jobs at once from them (the
     * bucket's own tokens were cut to the new burst, the reserved ones were not).
     */
    @Test
    void loweringBurstTakesBackTheGrantsBeyondIt() {
        db.createTenant("b");
        SimulatedScheduler s = scheduler();
        activated(s, "b");
        useGrantThenTick(s, "b", Duration.ofMillis(20));
        useGrantThenTick(s, "b", Duration.ofMillis(20));
        assertEquals(List.of(0, 1), unusedSlots(s, "b"), "its grant and a spare");

        s.dsl.execute("UPDATE tenants SET burst = 1, rate_per_second = 0.001, updated_at = now() WHERE id = 'b'");
        s.clock.advance(RELOAD);
        s.tick();
        assertTrue(unusedSlots(s, "b").size() <= 1, "burst 1: one grant at most, " + unusedSlots(s, "b"));
        s.enqueue(jobs("b", 1));
        s.enqueue(jobs("b", 1));
        s.tick();
        assertEquals(1, status(s, "b", "ready"), "burst 1: one job at once");
        assertEquals(1, status(s, "b", "pending"));
    }
}

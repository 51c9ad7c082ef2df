package dev.fairq.scheduler;

import dev.fairq.schema.JobRequest;

import org.junit.jupiter.api.Test;

import java.util.List;

import static dev.fairq.scheduler.SimulatedScheduler.countOf;
import static dev.fairq.scheduler.SimulatedScheduler.jobs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Weighted fair admission against a flood: tenant a has 20,000 jobs waiting when tenant b arrives with 50.
 * Admission rounds are driven by hand ({@link SimulatedScheduler}); the simulated workers empty the ready
 * buffer between rounds, so the only thing deciding the order is the admission policy. Rate limits and caps
 * are set high enough never to matter here.
 *
 * <p>The assertions count admissions (job starts), so this class pins shares by job count
 * ({@link SchedulerConfig.FairShare#JOBS}), not the default (worker time): these are the job-count bounds.
 * {@link FairnessByTimeTest} runs the same scenarios under the default, where every job here is charged the same
 * estimate and so the same counts must hold.
 */
class FairnessTest extends SimulatedSchedulerTest {
    /** Ready buffer of the simulated workers: each round admits up to this many jobs. */
    static final int BUFFER = 10;

    /** What the fair scheduler shares here: job starts (see the class comment). */
    SchedulerConfig.FairShare share() {
        return SchedulerConfig.FairShare.JOBS;
    }

    private SimulatedScheduler scheduler(boolean fair) {
        return new SimulatedScheduler(db, SchedulerConfig.builder().fair(fair).fixedBuffer(BUFFER, 0)
                .fairShare(share()).build());
    }

    /** a floods the queue and has it to itself for a few rounds; then b arrives. */
    private SimulatedScheduler floodThenNewcomer(boolean fair, int weightA, int weightB) {
        db.createTenant("a", weightA, 1_000_000, 1_000_000, 100_000);
        db.createTenant("b", weightB, 1_000_000, 1_000_000, 100_000);
        SimulatedScheduler s = scheduler(fair);
        s.enqueue(jobs("a", 20_000));
        for (int i = 0; i < 5; i++) {
            List<String> round = s.round();
            assertEquals(List.of("a", "a", "a", "a", "a", "a", "a", "a", "a", "a"), round, "only a has work");
        }
        s.enqueue(jobs("b", 50));
        return s;
    }

    @Test
    void equalWeights_newcomerGetsHalfAtOnce() {
        SimulatedScheduler s = floodThenNewcomer(true, 1, 1);
        List<String> after = s.admissions(120);

        long bIn100 = countOf(after.subList(0, 100), "b");
        assertTrue(bIn100 >= 45 && bIn100 <= 55, "b's share of the first 100 admissions after it arrived: " + bIn100);
        // "At once": b does not wait behind a's backlog, not even for a round.
        long bIn10 = countOf(after.subList(0, 10), "b");
        assertTrue(bIn10 >= 4, "b's share of the very first round after it arrived: " + bIn10);
        // All of b's 50 jobs go within the first ~105 admissions: b is never starved in between either.
        int lastB = after.lastIndexOf("b");
        assertEquals(50, countOf(after, "b"));
        assertTrue(lastB < 105, "b's 50th job was admission number " + (lastB + 1) + " after b arrived");
        // Once b is done, a has the whole buffer again (work conserving).
        assertEquals(List.of("a"), after.subList(lastB + 1, after.size()).stream().distinct().toList());
    }

    @Test
    void weightsThreeToOne_splitThreeToOne() {
        SimulatedScheduler s = floodThenNewcomer(true, 3, 1);
        List<String> first80 = s.admissions(80).subList(0, 80);

        long a = countOf(first80, "a"), b = countOf(first80, "b");
        assertTrue(a >= 57 && a <= 63, "a (weight 3) in the first 80 admissions after b arrived: " + a);
        assertTrue(b >= 17 && b <= 23, "b (weight 1) in the first 80 admissions after b arrived: " + b);
        // And at every prefix of 20 or more, the split is close to 3:1, not bunched.
        for (int n = 20; n <= 80; n += 4) {
            long bn = countOf(first80.subList(0, n), "b");
            assertTrue(Math.abs(bn - n / 4.0) <= 2, "b had " + bn + " of the first " + n);
        }
    }

    @Test
    void fifoBaseline_newcomerWaitsBehindTheWholeFlood() {
        SimulatedScheduler s = floodThenNewcomer(false, 1, 1);
        List<String> after = s.admissions(100);
        assertEquals(0, countOf(after.subList(0, 100), "b"), "FIFO: b waits behind a's backlog");

        // Drain the rest of a's flood with a wider buffer (FIFO keeps no state between rounds, so a second
        // scheduler with a bigger buffer is the same policy) and find b's first admission.
        SimulatedScheduler wide = new SimulatedScheduler(db,
                SchedulerConfig.builder().fair(false).fixedBuffer(2_000, 0).build());
        long aBeforeB = 50 + 100;
        while (true) {
            List<String> round = wide.round();
            assertTrue(!round.isEmpty(), "FIFO stopped admitting");
            int firstB = round.indexOf("b");
            if (firstB < 0) {
                aBeforeB += round.size();
                continue;
            }
            aBeforeB += countOf(round.subList(0, firstB), "a");
            break;
        }
        assertEquals(20_000, aBeforeB, "b's first job went only after every one of a's 20,000");
    }

    @Test
    void idleTenantHoardsNoCredit() {
        db.createTenant("a", 1, 1_000_000, 1_000_000, 100_000);
        db.createTenant("b", 1, 1_000_000, 1_000_000, 100_000);
        SimulatedScheduler s = scheduler(true);
        s.enqueue(jobs("a", 5_000));
        s.enqueue(jobs("b", 100));

        // Both busy: they share.
        List<String> both = s.admissions(100);
        long b = countOf(both.subList(0, 100), "b");
        assertTrue(b >= 45 && b <= 55, "b while both are busy: " + b);

        // b runs out of work and stays idle while a is admitted 1,000 jobs.
        while (s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'b' AND status = 'pending'") > 0) s.round();
        List<String> idle = s.admissions(1_000);
        assertEquals(List.of("a"), idle.stream().distinct().toList());

        // b comes back: it gets its half again at once, not the 1,000 turns it did not use.
        s.enqueue(jobs("b", 200));
        List<String> back = s.admissions(100).subList(0, 100);
        long bBack = countOf(back, "b");
        assertTrue(bBack >= 45 && bBack <= 55, "b back from idle, in the next 100 admissions: " + bBack);
    }

    /**
     * A newcomer that arrives while the incumbent is momentarily ineligible (here: out of tokens) must still
     * start at the system's virtual time, not at its own pass of zero. Otherwise, once the incumbent has
     * tokens again, the newcomer gets a run of admissions for every job the incumbent was admitted before the
     * newcomer even existed: hoarded credit, and the incumbent waits with tokens in hand.
     */
    @Test
    void newcomerArrivingWhileIncumbentIsRateLimitedHoardsNoCredit() {
        db.createTenant("a", 1, 100, 100, 100_000); // 100 tokens, 100/s
        db.createTenant("b", 1, 1_000_000, 1_000_000, 100_000);
        SimulatedScheduler s = scheduler(true);
        s.enqueue(jobs("a", 5_000));

        List<String> alone = s.admissions(100);
        assertEquals(100, countOf(alone, "a"));
        assertEquals(List.of(), s.round(), "a spent its burst; the clock has not moved");

        // b arrives while a has no tokens: b alone is admitted, as it should be (work conserving).
        s.enqueue(jobs("b", 500));
        assertEquals(List.of("b", "b", "b", "b", "b", "b", "b", "b", "b", "b"), s.round());

        // One simulated second later a has 100 tokens again and both are eligible: they share from here on.
        s.clock.advance(java.time.Duration.ofSeconds(1));
        List<String> next = s.admissions(100).subList(0, 100);
        long a = countOf(next, "a");
        assertTrue(a >= 45 && a <= 55, "a, back with tokens, in the next 100 admissions: " + a + " " + next);
    }

    /**
     * The same through the most common gap: the due work runs out while a scheduled job (or a retry waiting
     * for its backoff) is pending, so a round sees work but nothing admissible. A tenant that had the queue
     * to itself before the gap must not be pushed behind a newcomer for every job it ran alone.
     */
    @Test
    void aGapWithOnlyFutureWorkDoesNotResetTheVirtualTime() {
        db.createTenant("a");
        db.createTenant("b");
        db.createTenant("later");
        SimulatedScheduler s = scheduler(true);
        s.enqueue(List.of(dev.fairq.schema.JobRequest.builder("later", "noop")
                .runAt(java.time.OffsetDateTime.now().plusHours(1)).build()));
        s.enqueue(jobs("a", 100));
        assertEquals(100, countOf(s.admissions(100), "a"));
        assertEquals(List.of(), s.round(), "only a job due in an hour is left");

        s.enqueue(jobs("a", 500));
        s.enqueue(jobs("b", 500));
        List<String> next = s.admissions(100).subList(0, 100);
        long b = countOf(next, "b");
        assertTrue(b >= 45 && b <= 55, "b, arriving with a after the gap, in the next 100 admissions: " + b + " " + next);
    }

    /**
     * Tenants whose waiting jobs are all scheduled later have work but nothing due: however many there are,
     * they must not take the places of a tenant whose jobs are due (the fetch is planned per tenant).
     */
    @Test
    void tenantsWithOnlyLaterJobsDoNotHoldBackOneWithDueJobs() {
        for (int i = 0; i < 30; i++) db.createTenant("later" + i);
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(4, 0).fairShare(share()).build());
        for (int i = 0; i < 30; i++) {
            s.enqueue(List.of(JobRequest.builder("later" + i, "noop").delay(java.time.Duration.ofHours(1)).build()));
        }
        db.createTenant("zz-due"); // sorts after every "later" tenant
        s.enqueue(jobs("zz-due", 10));
        assertEquals(List.of("zz-due", "zz-due", "zz-due", "zz-due"), s.round(), "the whole round goes to the due tenant");
        assertEquals(4, countOf(s.admissions(4), "zz-due"));
    }
}

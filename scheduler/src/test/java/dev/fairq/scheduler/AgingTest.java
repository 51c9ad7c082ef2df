package dev.fairq.scheduler;

import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.JobRequest;
import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The documented starvation bound of priority aging. sort_key = epoch(run_at) / AGING_INTERVAL - priority
 * (V1__queue.sql), so a job of priority p that became due at T is overtaken by a job of priority p' > p only
 * if that job became due less than (p' - p) * AGING_INTERVAL after T; once it has waited that long, nothing
 * that arrives later goes ahead of it, however high its priority (at most 200 levels apart: at most
 * 2,000 s). At exactly that distance the sort keys are equal and the lower id (the older job) goes first.
 *
 * <p>The stream is simulated: the jobs' run_at values are spread one second apart in the past, and they are
 * enqueued three per admission round while each round admits one job, so the backlog grows all the time
 * and the order is decided by the sort key alone. T0 is a whole multiple of the aging interval, so the sort
 * keys compared here are exact in double precision.
 */
class AgingTest {
    /** Seconds of waiting worth one priority level (the 10.0 in the generated sort_key column). */
    static final long AGING_INTERVAL_SECONDS = 10;
    static final int ARRIVALS_PER_ROUND = 3;

    final TestDatabase db = TestDatabase.get();
    SimulatedScheduler s;
    OffsetDateTime t0;

    @BeforeEach
    void reset() {
        db.reset();
        db.createTenant("t");
        s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(1, 0).build());
        long epoch = Instant.now().minusSeconds(3600).getEpochSecond();
        t0 = OffsetDateTime.ofInstant(Instant.ofEpochSecond(epoch - epoch % AGING_INTERVAL_SECONDS), ZoneOffset.UTC);
    }

    record Job(long id, int priority, long offsetSeconds, int enqueuedInRound) {}

    private Job enqueue(int priority, long offsetSeconds, int round) {
        JobRequest r = JobRequest.builder("t", "noop").priority(priority).runAt(t0.plusSeconds(offsetSeconds)).build();
        EnqueueResult result = s.store.enqueue(s.dsl, r);
        return new Job(result.job().getId(), priority, offsetSeconds, round);
    }

    /** One round admitting exactly one job (the buffer is 1); the simulated worker then runs it. */
    private long admitOne() {
        assertEquals(1, s.tick().admitted());
        List<Long> ready = s.dsl.fetch("SELECT id FROM jobs WHERE status = 'ready'").getValues(0, Long.class);
        assertEquals(1, ready.size());
        s.completeReady();
        return ready.get(0);
    }

    @Test
    void priorityZeroJobIsOvertakenOnlyWithinTenLevelsTimesTheAgingInterval() {
        int p = 0, pHigh = 10;
        long bound = (pHigh - p) * AGING_INTERVAL_SECONDS; // 100 s
        Job old = enqueue(p, 0, 0);

        Map<Long, Job> stream = new HashMap<>();
        List<Long> order = new ArrayList<>();
        long next = 0;
        int oldAt = -1;
        for (int round = 0; oldAt < 0 || round < oldAt + 10; round++) {
            for (int k = 0; k < ARRIVALS_PER_ROUND; k++, next++) {
                Job j = enqueue(pHigh, next, round);
                stream.put(j.id(), j);
            }
            long admitted = admitOne();
            order.add(admitted);
            if (admitted == old.id()) oldAt = order.size() - 1;
            assertTrue(round < 1_000, "the priority-0 job was never admitted");
        }

        List<Long> before = order.subList(0, oldAt);
        for (long id : before) {
            Job j = stream.get(id);
            assertTrue(j.offsetSeconds() < bound, "a priority-" + pHigh + " job due " + j.offsetSeconds()
                    + " s after the priority-" + p + " job overtook it; the bound is " + bound + " s");
        }
        assertEquals(bound, before.size(), "every priority-" + pHigh + " job due less than " + bound
                + " s after it went first: 0..99 s, one a second");
        // At exactly the bound the keys tie and the older job goes first.
        Job atBound = stream.values().stream().filter(j -> j.offsetSeconds() == bound).findFirst().orElseThrow();
        assertTrue(order.indexOf(atBound.id()) > oldAt, "the tie at exactly " + bound + " s goes to the older job");
        // The test was under load: many later high-priority jobs were waiting when the old job went, and did
        // not overtake it.
        int oldRound = oldAt; // one admission per round: the old job went in round oldAt
        long waitingLater = stream.values().stream()
                .filter(j -> j.offsetSeconds() >= bound && j.enqueuedInRound() <= oldRound).count();
        assertTrue(waitingLater > 150, "later priority-10 jobs waiting when it was admitted: " + waitingLater);
    }

    /**
     * The same bound for any pair of priorities: a reference job of priority 3 against a stream of random
     * priorities from -5 to 20. Each stream job that was waiting when the reference was admitted went ahead
     * of it exactly when it became due less than (p' - 3) * AGING_INTERVAL after it.
     */
    @Test
    void anyPriorityGapIsWorthGapTimesTheAgingInterval() {
        int p = 3;
        Random random = new Random(17);
        Job ref = enqueue(p, 0, 0);
        long longestReach = (20 - p) * AGING_INTERVAL_SECONDS; // the furthest any stream job can overtake from

        Map<Long, Job> stream = new HashMap<>();
        List<Long> order = new ArrayList<>();
        long next = 0;
        int refAt = -1;
        for (int round = 0; refAt < 0; round++) {
            for (int k = 0; k < 2 * ARRIVALS_PER_ROUND; k++, next++) { // faster: all reachers arrive in time
                Job j = enqueue(-5 + random.nextInt(26), next, round);
                stream.put(j.id(), j);
            }
            long admitted = admitOne();
            order.add(admitted);
            if (admitted == ref.id()) refAt = order.size() - 1;
            assertTrue(round < 1_000, "the reference job was never admitted");
        }
        assertTrue(next > longestReach, "every stream job that could overtake had arrived before the reference went");

        java.util.Set<Long> before = new java.util.HashSet<>(order.subList(0, refAt));
        int overtook = 0;
        for (Job j : stream.values()) {
            long reach = (j.priority() - p) * AGING_INTERVAL_SECONDS; // how much later it may be due and still go first
            boolean shouldOvertake = j.offsetSeconds() < reach;
            assertEquals(shouldOvertake, before.contains(j.id()), "priority " + j.priority() + " due "
                    + j.offsetSeconds() + " s after the priority-" + p + " reference (reach " + reach + " s)");
            if (shouldOvertake) overtook++;
        }
        assertTrue(overtook > 20, "a meaningful number of jobs overtook: " + overtook);
    }
}

package dev.fairq.scheduler;

import dev.fairq.schema.Admission;
import dev.fairq.schema.TenantLimits;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.function.ToDoubleFunction;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Shares by worker time, on a simulated clock: {@link WeightedFairAdmission} with synthetic job costs drives a
 * simulated pool of worker threads (claims in rank order, as the workers do), and the test measures each
 * tenant's worker seconds over the middle half of the run. No database, no real time: every figure is exact
 * and the same on every machine.
 */
class TimeShareTest {
    /** Worker threads of the simulated pool, and ready jobs kept beyond the free ones (the scheduler's buffer). */
    static final int THREADS = 8, SLACK = 8;

    record Tenant(String id, int weight, ToDoubleFunction<Random> seconds) {}

    /** What one simulated run measured. */
    record Result(Map<String, Double> workerSeconds, Map<String, Double> longestWaitBetweenStarts, double utilisation,
                  Map<String, Integer> starts) {
        double share(String id) {
            double total = workerSeconds.values().stream().mapToDouble(Double::doubleValue).sum();
            return workerSeconds.get(id) / total;
        }
    }

    /** How the scheduler charges a job at admission, given its tenant and actual length (an estimator). */
    interface Charging {
        /** What the job would be charged (no side effects: most candidates are not picked). */
        double charge(TenantState t, double actualSeconds);

        /** The job was picked at this charge. */
        default void picked(TenantState t, double charged) {
        }

        /** Called when the job's attempt ends: the correction (actual - charged) to apply, or 0 for none. */
        default double settle(TenantState t, double charged, double actualSeconds) {
            return actualSeconds - charged;
        }
    }

    /**
     * Every tenant always has jobs waiting. Each round tops the ready buffer up to the free threads plus the
     * slack, picking with the policy; free threads claim the lowest rank; the clock jumps to the next end.
     */
    static Result simulate(List<Tenant> tenants, Charging charging, double seconds, long seed) {
        Random random = new Random(seed);
        WeightedFairAdmission policy = new WeightedFairAdmission();
        Map<String, TenantState> states = new LinkedHashMap<>();
        for (Tenant t : tenants) {
            states.put(t.id(), new TenantState(new TenantLimits(t.id(), t.weight(), 1e6, 1_000_000, 1_000_000,
                    1_000_000, false, List.of()), () -> 0L));
        }
        record Job(String tenant, long id, double rank, double actual, double charged) {}
        record Run(Job job, double start, double end) {}
        PriorityQueue<Job> ready = new PriorityQueue<>(Comparator.comparingDouble(Job::rank).thenComparingLong(Job::id));
        PriorityQueue<Run> running = new PriorityQueue<>(Comparator.comparingDouble(Run::end));
        Map<Long, double[]> lengths = new HashMap<>(); // job id -> {actual, charged}
        Map<String, Double> busy = new HashMap<>(), longestWait = new HashMap<>(), lastStart = new HashMap<>();
        Map<String, Integer> starts = new HashMap<>();
        double from = seconds / 4, to = seconds * 3 / 4;
        long nextId = 1;
        double now = 0, busyTotal = 0;
        while (now < seconds) {
            int wanted = THREADS - running.size() + SLACK - ready.size();
            if (wanted > 0) {
                Map<String, List<Long>> candidates = new LinkedHashMap<>();
                for (Tenant t : tenants) {
                    List<Long> ids = new ArrayList<>();
                    for (int i = 0; i < wanted; i++) {
                        long id = nextId++;
                        double actual = t.seconds().applyAsDouble(random);
                        lengths.put(id, new double[]{actual, charging.charge(states.get(t.id()), actual)});
                        ids.add(id);
                    }
                    candidates.put(t.id(), ids);
                }
                Double nextRank = ready.isEmpty() ? null : ready.peek().rank();
                for (AdmissionPolicy.Pick p : policy.choose(candidates, states, wanted, nextRank, null,
                        (t, id) -> lengths.get(id)[1])) {
                    double[] l = lengths.get(p.jobId());
                    ready.add(new Job(p.tenantId(), p.jobId(), p.rank(), l[0], l[1]));
                    charging.picked(states.get(p.tenantId()), l[1]);
                }
                lengths.clear(); // the jobs not picked stay in the backlog, as new draws next round
            }
            while (running.size() < THREADS && !ready.isEmpty()) {
                Job j = ready.poll();
                running.add(new Run(j, now, now + j.actual()));
                starts.merge(j.tenant(), 1, Integer::sum);
                if (now >= from && now <= to) {
                    Double last = lastStart.get(j.tenant());
                    if (last != null) longestWait.merge(j.tenant(), now - last, Math::max);
                    lastStart.put(j.tenant(), now);
                }
            }
            Run r = running.poll();
            now = r.end();
            double overlap = Math.max(0, Math.min(r.end(), to) - Math.max(r.start(), from));
            busy.merge(r.job().tenant(), overlap, Double::sum);
            busyTotal += overlap;
            TenantState t = states.get(r.job().tenant());
            policy.correct(t, charging.settle(t, r.job().charged(), r.job().actual()), ready.isEmpty() ? null : ready.peek().rank());
        }
        return new Result(busy, longestWait, busyTotal / ((to - from) * THREADS), starts);
    }

    static final Charging EXACT = new Charging() {
        @Override
        public double charge(TenantState t, double actualSeconds) {
            return actualSeconds;
        }
    };
    static final Charging PER_JOB = new Charging() {
        @Override
        public double charge(TenantState t, double actualSeconds) {
            return 1;
        }

        @Override
        public double settle(TenantState t, double charged, double actualSeconds) {
            return 0;
        }
    };

    static Tenant sleeps(String id, int weight, double seconds) {
        // +-20 % around the mean, so that no two jobs are alike
        return new Tenant(id, weight, r -> seconds * (0.8 + 0.4 * r.nextDouble()));
    }

    @Test
    void equalWeightsGetEqualWorkerTimeWhateverTheJobsLast() {
        Result r = simulate(List.of(sleeps("a", 1, 0.200), sleeps("b", 1, 0.005)), EXACT, 600, 1);
        assertEquals(0.5, r.share("a"), 0.05, "a's worker-time share");
        assertEquals(1.0, r.utilisation(), 1e-9, "work-conserving: every thread busy all the time");
        // by jobs, the 200 ms tenant takes nearly all the worker time: the mode the issue measures against
        Result byJobs = simulate(List.of(sleeps("a", 1, 0.200), sleeps("b", 1, 0.005)), PER_JOB, 600, 1);
        assertTrue(byJobs.share("a") > 0.9, "by jobs a gets " + byJobs.share("a"));
    }

    @Test
    void weightsSplitWorkerTimeInTheirRatio() {
        Result r = simulate(List.of(sleeps("a", 3, 0.200), sleeps("b", 1, 0.005)), EXACT, 600, 2);
        assertEquals(0.75, r.share("a"), 0.05, "weights 3:1");
        Result three = simulate(List.of(sleeps("a", 1, 0.050), sleeps("b", 2, 0.010), sleeps("c", 1, 1.0)),
                EXACT, 1200, 3);
        assertEquals(0.25, three.share("a"), 0.05);
        assertEquals(0.50, three.share("b"), 0.05);
        assertEquals(0.25, three.share("c"), 0.05);
    }

    @Test
    void aWrongEstimateIsCorrectedWhenTheAttemptsEnd() {
        // a's jobs are charged a tenth of what they take (and b's ten times), corrected as each attempt ends
        Charging wrong = (t, actual) -> t.id().equals("a") ? actual / 10 : actual * 10;
        Result r = simulate(List.of(sleeps("a", 1, 0.200), sleeps("b", 1, 0.005)), wrong, 600, 4);
        assertEquals(0.5, r.share("a"), 0.07, "corrections bring the share back to the weights");
    }

    @Test
    void noTenantStarvesAndEachStartsWithinTheBound() {
        // one tenant of 2 s jobs beside three of 10 ms: each still starts jobs, at its share
        List<Tenant> tenants = List.of(sleeps("long", 1, 2.0), sleeps("s1", 1, 0.010), sleeps("s2", 1, 0.010),
                sleeps("s3", 1, 0.010));
        Result r = simulate(tenants, EXACT, 1200, 5);
        for (Tenant t : tenants) {
            assertEquals(0.25, r.share(t.id()), 0.06, t.id() + "'s share");
            assertTrue(r.starts().getOrDefault(t.id(), 0) > 10, t.id() + " started jobs");
        }
        // between two starts of a tenant the others admit at most its charge over its weight times theirs: here
        // 2.4 s x 4 (weights) / 8 threads, plus the longest job (2.4 s) to free a thread, about 3.6 s
        for (Tenant t : tenants) {
            assertTrue(r.longestWaitBetweenStarts().get(t.id()) < 3.6, t.id() + " waited "
                    + r.longestWaitBetweenStarts().get(t.id()) + " s between two starts");
        }
        assertTrue(r.longestWaitBetweenStarts().get("long") > 0.5,
                "longest wait between two starts of the long tenant: " + r.longestWaitBetweenStarts().get("long"));
    }

    @Test
    void estimatesLearntFromFinishedAttemptsConvergeAndSettleTheirCharges() {
        WorkerTimeCosts costs = new WorkerTimeCosts();
        TenantState a = new TenantState(new TenantLimits("a", 1, 1e6, 1_000_000, 1_000_000, 1_000_000, false,
                List.of()), () -> 0L);
        assertEquals(WorkerTimeCosts.DEFAULT_SECONDS, costs.estimate(a, "render"), 1e-12, "nothing known yet");
        double charge = costs.estimate(a, "render");
        for (int i = 0; i < 10; i++) costs.charged(a, "render", charge);
        double correction = costs.finished(a, new Admission.FinishedWork("a", "render", 10, 2.0));
        assertEquals(2.0 - 10 * charge, correction, 1e-9, "actual minus what was charged");
        assertEquals(0.2, costs.estimate(a, "render"), 1e-9, "the first attempts replace the guess");
        assertEquals(0.2, a.unitCost, 1e-9);
        for (int i = 0; i < 30; i++) costs.finished(a, new Admission.FinishedWork("a", "render", 1, 0.4));
        assertEquals(0.4, costs.estimate(a, "render"), 0.01, "the estimate follows a change within tens of attempts");
        costs.finished(a, new Admission.FinishedWork("a", "huge", 1, 3600));
        assertEquals(WorkerTimeCosts.MAX_SECONDS, costs.estimate(a, "huge"), 1e-9, "one charge is at most a minute");
        // attempts admitted by an earlier leader have no charge here: charged their actual time in full
        assertEquals(0.5, costs.finished(a, new Admission.FinishedWork("a", "other", 1, 0.5)), 1e-9);
    }

    @Test
    void withLearntEstimatesTheSharesConverge() {
        // the scheduler's real estimator: each tenant's charge is learnt from what its attempts took
        WorkerTimeCosts costs = new WorkerTimeCosts();
        Charging learnt = new Charging() {
            @Override
            public double charge(TenantState t, double actualSeconds) {
                return costs.estimate(t, "job");
            }

            @Override
            public void picked(TenantState t, double charged) {
                costs.charged(t, "job", charged);
            }

            @Override
            public double settle(TenantState t, double charged, double actualSeconds) {
                return costs.finished(t, new Admission.FinishedWork(t.id(), "job", 1, actualSeconds));
            }
        };
        Result r = simulate(List.of(sleeps("a", 1, 0.200), sleeps("b", 1, 0.005)), learnt, 600, 6);
        assertEquals(0.5, r.share("a"), 0.05, "a's share with learnt estimates");
    }

    /**
     * A granted job was charged when its grant was made (its type unknown then): its attempt settles that charge,
     * it is not charged its time a second time. A grant taken back unused settles nothing.
     */
    @Test
    void aGrantedJobsAttemptSettlesTheGrantsChargeOnce() {
        WorkerTimeCosts costs = new WorkerTimeCosts();
        TenantState b = new TenantState(new TenantLimits("b", 1, 1e6, 1_000_000, 1_000_000, 1_000_000, false,
                List.of()), () -> 0L);
        costs.chargedGrant(b, 0.005);
        costs.chargedGrant(b, 0.005);
        costs.grantRevoked(b); // one of the two went back unused
        assertEquals(0.001, costs.finished(b, new Admission.FinishedWork("b", "sleep", 1, 0.006)), 1e-12,
                "actual minus the grant's charge");
        assertEquals(0.006, costs.finished(b, new Admission.FinishedWork("b", "sleep", 1, 0.006)), 1e-12,
                "no grant charge left: an attempt with no charge here pays in full");
        assertEquals(0, b.grantCharges.count);
    }

    /**
     * A credit (an attempt that took less than its charge) takes a tenant's pass down to the virtual time and no
     * further: below it, its next jobs would be ranked ahead of the claim point, where a tenant that becomes
     * active starts. A debt is never cut.
     */
    @Test
    void aCreditStopsAtTheVirtualTimeADebtDoesNot() {
        WeightedFairAdmission policy = new WeightedFairAdmission();
        TenantState a = new TenantState(new TenantLimits("a", 1, 1e6, 1_000_000, 1_000_000, 1_000_000, false,
                List.of()), () -> 0L);
        a.pass = 5.0;
        policy.correct(a, -0.5, 4.0);
        assertEquals(4.5, a.pass, 1e-12, "a credit above the virtual time");
        policy.correct(a, -3.0, 4.0);
        assertEquals(4.0, a.pass, 1e-12, "stops at the virtual time (the next rank)");
        policy.correct(a, -1.0, 4.5);
        assertEquals(4.0, a.pass, 1e-12, "already below it: not lowered further");
        policy.correct(a, 2.0, 4.5);
        assertEquals(6.0, a.pass, 1e-12, "a debt is paid in full");
    }
}

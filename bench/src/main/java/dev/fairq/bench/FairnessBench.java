package dev.fairq.bench;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import org.jooq.Record;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static dev.fairq.bench.OrderingBench.count;

/**
 * Tenant a floods 20,000 {@code sleep} 5 ms jobs (bulk enqueue); 3 s after the worker is up, tenant b submits
 * 50 {@code sleep} 5 ms jobs one at a time, one every 30 ms (a normal tenant's trickle). One worker process,
 * 8 threads; both tenants weight 1, limits out of the way. b's enqueue-to-start latency (started_at -
 * created_at, the database's clock) is measured three times in the same run: b alone (after 2,000 jobs of a
 * third tenant warmed the worker up, all done before b starts), b under the flood
 * with fairness on, b under the flood with FIFO (the baseline). Throughput: jobs started per second in a
 * fixed window (2 s to 10 s after the first start), fair versus FIFO.
 */
final class FairnessBench implements Bench.Benchmark {
    static final int FLOOD = 20_000;
    static final int WARM_UP = 2_000;
    static final int B_JOBS = 50;
    static final long B_INTERVAL_MS = 30;
    static final long B_START_MS = 3_000;
    static final double WINDOW_FROM_S = 2, WINDOW_TO_S = 10;

    /** {@code slowestB}: where b's slowest job spent its wait, and what the platform did for others meanwhile. */
    private record Result(List<Double> bLatencies, List<Double> bAdmission, double windowJobsPerS, boolean floodStillPending,
                          Map<String, Object> slowestB) {}

    @Override
    public Map<String, Object> run(BenchDatabase db) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("flood", FLOOD + " x sleep 5 ms, tenant a, bulk enqueue");
        out.put("b_trickle", B_JOBS + " x sleep 5 ms, tenant b, one every " + B_INTERVAL_MS + " ms from " + B_START_MS + " ms");
        out.put("workers", "1 process x 8 threads");
        Result alone = scenario(db, SchedulerConfig.defaults(), false);
        Result fair = scenario(db, SchedulerConfig.defaults(), true);
        Result fifo = scenario(db, SchedulerConfig.builder().fair(false).build(), true);
        out.putAll(Stats.summary("b_alone_", alone.bLatencies()));
        out.putAll(Stats.summary("b_flood_fair_", fair.bLatencies()));
        out.putAll(Stats.summary("b_flood_fifo_", fifo.bLatencies()));
        // where b's wait is spent: created -> admitted (the scheduler), the rest (the ready buffer and the claim)
        out.put("b_alone_created_to_admitted_p50_ms", Stats.round(Stats.percentile(alone.bAdmission(), 50)));
        out.put("b_flood_fair_created_to_admitted_p50_ms", Stats.round(Stats.percentile(fair.bAdmission(), 50)));
        out.put("b_flood_fair_created_to_admitted_max_ms", Stats.round(Stats.percentile(fair.bAdmission(), 100)));
        double p99Alone = Stats.percentile(alone.bLatencies(), 99);
        out.put("p99_ratio", Stats.ratio(Stats.percentile(fair.bLatencies(), 99), p99Alone));
        out.put("p99_ratio_fifo", Stats.ratio(Stats.percentile(fifo.bLatencies(), 99), p99Alone));
        out.put("p50_ratio", Stats.ratio(Stats.percentile(fair.bLatencies(), 50), Stats.percentile(alone.bLatencies(), 50)));
        out.put("b_alone_slowest", alone.slowestB());
        out.put("b_flood_fair_slowest", fair.slowestB());
        out.put("window_jobs_per_s_fair", Math.round(fair.windowJobsPerS()));
        out.put("window_jobs_per_s_fifo", Math.round(fifo.windowJobsPerS()));
        out.put("throughput_ratio_vs_fifo", Stats.ratio(fair.windowJobsPerS(), fifo.windowJobsPerS()));
        out.put("throughput_window_s", WINDOW_FROM_S + "-" + WINDOW_TO_S + " after the first start");
        out.put("targets", "p99_ratio <= 1.5; throughput_ratio_vs_fifo >= 0.9");
        return out;
    }

    private Result scenario(BenchDatabase db, SchedulerConfig config, boolean flood) throws Exception {
        db.truncate();
        db.createUnlimitedTenant("a");
        db.createUnlimitedTenant("b");
        db.createUnlimitedTenant("warm");
        JobStore store = new JobStore();
        // Under the flood the worker JVM warms up on a's jobs before b arrives. Alone, it warms up on the same
        // kind of jobs of a third tenant, all done before b's first job: else b alone would be measured on a
        // cold JVM (its p99 was its first, JIT-bound job: 31-43 ms) and the ratio would flatter the flood.
        int firstJobs = flood ? FLOOD : WARM_UP;
        String firstTenant = flood ? "a" : "warm";
        List<JobRequest> jobs = new ArrayList<>(firstJobs);
        for (int i = 0; i < firstJobs; i++) jobs.add(JobRequest.builder(firstTenant, "sleep").payload("{\"ms\": 5}").build());
        for (int i = 0; i < firstJobs; i += 5_000) store.enqueueAll(db.dsl(), jobs.subList(i, Math.min(firstJobs, i + 5_000)));
        db.dsl().execute("VACUUM ANALYZE jobs");
        boolean floodStillPending;
        try (BenchPlatform platform = new BenchPlatform(db)) {
            platform.startScheduler(config);
            platform.startWorkerProcess("fair-w0", 8);
            // b's 3 s count from the worker's JVM being up: counted from its launch, on a loaded machine (a bench
            // worker took 3.6 s to register) b's first jobs under the flood waited for the JVM, not for the flood
            platform.awaitWorkers(1, 120_000);
            long start = System.nanoTime();
            sleepUntil(start + B_START_MS * 1_000_000);
            if (!flood) {
                // b alone starts once the warm-up is done (a slow machine needs longer than B_START_MS for it);
                // b's own schedule then counts from there
                long deadline = System.nanoTime() + 120_000_000_000L;
                while (count(db, "SELECT count(*) FROM jobs WHERE tenant_id = 'warm' AND status <> 'succeeded'") > 0) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("the warm-up jobs were not done 120 s after b's start: b would not be alone");
                    }
                    Thread.sleep(50);
                }
                start = System.nanoTime() - B_START_MS * 1_000_000;
            }
            for (int i = 0; i < B_JOBS; i++) {
                store.enqueue(db.dsl(), JobRequest.builder("b", "sleep").payload("{\"ms\": 5}").build());
                sleepUntil(start + (B_START_MS + (i + 1) * B_INTERVAL_MS) * 1_000_000);
            }
            floodStillPending = false;
            if (flood) { // close the throughput window first, while a's flood must still be waiting
                sleepUntilAfterFirstStart(db, WINDOW_TO_S + 0.5);
                floodStillPending = count(db, "SELECT count(*) FROM jobs WHERE tenant_id = 'a' AND status = 'pending'") > 0;
            }
            while (count(db, "SELECT count(*) FROM jobs WHERE tenant_id = 'b' AND status <> 'succeeded'") > 0) {
                if (System.nanoTime() - start > 120_000_000_000L) throw new IllegalStateException("b not done in 120 s");
                Thread.sleep(50);
            }
        }
        long bDone = count(db, "SELECT count(*) FROM jobs WHERE tenant_id = 'b' AND status = 'succeeded'");
        if (bDone != B_JOBS) throw new IllegalStateException("b: " + bDone + " of " + B_JOBS + " succeeded");
        long dead = count(db, "SELECT count(*) FROM jobs WHERE status = 'dead'");
        if (dead != 0) throw new IllegalStateException(dead + " dead jobs");
        if (flood && !floodStillPending) {
            throw new IllegalStateException("a's flood drained before the throughput window closed: the window measured idle time");
        }
        List<Double> b = new ArrayList<>(), bAdmission = new ArrayList<>();
        for (Record r : db.dsl().fetch("SELECT extract(epoch FROM started_at - created_at) * 1000, "
                + "extract(epoch FROM admitted_at - created_at) * 1000 FROM jobs WHERE tenant_id = 'b'")) {
            b.add(r.get(0, Double.class));
            bAdmission.add(r.get(1, Double.class));
        }
        double window = 0;
        if (flood) {
            window = ((Number) db.dsl().fetchValue("""
                    WITH f AS (SELECT min(started_at) AS t FROM jobs)
                    SELECT count(*) FROM jobs, f
                    WHERE started_at >= f.t + ? * interval '1 second' AND started_at < f.t + ? * interval '1 second'""",
                    WINDOW_FROM_S, WINDOW_TO_S)).doubleValue() / (WINDOW_TO_S - WINDOW_FROM_S);
        }
        Map<String, Object> slowest = slowest(db, "tenant_id = 'b'");
        return new Result(b, bAdmission, window, floodStillPending, slowest);
    }

    /**
     * Where the slowest (enqueue-to-start) of the trickled jobs ({@code mine}: an SQL condition on jobs) waited:
     * created -> admitted (the scheduler), admitted -> started (the ready buffer and the claim), which of the
     * trickled jobs it was (1 = the first), and what the platform did for the others meanwhile.
     */
    static Map<String, Object> slowest(BenchDatabase db, String mine) {
        Map<String, Object> slowest = new LinkedHashMap<>();
        Record w = db.dsl().fetchOne("WITH s AS (SELECT id, created_at, admitted_at, started_at, ready_rank FROM jobs WHERE " + mine + """
                           ORDER BY started_at - created_at DESC LIMIT 1)
                SELECT s.id, extract(epoch FROM s.admitted_at - s.created_at) * 1000,
                       extract(epoch FROM s.started_at - s.admitted_at) * 1000,
                       (SELECT count(*) FROM jobs o WHERE NOT (%1$s) AND o.admitted_at > s.created_at
                          AND o.admitted_at < s.admitted_at),
                       (SELECT count(*) FROM jobs o WHERE NOT (%1$s) AND o.started_at > s.created_at
                          AND o.started_at < s.started_at),
                       (SELECT max(g) FROM (SELECT extract(epoch FROM o.admitted_at - lag(o.admitted_at) OVER (ORDER BY o.admitted_at)) * 1000 AS g
                                            FROM jobs o WHERE o.admitted_at BETWEEN s.created_at AND s.started_at) x),
                       (SELECT count(*) FROM jobs o WHERE (%1$s) AND o.id <= s.id),
                       s.created_at::text, s.admitted_at::text, s.ready_rank,
                       (SELECT count(*) FROM jobs o WHERE NOT (%1$s) AND o.started_at > s.admitted_at
                          AND o.started_at < s.started_at AND o.ready_rank <= s.ready_rank),
                       (SELECT count(*) FROM jobs o WHERE NOT (%1$s) AND o.started_at > s.admitted_at
                          AND o.started_at < s.started_at AND o.admitted_at < s.admitted_at),
                       (SELECT min(o.ready_rank) || ' .. ' || max(o.ready_rank) FROM jobs o WHERE NOT (%1$s)
                          AND o.started_at > s.admitted_at AND o.started_at < s.started_at AND o.ready_rank <= s.ready_rank),
                       (SELECT 'admitted ' || round((extract(epoch FROM p.admitted_at - s.created_at) * 1000)::numeric, 1)
                               || ' ms, started ' || round((extract(epoch FROM p.started_at - s.created_at) * 1000)::numeric, 1)
                               || ' ms after its creation, rank ' || p.ready_rank
                        FROM jobs p WHERE (%1$s) AND p.id < s.id ORDER BY p.id DESC LIMIT 1)
                FROM s""".formatted(mine));
        slowest.put("id", w.get(0));
        slowest.put("nth_of_trickle", w.get(6));
        slowest.put("created_at", w.get(7)); // to find it in a log
        slowest.put("admitted_at", w.get(8));
        slowest.put("created_to_admitted_ms", Stats.round(w.get(1, Double.class)));
        slowest.put("admitted_to_started_ms", Stats.round(w.get(2, Double.class)));
        slowest.put("others_admitted_meanwhile", w.get(3));
        slowest.put("others_started_meanwhile", w.get(4));
        slowest.put("longest_admission_gap_ms", w.get(5) == null ? null : Stats.round(w.get(5, Double.class)));
        // claimed (started_at is the claim) after it was admitted and before it: ranked at or ahead of it, and
        // admitted before it (already in the ready buffer when it came)
        slowest.put("ready_rank", w.get(9));
        slowest.put("claimed_after_its_admission_ranked_ahead", w.get(10));
        slowest.put("claimed_after_its_admission_admitted_before_it", w.get(11));
        slowest.put("ranks_claimed_ahead_of_it", w.get(12));
        slowest.put("previous_of_its_kind", w.get(13)); // was it still waiting when this one came?
        return slowest;
    }

    /**
     * Waits until {@code seconds} after the first job's start on the database clock. Reads the first start once
     * and then sleeps: polling {@code min(started_at)} (no index) every 100 ms scanned the whole table each time,
     * up to 31 ms of database CPU a poll (log_min_duration_statement), beside the flood being measured.
     */
    static void sleepUntilAfterFirstStart(BenchDatabase db, double seconds) throws InterruptedException {
        // started_at is indexed per tenant only (jobs_tenant_started_idx): the first start is one probe per tenant
        String first = "(SELECT min(s) FROM tenants t, LATERAL (SELECT min(started_at) AS s FROM jobs j "
                + "WHERE j.tenant_id = t.id AND j.started_at IS NOT NULL) x)";
        long deadline = System.nanoTime() + 120_000_000_000L;
        Double left;
        while ((left = db.dsl().fetchValue("SELECT extract(epoch FROM " + first + " + ? * interval '1 second' - now())",
                seconds) instanceof Number n ? n.doubleValue() : null) == null) {
            if (System.nanoTime() > deadline) throw new IllegalStateException("no job started within 120 s");
            Thread.sleep(100);
        }
        if (left > 0) Thread.sleep((long) Math.ceil(left * 1000));
    }

    static void sleepUntil(long nanoTime) throws InterruptedException {
        long ms = (nanoTime - System.nanoTime()) / 1_000_000;
        if (ms > 0) Thread.sleep(ms);
    }
}

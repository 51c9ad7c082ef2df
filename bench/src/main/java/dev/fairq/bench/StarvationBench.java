package dev.fairq.bench;

import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import org.jooq.Record;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static dev.fairq.bench.OrderingBench.count;

/**
 * A continuous stream of priority-3 {@code sleep} 10 ms jobs keeps one worker process (8 threads) saturated:
 * a producer tops the pending high-priority jobs up to 300 every 20 ms, so the workers never run dry and the
 * backlog stays small. Five priority-0 jobs are submitted 3, 6, 9, 12 and 15 s into the stream.
 *
 * <p>The rule (V1__queue.sql, sort_key = epoch(run_at) / 10 - priority): one priority level per 10 s, so a
 * job of priority 0 is overtaken only by priority-3 jobs enqueued less than 3 x 10 s after it. Its wait is
 * then bounded by 30 s plus the time to start what was already ahead of it when the last overtaking job
 * came in: at most the producer's backlog (300) plus the ready buffer (capacity 8 + lookahead), which
 * we allow 2 s for (at least 150 jobs/s, a fifth of this worker's rate). bound_ms = 30,000 + 2,000, fixed
 * before the run. A priority-0 job that starts much before 30 s would mean priority is not honoured (or the
 * stream did not saturate the workers), so that fails the run too.
 */
final class StarvationBench implements Bench.Benchmark {
    static final int GAP = 3;
    static final long AGING_MS_PER_LEVEL = 10_000;
    static final long ALLOWANCE_MS = 2_000;
    static final int BACKLOG = 300;
    static final int LOW_JOBS = 5;

    @Override
    @SuppressWarnings("unchecked")
    public Map<String, Object> run(BenchDatabase db) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        long bound = GAP * AGING_MS_PER_LEVEL + ALLOWANCE_MS;
        out.put("high_priority", GAP);
        out.put("low_priority", 0);
        out.put("stream", "sleep 10 ms jobs, pending topped up to " + BACKLOG + " every 20 ms");
        out.put("workers", "1 process x 8 threads");
        out.put("aging_bound_ms", GAP * AGING_MS_PER_LEVEL);
        out.put("bound_ms", bound);
        db.truncate();
        db.createUnlimitedTenant("t0");
        JobStore store = new JobStore();
        AtomicBoolean producing = new AtomicBoolean(true);
        AtomicLong emptyObservations = new AtomicLong();
        AtomicLong produced = new AtomicLong();
        List<Double> waits = new ArrayList<>();
        try (BenchPlatform platform = new BenchPlatform(db)) {
            platform.startScheduler(SchedulerConfig.defaults());
            platform.startWorkerProcess("starve-w0", 8);
            while (count(db, "SELECT count(*) FROM workers") == 0) Thread.sleep(20);
            LoadThread producer = new LoadThread("bench-producer", () -> {
                boolean first = true;
                while (producing.get()) {
                    long pending = count(db, "SELECT count(*) FROM jobs WHERE status = 'pending' AND priority = " + GAP);
                    if (pending == 0 && !first) emptyObservations.incrementAndGet();
                    first = false;
                    int n = (int) (BACKLOG - pending);
                    if (n > 0) {
                        List<JobRequest> jobs = new ArrayList<>(n);
                        for (int i = 0; i < n; i++) {
                            jobs.add(JobRequest.builder("t0", "sleep").payload("{\"ms\": 10}").priority(GAP).build());
                        }
                        store.enqueueAll(db.dsl(), jobs);
                        produced.addAndGet(n);
                    }
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            producer.start();
            long start = System.nanoTime();
            for (int i = 1; i <= LOW_JOBS; i++) {
                FairnessBench.sleepUntil(start + i * 3_000_000_000L);
                store.enqueue(db.dsl(), JobRequest.builder("t0", "sleep").payload("{\"ms\": 10}").priority(0).build());
            }
            while (count(db, "SELECT count(*) FROM jobs WHERE priority = 0 AND started_at IS NULL") > 0) {
                if (System.nanoTime() - start > 150_000_000_000L) {
                    producing.set(false);
                    throw new IllegalStateException("priority-0 jobs still waiting after 150 s: starvation");
                }
                Thread.sleep(100);
            }
            producing.set(false);
            producer.join();
            for (Record r : db.dsl().fetch("SELECT extract(epoch FROM started_at - created_at) * 1000 FROM jobs "
                    + "WHERE priority = 0 ORDER BY id")) {
                waits.add(r.get(0, Double.class));
            }
            // per low job: the priority-3 jobs that were ahead of it by the rule (lower sort_key) yet started
            // after it, and those behind it that started before it
            List<Map<String, Object>> lows = new ArrayList<>();
            for (Record r : db.dsl().fetch("""
                    SELECT l.id, extract(epoch FROM l.started_at - l.created_at) * 1000,
                           extract(epoch FROM l.admitted_at - l.created_at) * 1000,
                           (SELECT count(*) FROM jobs h WHERE h.priority = %d AND h.sort_key < l.sort_key
                              AND (h.started_at IS NULL OR h.started_at > l.started_at)),
                           (SELECT count(*) FROM jobs h WHERE h.priority = %d AND h.sort_key > l.sort_key
                              AND h.started_at < l.started_at)
                    FROM jobs l WHERE l.priority = 0 ORDER BY l.id""".formatted(GAP, GAP))) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("id", r.get(0, Long.class));
                m.put("wait_ms", Stats.round(r.get(1, Double.class)));
                m.put("admitted_after_ms", Stats.round(r.get(2, Double.class)));
                m.put("ahead_by_rule_started_later", r.get(3, Long.class));
                m.put("behind_by_rule_started_earlier", r.get(4, Long.class));
                lows.add(m);
            }
            out.put("low_jobs", lows);
            long highStartedAfterLow = count(db, """
                    SELECT count(*) FROM jobs h WHERE h.priority = %d AND h.started_at >
                        (SELECT max(started_at) FROM jobs WHERE priority = 0)""".formatted(GAP));
            out.put("high_jobs_started_after_last_low", highStartedAfterLow);
        }
        List<Map<String, Object>> lows = (List<Map<String, Object>>) out.get("low_jobs");
        double max = waits.stream().mapToDouble(Double::doubleValue).max().orElseThrow();
        double min = waits.stream().mapToDouble(Double::doubleValue).min().orElseThrow();
        out.put("low_waits_ms", waits.stream().map(Stats::round).toList());
        out.put("max_wait_ms", Stats.round(max));
        out.put("min_wait_ms", Stats.round(min));
        out.put("max_wait_ratio_to_bound", Stats.ratio(max, bound));
        out.put("high_jobs_produced", produced.get());
        out.put("producer_saw_no_pending_high", emptyObservations.get());
        long dead = count(db, "SELECT count(*) FROM jobs WHERE status = 'dead'");
        if (dead != 0) throw new IllegalStateException(dead + " dead jobs");
        if (emptyObservations.get() > 0) {
            throw new IllegalStateException("the high-priority stream ran dry " + emptyObservations.get() + " times: workers not saturated; " + out);
        }
        long violations = 0;
        for (Map<String, Object> l : lows) {
            violations += (Long) l.get("ahead_by_rule_started_later") + (Long) l.get("behind_by_rule_started_earlier");
        }
        out.put("rule_violations", violations);
        if (violations > 0) throw new IllegalStateException("priority order broken: " + violations + " jobs out of the aging order; " + out);
        if (max > bound) {
            // the bound is the guarantee this benchmark checks (fixed before the run, as the class comment says); it
            // used to be printed beside max_wait_ms only, and a run past it ended as a pass
            throw new IllegalStateException("a priority-0 job waited " + max + " ms, over the " + bound + " ms bound; " + out);
        }
        if (min < 0.8 * GAP * AGING_MS_PER_LEVEL) {
            // no job went out of order, so the low job found nothing ahead of it: the stream ran dry
            // (e.g. the producer stalled in an enqueue on a loaded machine) and the run proves nothing
            throw new IllegalStateException("a priority-0 job started after " + min + " ms with nothing ahead of it by "
                    + "the rule: the priority-" + GAP + " stream ran dry, the workers were not saturated; " + out);
        }
        return out;
    }
}

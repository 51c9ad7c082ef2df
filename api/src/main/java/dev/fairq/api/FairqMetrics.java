package dev.fairq.api;

import dev.fairq.scheduler.Scheduler;
import dev.fairq.scheduler.TickStats;
import dev.fairq.scheduler.ScheduleObserver;
import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobQueries;
import dev.fairq.worker.WorkerObserver;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.core.metrics.StatefulMetric;
import io.prometheus.metrics.core.metrics.SummaryWithCallback;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Quantile;
import io.prometheus.metrics.model.snapshots.Quantiles;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The Prometheus metrics. Counters and latency histograms come from this process's worker ({@link WorkerObserver}
 * hooks); queue depth and oldest pending age are read from the database at scrape time (so every API process
 * reports the whole queue, whichever process runs the jobs).
 *
 * <p><b>Bounded:</b> a scrape's size and cost do not grow with the tenants that exist. Every family keeps its
 * {@code tenant} label, but only the tracked tenants have series of their own: the {@code topTenants} (K) with
 * the most jobs waiting or running, then those with the most recent activity in this process (the last five
 * minutes). Everything else is summed into {@code tenant="_other"} (no tenant id starts with '_'), so summing a
 * family over tenants still gives the total. When a tenant's series appear, every counter of it starts at 0,
 * so a real Prometheus server's {@code rate()} sees its first failures: a tenant with no series yet gets them at its
 * first event while fewer than K are tracked, and its events are held back (up to {@link #HELD_MAX}) until a scrape
 * has shown its series at 0, then counted; otherwise it is counted in _other until a scrape chooses it. The tracked
 * set is chosen again at each scrape; a tenant that drops out loses its series (Prometheus treats a return as a
 * counter reset), and what it still held back is counted in _other. Its series go at once when the last scrape
 * showed everything they counted, else one scrape later (that scrape shows their last counts; its events from the
 * drop on are counted in _other), so no count is in no scraped series ({@link #retiring}).
 *
 * <p>Latencies: {@code fairq_admission_latency_seconds} is enqueue (created_at) to admission on a job's first
 * attempt (it includes a delay_ms / run_at the job asked for); {@code fairq_claim_latency_seconds} is admission
 * to a worker starting it (the time in the ready buffer: to the claim on the database's clock, then the wait for a
 * thread on the worker's monotonic clock); {@code fairq_claim_statement_seconds} the claim
 * statement's round trip.
 */
final class FairqMetrics implements WorkerObserver, ScheduleObserver {
    private static final Logger log = LoggerFactory.getLogger(FairqMetrics.class);
    private static final double[] LATENCY_BUCKETS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
            5, 10, 30, 60, 300};
    /** The label value of every tenant that has no series of its own. */
    static final String OTHER = "_other";
    /** A tenant active in this process this recently is a candidate for series of its own. */
    static final Duration RECENT = Duration.ofMinutes(5);

    final PrometheusRegistry registry = new PrometheusRegistry();
    private final int topTenants;
    private final JobQueries queries = new JobQueries();
    private final DSLContext db;
    private final Counter starts;
    private final Counter successes;
    private final Counter retries;
    private final Counter deadLetters;
    private final Counter leaseLost;
    private final Histogram admission;
    private final Histogram claim;
    private final Histogram claimStatement;
    private final Histogram duration;
    private final List<StatefulMetric<?, ?>> perTenant;
    /** Tenants with series of their own: chosen at the last scrape, and new ones at their first event while there is room. */
    private volatile Set<String> tracked = Set.of();
    /**
     * Read-held from choosing a series' label to recording into it, write-held while a scrape drops and adds
     * series: an event that read the old tracked set must not record after its tenant's series were dropped (the
     * recording re-created them, outside the tracked set: a series that stayed until the set changed again, its
     * counts missing from _other).
     */
    private final ReentrantReadWriteLock series = new ReentrantReadWriteLock();
    /** Test seam: runs between choosing a label and recording into it (no-op but in tests). */
    volatile Runnable afterLabel = () -> {};
    /**
     * The most events a tenant's new series hold back until a scrape showed them at 0: beyond it (a tenant that busy
     * in its first scrape interval) they are counted at once, as they are when nothing scraped in the last five
     * minutes. Each is a closure over two or three numbers: with K = 100, at most 100,000 of them, a few MB.
     */
    static final int HELD_MAX = 1_000;

    /** A tracked tenant whose series no scrape has shown yet: its events so far, counted once one has. */
    private static final class Held {
        final long scrape; // the scrape count when the series were made: shown by any scrape that starts later
        final java.util.concurrent.ConcurrentLinkedQueue<Consumer<String>> events = new java.util.concurrent.ConcurrentLinkedQueue<>();
        final java.util.concurrent.atomic.AtomicInteger count = new java.util.concurrent.atomic.AtomicInteger();

        Held(long scrape) {
            this.scrape = scrape;
        }
    }

    /** Tracked tenants whose series no scrape has shown yet (changed under {@link #series}' write lock). */
    private final Map<String, Held> held = new ConcurrentHashMap<>();
    /** Scrapes started (changed under {@link #series}' write lock). */
    private long scrapes;
    /**
     * Per tracked tenant, {@link #scrapes} when its series last took an event: one before the last scrape started
     * was shown by it; one since may not have been (set under the read lock, read under the write lock).
     */
    private final Map<String, Long> recordedAt = new ConcurrentHashMap<>();
    /**
     * Tenants dropped from the tracked set whose series held counts no scrape had shown yet: their series stay for
     * one more scrape (their events go to _other from the drop on) and go at the next choice. Removed at once, those
     * counts had been in no series any scrape showed (a tenant that counted 3 starts before the first scrape and was
     * not chosen by it: the 3 were neither in its series nor in _other). Changed in {@link #chooseTracked} only.
     */
    private Set<String> retiring = Set.of();
    /** When the last scrape started (nanoTime; 0: never): events are held back only while something scrapes. */
    private volatile long lastScrapeNanos;

    /** Last activity (nanoTime) and how many events, per tenant active in this process lately (pruned at scrapes). */
    private final Map<String, long[]> recent = new ConcurrentHashMap<>();
    private final Counter scheduleFires;
    private final Counter scheduleSkipped;
    private final Histogram scheduleLag;

    /**
     * @param topTenants K: the most tenants with series of their own (FAIRQ_METRICS_TENANTS)
     * @param scheduler  this process's scheduler, when it runs one (its tick times and active set), else null
     * @param db         where the queue depths are read at each scrape; null in a worker or scheduler process,
     *                   which reports its own counters only (the server processes report the queue: read by every
     *                   process of a split deployment, it would be read N times a scrape and summed wrong)
     */
    FairqMetrics(DSLContext db, int topTenants, Supplier<Scheduler> scheduler) {
        this.db = db;
        this.topTenants = topTenants;
        // the depth gauges, read by scrape() before the registry collects (it also picks the tracked set)
        registry.register((MultiCollector) () -> depthSnapshots);
        starts = counter("fairq_job_starts", "job attempts started by this process's workers");
        successes = counter("fairq_job_successes", "jobs that succeeded");
        retries = counter("fairq_job_retries", "failed attempts that will be retried after a backoff");
        deadLetters = counter("fairq_job_dead_letters", "jobs moved to the dead-letter queue");
        leaseLost = counter("fairq_job_lease_lost", "outcomes dropped because the lease had expired");
        admission = histogram("fairq_admission_latency_seconds", "enqueue to admission (first attempt)", true);
        claim = histogram("fairq_claim_latency_seconds", "admission to start by a worker", true);
        claimStatement = histogram("fairq_claim_statement_seconds", "round trip of one claim statement", false);
        duration = histogram("fairq_job_duration_seconds", "handler run time", true);
        // schedules: totals (a tenant may have thousands of schedules; no per-schedule or per-tenant series)
        scheduleFires = Counter.builder().name("fairq_schedule_fires").help("schedule fires that enqueued their job "
                + "(counted by the active scheduler of this process)").register(registry);
        scheduleSkipped = Counter.builder().name("fairq_schedule_skipped_fires").help("schedule fires that enqueued "
                + "nothing, by reason: missed, overlap, queue_full, invalid").labelNames("reason").register(registry);
        // every reason from the start: a series that appears at its first increment hides that increment from rate()
        for (String reason : ScheduleObserver.SKIP_REASONS) scheduleSkipped.initLabelValues(reason);
        scheduleLag = histogram("fairq_schedule_fire_lag_seconds", "from a fire's instant to the enqueue of its job "
                + "(0 when the job was created ahead)", false);
        perTenant = List.of(starts, successes, retries, deadLetters, leaseLost, admission, claim, duration);
        for (StatefulMetric<?, ?> m : perTenant) m.initLabelValues(OTHER);
        // a summary, not a gauge with a quantile label: promtool (and Prometheus's own lint) refuses the latter
        SummaryWithCallback.builder().name("fairq_scheduler_tick_seconds")
                .help("this process's active scheduler: tick duration, quantiles over its last 4,096 ticks (1: the longest since it started)")
                .callback(cb -> {
                    Scheduler s = scheduler.get();
                    if (s == null) return;
                    TickStats.Snapshot t = s.tickStats().snapshot();
                    cb.call(t.count(), t.totalSeconds(), Quantiles.of(new Quantile(0.5, t.p50Ms() / 1000),
                            new Quantile(0.99, t.p99Ms() / 1000), new Quantile(1, t.maxMs() / 1000)));
                }).register(registry);
        GaugeWithCallback.builder().name("fairq_scheduler_tenants")
                .help("this process's active scheduler: tenants that may have work, and tenants held in memory")
                .labelNames("set")
                .callback(cb -> {
                    Scheduler s = scheduler.get();
                    if (s == null) return;
                    cb.call(s.tenantsWithWork().size(), "with_work");
                    cb.call(s.cachedTenants(), "cached");
                }).register(registry);
    }

    private Counter counter(String name, String help) {
        return Counter.builder().name(name).help(help).labelNames("tenant").register(registry);
    }

    private Histogram histogram(String name, String help, boolean perTenant) {
        Histogram.Builder b = Histogram.builder().name(name).help(help).classicOnly().classicUpperBounds(LATENCY_BUCKETS);
        if (perTenant) b.labelNames("tenant");
        return b.register(registry);
    }

    /** The tenant's own label if it is tracked, else {@link #OTHER}; notes the activity either way. */
    private String label(String tenant) {
        long now = System.nanoTime();
        recent.compute(tenant, (k, v) -> {
            if (v == null) return new long[]{now, 1};
            v[0] = now;
            v[1]++;
            return v;
        });
        String label = tracked.contains(tenant) ? tenant : OTHER;
        afterLabel.run();
        return label;
    }

    /**
     * Records into the series of the tenant's label, with the label's set held still (see {@link #series}); a tenant
     * without series gets them if fewer than K are tracked, and a tenant whose series no scrape has shown yet has
     * the event held back until one has.
     */
    private void record(String tenantId, Consumer<String> recording) {
        if (!tracked.contains(tenantId) && tracked.size() < topTenants) track(tenantId);
        ReentrantReadWriteLock.ReadLock lock = series.readLock();
        lock.lock();
        try {
            String label = label(tenantId);
            Held h = label.equals(OTHER) ? null : held.get(tenantId);
            long lastScrape = lastScrapeNanos;
            boolean scraped = lastScrape != 0 && System.nanoTime() - lastScrape < RECENT.toNanos();
            if (h != null && scraped && h.count.incrementAndGet() <= HELD_MAX) h.events.add(recording);
            else {
                recording.accept(label);
                if (!label.equals(OTHER)) recordedAt.put(tenantId, scrapes);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Series for a tenant at its first event, at 0, while fewer than K tenants have them. */
    private void track(String tenantId) {
        ReentrantReadWriteLock.WriteLock lock = series.writeLock();
        lock.lock();
        try {
            if (tracked.contains(tenantId) || tracked.size() >= topTenants) return;
            for (StatefulMetric<?, ?> m : perTenant) m.initLabelValues(tenantId);
            held.put(tenantId, new Held(scrapes));
            Set<String> more = new HashSet<>(tracked);
            more.add(tenantId);
            tracked = Set.copyOf(more);
        } finally {
            lock.unlock();
        }
    }

    /** Counts what tenants held back whose series a scrape that started after {@code scrape} has shown. */
    private void release(long scrape) {
        if (held.isEmpty()) return;
        ReentrantReadWriteLock.WriteLock lock = series.writeLock();
        lock.lock();
        try {
            held.entrySet().removeIf(e -> {
                if (e.getValue().scrape >= scrape) return false;
                for (Consumer<String> event : e.getValue().events) event.accept(e.getKey());
                // counted after this scrape collected: the next one shows them
                if (!e.getValue().events.isEmpty()) recordedAt.put(e.getKey(), scrapes);
                return true;
            });
        } finally {
            lock.unlock();
        }
    }

    /**
     * fairq_jobs{tenant,status} and fairq_oldest_pending_age_seconds{tenant}: per tracked tenant, the rest in
     * _other. One grouped count over the live jobs (pending, ready, running: bounded by the backlog, never the
     * tenants or the retention), the dead letters of the tracked tenants and in total, and one probe per tracked
     * tenant for its oldest pending job. The scrape also re-chooses the tracked set.
     */
    /** What the depth collector answers: read at each {@link #scrape()}, before the counters are collected. */
    private volatile MetricSnapshots depthSnapshots = new MetricSnapshots();

    /**
     * One scrape: the depths are read first, which re-chooses the tracked tenants, so this scrape's counters
     * and histograms already follow that choice (a new tenant's series appear at 0 in the same scrape).
     */
    synchronized MetricSnapshots scrape() {
        depthSnapshots = collectDepths();
        long scrape;
        ReentrantReadWriteLock.WriteLock lock = series.writeLock();
        lock.lock();
        try {
            scrape = ++scrapes; // series made before this line are in this scrape
            lastScrapeNanos = System.nanoTime();
        } finally {
            lock.unlock();
        }
        MetricSnapshots snapshots = registry.scrape();
        release(scrape);
        return snapshots;
    }

    /** Keys with series of their own: the 20 with the most jobs running or admitted (about 150 bytes each). */
    static final int TOP_KEYS = 20;

    private MetricSnapshots collectDepths() {
        if (db == null) {
            chooseTracked(Map.of()); // by this process's own activity only
            return new MetricSnapshots();
        }
        try {
            JobQueries.Depths depths = queries.liveDepths(db);
            Set<String> chosen = chooseTracked(depths.byTenant());
            Map<String, Long> dead = queries.deadCounts(db, chosen);
            Map<String, Long> oldest = queries.oldestPendingAgeMs(db, chosen);
            // _other's oldest: the lowest pending id among the other tenants (from the grouped read), one probe.
            // Without it an untracked tenant's stuck job (one job: never among the K by backlog) aged unseen.
            depths.oldestPendingId().entrySet().stream().filter(e -> !chosen.contains(e.getKey()))
                    .map(Map.Entry::getValue).min(Long::compare)
                    .map(id -> queries.pendingAgeMs(db, id)).ifPresent(ms -> oldest.put(OTHER, ms));
            List<String> statuses = List.of("pending", "ready", "running");
            var jobs = GaugeWithCallback.builder().name("fairq_jobs")
                    .help("jobs in the table by status: per tracked tenant, the rest as tenant=\"_other\" (finished "
                            + "jobs other than dead are counted by the counters)")
                    .labelNames("tenant", "status").callback(cb -> {
                        Map<String, Long> other = new HashMap<>(depths.totals());
                        for (String t : chosen) {
                            long[] d = depths.byTenant().getOrDefault(t, new long[3]);
                            for (int i = 0; i < 3; i++) {
                                cb.call(d[i], t, statuses.get(i));
                                other.merge(statuses.get(i), -d[i], Long::sum);
                            }
                            long dd = dead.getOrDefault(t, 0L);
                            cb.call(dd, t, "dead");
                            other.merge("dead", -dd, Long::sum);
                        }
                        for (String st : List.of("pending", "ready", "running", "dead")) {
                            cb.call(Math.max(0, other.getOrDefault(st, 0L)), OTHER, st);
                        }
                    }).build();
            var age = GaugeWithCallback.builder().name("fairq_oldest_pending_age_seconds")
                    .help("age of the oldest pending job, per tracked tenant; tenant=\"_other\": the oldest among all other tenants").labelNames("tenant")
                    .callback(cb -> oldest.forEach((t, ms) -> cb.call(ms / 1000.0, t))).build();
            List<JobQueries.KeyUsage> keys = queries.topKeys(db, null, TOP_KEYS);
            var keyJobs = GaugeWithCallback.builder().name("fairq_key_jobs")
                    .help("jobs running or admitted per concurrency or fairness key, only for the " + TOP_KEYS
                            + " busiest keys of all tenants (keys are unbounded: a tenant may have thousands)")
                    .labelNames("tenant", "kind", "key")
                    .callback(cb -> keys.forEach(k -> cb.call(k.running() + k.admitted(), k.tenantId(), k.kind(), k.key())))
                    .build();
            return MetricSnapshots.of(jobs.collect(), age.collect(), keyJobs.collect());
        } catch (RuntimeException e) {
            log.warn("queue depth for /metrics failed", e);
            return new MetricSnapshots();
        }
    }

    /**
     * The K tenants with series of their own: the most jobs waiting or running first, then the most events in
     * this process in the last five minutes. Tenants that drop out lose their series; new ones start at 0.
     */
    private synchronized Set<String> chooseTracked(Map<String, long[]> depthByTenant) {
        long cutoff = System.nanoTime() - RECENT.toNanos();
        recent.values().removeIf(v -> v[0] < cutoff);
        record Candidate(String tenant, long depth, long events) {}
        List<Candidate> candidates = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        depthByTenant.forEach((t, d) -> {
            long[] r = recent.get(t);
            candidates.add(new Candidate(t, d[0] + d[1] + d[2], r == null ? 0 : r[1]));
            seen.add(t);
        });
        recent.forEach((t, r) -> {
            if (!seen.contains(t)) candidates.add(new Candidate(t, 0, r[1]));
        });
        Comparator<Candidate> order = Comparator.comparingLong(Candidate::depth).reversed()
                .thenComparing(Comparator.comparingLong(Candidate::events).reversed())
                .thenComparing(Candidate::tenant);
        Set<String> chosen = new HashSet<>();
        candidates.stream().sorted(order).limit(topTenants).forEach(c -> chosen.add(c.tenant()));
        Set<String> before = tracked;
        Set<String> wasRetiring = retiring;
        if (!chosen.equals(before) || !wasRetiring.isEmpty()) {
            ReentrantReadWriteLock.WriteLock lock = series.writeLock();
            lock.lock();
            try {
                // a dropped tenant whose series took events since the last scrape started keeps them for this one
                Set<String> retire = new HashSet<>();
                for (String t : before) {
                    if (!chosen.contains(t) && recordedAt.getOrDefault(t, -1L) >= scrapes) retire.add(t);
                }
                Set<String> keep = new HashSet<>(chosen);
                keep.addAll(retire);
                for (StatefulMetric<?, ?> m : perTenant) {
                    m.removeIf(labels -> !labels.get(0).equals(OTHER) && !keep.contains(labels.get(0)));
                    // a retiring tenant chosen again still has its series, with the counts a scrape showed
                    for (String t : chosen) if (!before.contains(t) && !wasRetiring.contains(t)) m.initLabelValues(t);
                }
                // what a dropped tenant held back is counted where its events go now
                held.entrySet().removeIf(e -> {
                    if (chosen.contains(e.getKey())) return false;
                    for (Consumer<String> event : e.getValue().events) event.accept(OTHER);
                    return true;
                });
                for (String t : chosen) {
                    if (!before.contains(t) && !wasRetiring.contains(t)) held.putIfAbsent(t, new Held(scrapes));
                }
                recordedAt.keySet().retainAll(keep);
                retiring = Set.copyOf(retire);
                tracked = Set.copyOf(chosen);
            } finally {
                lock.unlock();
            }
        }
        return chosen;
    }

    @Override
    public void claimed(int jobs, long nanos) {
        if (jobs > 0) claimStatement.observe(nanos / 1e9);
    }

    @Override
    public void started(ClaimedJob job) {
        started(job, 0);
    }

    @Override
    public void started(ClaimedJob job, long waitedNanos) {
        // only numbers in the closure: a held-back event must not keep the job (its payload) alive
        // admission to the claim on the database's clock, then the wait for a thread on this JVM's monotonic one:
        // this JVM's wall clock against the database's admitted_at was off by the hosts' clock skew
        double claimed = job.admittedAt() == null ? -1 : job.startedAt() != null
                ? Math.max(0, seconds(job.admittedAt(), job.startedAt())) + waitedNanos / 1e9
                : seconds(job.admittedAt(), OffsetDateTime.now());
        double admitted = job.admittedAt() == null || job.attempt() != 1 || job.createdAt() == null ? -1
                : seconds(job.createdAt(), job.admittedAt());
        record(job.tenantId(), tenant -> {
            starts.labelValues(tenant).inc();
            if (claimed >= 0) claim.labelValues(tenant).observe(claimed);
            if (admitted >= 0) admission.labelValues(tenant).observe(admitted);
        });
    }

    @Override
    public void finished(ClaimedJob job, JobOutcome outcome, long nanos) {
        Counter counted = outcome instanceof JobOutcome.Failed f ? (f.dead() ? deadLetters : retries)
                : outcome instanceof JobOutcome.Snoozed ? null // a snooze is neither a success nor a failure
                : outcome instanceof JobOutcome.Cancelled ? null // nor is a cancel (it had been counted a success)
                : successes;
        double took = nanos / 1e9;
        record(job.tenantId(), tenant -> {
            duration.labelValues(tenant).observe(took);
            if (counted != null) counted.labelValues(tenant).inc();
        });
    }

    @Override
    public void leaseLost(ClaimedJob job) {
        record(job.tenantId(), tenant -> leaseLost.labelValues(tenant).inc());
    }

    @Override
    public void reaped(String tenantId, String status) {
        // a job whose worker died is retried or dead-lettered by a reaper, not by an outcome: it had been in no
        // counter, so a job that crashed its worker at every attempt went to the dead-letter queue uncounted
        Counter counted = status.equals("dead") ? deadLetters : status.equals("pending") ? retries : null;
        if (counted != null) record(tenantId, tenant -> counted.labelValues(tenant).inc());
    }

    @Override
    public void fired(String tenantId, Duration lag) {
        scheduleFires.inc();
        scheduleLag.observe(lag.toNanos() / 1e9);
    }

    @Override
    public void skipped(String tenantId, String reason, long fires) {
        scheduleSkipped.labelValues(reason).inc(fires);
    }

    private static double seconds(OffsetDateTime from, OffsetDateTime to) {
        return Math.max(0, Duration.between(from, to).toNanos() / 1e9);
    }
}

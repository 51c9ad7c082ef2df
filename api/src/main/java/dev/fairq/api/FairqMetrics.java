package dev.fairq.api;

import dev.fairq.scheduler.ScheduleObserver;
import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobQueries;
import dev.fairq.worker.WorkerObserver;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.Map;

/**
 * The Prometheus metrics, per tenant. Counters and latency histograms come from this process's worker
 * ({@link WorkerObserver} hooks); queue depth and oldest pending age are read from the database at scrape
 * time (so every API process reports the whole queue, whichever process runs the jobs).
 *
 * <p>Latencies: {@code fairq_admission_latency_seconds} is enqueue (created_at) to admission on a job's
 * first attempt (it includes a delay_ms / run_at the job asked for); {@code fairq_claim_latency_seconds} is
 * admission to a worker starting it (the time in the ready buffer); {@code fairq_claim_statement_seconds}
 * the claim statement's round trip.
 */
final class FairqMetrics implements WorkerObserver, ScheduleObserver {
    private static final Logger log = LoggerFactory.getLogger(FairqMetrics.class);
    private static final double[] LATENCY_BUCKETS = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
            5, 10, 30, 60, 300};

    final PrometheusRegistry registry = new PrometheusRegistry();
    private final Counter starts;
    private final Counter successes;
    private final Counter retries;
    private final Counter deadLetters;
    private final Counter leaseLost;
    private final Histogram admission;
    private final Histogram claim;
    private final Histogram claimStatement;
    private final Histogram duration;
    private final Counter scheduleFires;
    private final Counter scheduleSkipped;
    private final Histogram scheduleLag;

    FairqMetrics(DSLContext db) {
        JobQueries queries = new JobQueries();
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
        scheduleLag = histogram("fairq_schedule_fire_lag_seconds", "from a fire's instant to the enqueue of its job "
                + "(0 when the job was created ahead)", false);
        GaugeWithCallback.builder().name("fairq_jobs").help("jobs in the table by tenant and status (finished "
                        + "jobs other than dead are counted by the counters)")
                .labelNames("tenant", "status")
                .callback(cb -> {
                    try {
                        Map<String, Map<String, Long>> depths = queries.queueDepths(db);
                        // every tenant, with zeros, so an empty queue reads 0 rather than "no data"
                        for (String tenant : db.resultQuery("SELECT id FROM tenants ORDER BY id").fetch(0, String.class)) {
                            Map<String, Long> d = depths.getOrDefault(tenant, Map.of());
                            for (String status : new String[]{"pending", "ready", "running", "dead"}) {
                                cb.call(d.getOrDefault(status, 0L), tenant, status);
                            }
                        }
                    } catch (RuntimeException e) {
                        log.warn("queue depth for /metrics failed", e);
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("fairq_oldest_pending_age_seconds").help("age of the oldest pending job")
                .labelNames("tenant")
                .callback(cb -> {
                    try {
                        queries.oldestPendingAgeMs(db).forEach((tenant, ms) -> cb.call(ms / 1000.0, tenant));
                    } catch (RuntimeException e) {
                        log.warn("oldest pending age for /metrics failed", e);
                    }
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

    @Override
    public void claimed(int jobs, long nanos) {
        if (jobs > 0) claimStatement.observe(nanos / 1e9);
    }

    @Override
    public void started(ClaimedJob job) {
        starts.labelValues(job.tenantId()).inc();
        OffsetDateTime now = OffsetDateTime.now();
        if (job.admittedAt() != null) {
            claim.labelValues(job.tenantId()).observe(seconds(job.admittedAt(), now));
            if (job.attempt() == 1 && job.createdAt() != null) {
                admission.labelValues(job.tenantId()).observe(seconds(job.createdAt(), job.admittedAt()));
            }
        }
    }

    @Override
    public void finished(ClaimedJob job, JobOutcome outcome, long nanos) {
        duration.labelValues(job.tenantId()).observe(nanos / 1e9);
        if (outcome instanceof JobOutcome.Failed f) {
            (f.dead() ? deadLetters : retries).labelValues(job.tenantId()).inc();
        } else {
            successes.labelValues(job.tenantId()).inc();
        }
    }

    @Override
    public void leaseLost(ClaimedJob job) {
        leaseLost.labelValues(job.tenantId()).inc();
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

package dev.fairq.api;

import dev.fairq.scheduler.ScheduleKeys;
import dev.fairq.scheduler.SchedulerService;
import dev.fairq.schema.JobQueries;
import dev.fairq.schema.TenantLimits;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.SchedulerStates;
import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.jooq.DSLContext;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;


/**
 * Why a job is not running, as one reason with its data. The checks go from the most definite to the
 * least, so the first that holds is the one that keeps the job waiting:
 * <ol>
 *   <li>{@code unknown_payload_version}: dead because its handler reads neither its payload_version nor can
 *       upcast it;</li>
 *   <li>{@code not_waiting}: running, or finished (succeeded, dead, cancelled);</li>
 *   <li>{@code snoozed} / {@code scheduled} / {@code backoff}: run_at is in the future (snoozed when a handler
 *       put it back for later, backoff when an attempt failed);</li>
 *   <li>{@code paused}: the tenant is paused;</li>
 *   <li>{@code no_worker}: no live worker serves its queue and type (it waits, parked, without using attempts);</li>
 *   <li>{@code ordering_blocked}: not its key's turn (behind job Y, or the key is blocked by dead job Y);</li>
 *   <li>{@code ready}: admitted, waiting for a free worker;</li>
 *   <li>{@code concurrency_full}: the tenant's running (+ admitted) jobs are at max_running;</li>
 *   <li>{@code concurrency_key_full}: the job's concurrency key has as many jobs running (+ admitted) as the
 *       tenant's concurrency_limits allow it;</li>
 *   <li>{@code rate_limited}: the tenant's token bucket is empty until next_token_at;</li>
 *   <li>{@code fair_share_key}: a job with a fairness key: the tenant's share is split among its keys with jobs
 *       waiting, and other keys (or other tenants) have their turn; the key's weight and the keys competing;</li>
 *   <li>{@code fair_share}: other tenants' turn; the tenant's position in the fair order. At position 1 (next, or
 *       alone) the message says so instead: its jobs are admitted as workers free up, the earlier ones first.</li>
 * </ol>
 * Tokens and fair-share position live in the active scheduler's memory: read directly when this process is
 * the leader, else from scheduler_tenant_state, which the leader publishes once a second.
 */
final class Explainer {
    private final JobStore store;
    private final JobQueries queries = new JobQueries();
    private final DSLContext db;
    private final Supplier<SchedulerService> localScheduler;
    /** What a snooze writes into last_error first (Worker): tells a snooze from a failed attempt. */
    static final String SNOOZED = "snoozed (";
    /** The scheduler's default: a worker whose heartbeat is older is not live. */
    static final java.time.Duration WORKER_LIVENESS = dev.fairq.scheduler.SchedulerConfig.DEFAULT_WORKER_LIVENESS;

    Explainer(JobStore store, DSLContext db, Supplier<SchedulerService> localScheduler) {
        this.store = store;
        this.db = db;
        this.localScheduler = localScheduler;
    }

    /**
     * {@code reason} and {@code data}; {@code message} says it in a sentence. {@code data} differs by reason
     * (api/README.md lists its fields), so it stays a JSON object rather than one class per reason.
     */
    @io.swagger.v3.oas.annotations.media.Schema(name = "Explanation")
    public record Explanation(long jobId,
                              @io.swagger.v3.oas.annotations.media.Schema(allowableValues = {"pending", "ready", "running",
                                      "succeeded", "dead", "cancelled"})
                              String status,
                              @io.swagger.v3.oas.annotations.media.Schema(allowableValues = {"not_waiting", "unknown_payload_version",
                                      "scheduled", "snoozed", "backoff", "paused", "no_worker", "ordering_blocked", "ready",
                                      "concurrency_full", "concurrency_key_full", "rate_limited", "fair_share_key", "fair_share"})
                              String reason,
                              String message,
                              @io.swagger.v3.oas.annotations.media.Schema(description = "the reason's figures, e.g. run_at, "
                                      + "blocked_by_dead_job, next_token_at, position")
                              Map<String, Object> data) {}

    Explanation explain(JobsRecord job) {
        Explanation e = explainWaiting(job);
        // a fired job names its schedule (from its job_key, which only schedules may use: ScheduleKeys)
        Optional<ScheduleKeys.Origin> origin = ScheduleKeys.parse(job.getJobKey());
        if (origin.isEmpty()) return e;
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("schedule", origin.get().schedule());
        data.put(origin.get().triggered() ? "triggered_at" : "fire_at", origin.get().at());
        data.putAll(e.data());
        return new Explanation(e.jobId(), e.status(), e.reason(), e.message() + " (" + (origin.get().triggered()
                ? "triggered by hand from schedule '" + origin.get().schedule() + "' at "
                : "fired by schedule '" + origin.get().schedule() + "' for ") + origin.get().at() + ")", data);
    }

    private Explanation explainWaiting(JobsRecord job) {
        Map<String, Object> data = new LinkedHashMap<>();
        JobStatus status = job.getStatus();
        String st = status.getLiteral();
        if (status == JobStatus.dead && job.getLastError() != null
                && job.getLastError().contains(dev.fairq.worker.PayloadVersions.UNKNOWN)) {
            data.put("payload_version", job.getPayloadVersion());
            data.put("type", job.getType());
            data.put("last_error", job.getLastError());
            return new Explanation(job.getId(), st, "unknown_payload_version", "the job is dead: the handler of type '"
                    + job.getType() + "' reads neither payload_version " + job.getPayloadVersion()
                    + " nor can upcast it (retry it once a worker reads it)", data);
        }
        if (status != JobStatus.pending && status != JobStatus.ready) {
            data.put("attempts", job.getAttempts());
            if (job.getLastError() != null) data.put("last_error", job.getLastError());
            return new Explanation(job.getId(), st, "not_waiting", "the job is " + st + ", not waiting", data);
        }
        // the clock, the tenant and its admitted jobs in one statement (they were three round trips)
        JobQueries.WaitingContext context = queries.waitingContext(db, job.getTenantId())
                .orElseThrow(() -> ApiException.notFound("no tenant " + job.getTenantId()));
        OffsetDateTime now = context.now();
        if (status == JobStatus.pending && job.getRunAt().isAfter(now)) {
            long inMs = java.time.Duration.between(now, job.getRunAt()).toMillis();
            if (job.getSnoozes() > 0 && job.getLastError() != null && job.getLastError().startsWith(SNOOZED)) {
                data.put("run_at", job.getRunAt().toInstant());
                data.put("in_ms", inMs);
                data.put("snoozes", job.getSnoozes());
                data.put("reason", job.getLastError());
                return new Explanation(job.getId(), st, "snoozed", "its handler put it back until "
                        + job.getRunAt().toInstant() + " (snooze " + job.getSnoozes() + "; no attempt used)", data);
            }
            if (job.getAttempts() > 0) {
                data.put("retry_at", job.getRunAt().toInstant());
                data.put("in_ms", inMs);
                data.put("attempts", job.getAttempts());
                data.put("max_attempts", job.getMaxAttempts());
                data.put("last_error", job.getLastError());
                return new Explanation(job.getId(), st, "backoff", "attempt " + job.getAttempts()
                        + " failed; the next one is at " + job.getRunAt().toInstant(), data);
            }
            data.put("run_at", job.getRunAt().toInstant());
            data.put("in_ms", inMs);
            return new Explanation(job.getId(), st, "scheduled", "the job may start at " + job.getRunAt().toInstant(), data);
        }
        TenantsRecord tenant = context.tenant();
        if (tenant.getPaused()) {
            return new Explanation(job.getId(), st, "paused", "the tenant is paused: jobs are accepted but none start", data);
        }
        if (status == JobStatus.pending && job.getNoWorkerSince() != null) {
            data.put("queue", job.getQueue());
            data.put("type", job.getType());
            data.put("since", job.getNoWorkerSince().toInstant());
            data.put("live_workers", store.leases().liveRoutes(db, WORKER_LIVENESS).size());
            return new Explanation(job.getId(), st, "no_worker", "no live worker serves queue '" + job.getQueue()
                    + "' and type '" + job.getType() + "' (since " + job.getNoWorkerSince().toInstant()
                    + "); the job waits without using attempts until one registers", data);
        }
        if (status == JobStatus.pending && job.getOrderingKey() != null && !job.getKeyHead()) {
            data.put("ordering_key", job.getOrderingKey());
            Optional<JobsRecord> head = queries.orderingHead(db, job.getTenantId(), job.getOrderingKey());
            if (head.isPresent() && head.get().getStatus() == JobStatus.dead) {
                data.put("blocked_by_dead_job", head.get().getId());
                return new Explanation(job.getId(), st, "ordering_blocked", "ordering key '" + job.getOrderingKey()
                        + "' is blocked by dead job " + head.get().getId() + " until it is retried or discarded", data);
            }
            head.ifPresent(h -> {
                data.put("behind_job", h.getId());
                data.put("behind_job_status", h.getStatus().getLiteral());
            });
            return new Explanation(job.getId(), st, "ordering_blocked", "waiting for its turn in ordering key '"
                    + job.getOrderingKey() + "'" + head.map(h -> " behind job " + h.getId()).orElse(""), data);
        }
        if (status == JobStatus.ready) {
            return new Explanation(job.getId(), st, "ready", "admitted; waiting for a free worker", data);
        }
        Integer keyLimit = job.getConcurrencyKey() == null ? null
                : TenantLimits.keyMap(tenant.getConcurrencyLimits()).get(job.getConcurrencyKey());
        if (keyLimit != null && keyLimit == 0) { // a closed key outlasts a full tenant: name what will still hold
            data.put("concurrency_key", job.getConcurrencyKey());
            data.put("key_running_or_admitted", queries.keyActive(db, job.getTenantId(), job.getConcurrencyKey()));
            data.put("key_limit", 0);
            return new Explanation(job.getId(), st, "concurrency_key_full", "concurrency key '" + job.getConcurrencyKey()
                    + "' has limit 0: none of its jobs start until concurrency_limits raises it", data);
        }
        JobQueries.Admitted stats = context.admitted();
        if (stats.running() + stats.ready() >= tenant.getMaxRunning()) {
            data.put("running", stats.running());
            data.put("admitted", stats.ready());
            data.put("max_running", tenant.getMaxRunning());
            return new Explanation(job.getId(), st, "concurrency_full", "the tenant has " + jobs(stats.running())
                    + " running (and " + stats.ready() + " admitted) of max_running " + tenant.getMaxRunning(), data);
        }
        if (keyLimit != null) {
            long active = queries.keyActive(db, job.getTenantId(), job.getConcurrencyKey());
            if (active >= keyLimit) {
                data.put("concurrency_key", job.getConcurrencyKey());
                data.put("key_running_or_admitted", active);
                data.put("key_limit", keyLimit);
                return new Explanation(job.getId(), st, "concurrency_key_full", "concurrency key '"
                        + job.getConcurrencyKey() + "' has " + jobs(active) + " running or admitted of its limit "
                        + keyLimit + "; the tenant's other keys go on meanwhile", data);
            }
        }
        Optional<SchedulerStates.State> sched = schedulerState(job.getTenantId());
        if (sched.isPresent() && sched.get().tokensAvailable() < 1) {
            SchedulerStates.State s = sched.get();
            Instant next = s.nextTokenAt() != null ? s.nextTokenAt().toInstant()
                    : Instant.now().plusMillis(s.nextTokenInMs());
            data.put("next_token_at", next);
            data.put("rate_per_second", tenant.getRatePerSecond());
            data.put("burst", tenant.getBurst());
            return new Explanation(job.getId(), st, "rate_limited", "the tenant used its rate (" + tenant.getRatePerSecond()
                    + "/s, burst " + tenant.getBurst() + "); next token at " + next, data);
        }
        long ahead = queries.jobsAhead(db, job, 10_000);
        data.put("jobs_ahead_in_tenant", ahead);
        sched.ifPresent(s -> {
            data.put("position", s.position());
            data.put("competing_tenants", s.competing());
            data.put("weight", tenant.getWeight());
            if (s.updatedAt() != null) data.put("scheduler_state_at", s.updatedAt().toInstant());
        });
        if (sched.isEmpty()) data.put("scheduler", "no scheduler state yet (is a scheduler running?)");
        if (job.getFairnessKey() != null) {
            long keys = queries.activeFairnessKeys(db, job.getTenantId(), 1_000);
            int keyWeight = TenantLimits.keyMap(tenant.getKeyWeights()).getOrDefault(job.getFairnessKey(), 1);
            data.put("fairness_key", job.getFairnessKey());
            data.put("key_weight", keyWeight);
            data.put("competing_keys", keys);
            return new Explanation(job.getId(), st, "fair_share_key", "the tenant's share is split among its "
                    + keys + " fairness keys with jobs waiting (this one, '" + job.getFairnessKey() + "', weighs "
                    + keyWeight + "), and tenants share by weight: other keys' or tenants' turn", data);
        }
        if (sched.isPresent() && Integer.valueOf(1).equals(sched.get().position())) {
            // "other tenants' turn" would be wrong for the tenant served next (or alone): what holds it is the
            // workers, busy, and the ready buffer, which admission keeps at the free threads plus ~100 ms of work
            return new Explanation(job.getId(), st, "fair_share", "the tenant is next in the fair order (position 1 of "
                    + sched.get().competing() + "): its jobs are admitted as workers free up, "
                    + (ahead >= 10_000 ? "at least 10000 jobs" : jobs(ahead))
                    + " of its own ahead of this one", data);
        }
        return new Explanation(job.getId(), st, "fair_share", "other tenants' turn: admission is shared by weight"
                + sched.map(s -> s.position() == null ? "" : "; the tenant is at position " + s.position() + " of "
                + s.competing()).orElse(""), data);
    }

    private Optional<SchedulerStates.State> schedulerState(String tenantId) {
        SchedulerService local = localScheduler.get();
        if (local != null && local.isLeader()) {
            return local.scheduler().stateOf(tenantId);
        }
        return store.schedulerStates().read(db, tenantId);
    }

    /** "1 job", "2 jobs": explain's messages are read by people (max_running 1 made "1 jobs running" common). */
    private static String jobs(long n) {
        return n + (n == 1 ? " job" : " jobs");
    }
}

package dev.fairq.scheduler;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.Json;
import dev.fairq.schema.OperatorActions;
import dev.fairq.schema.Schedules;
import dev.fairq.schema.UnknownTenantException;
import dev.fairq.schema.generated.tables.records.SchedulesRecord;
import org.jooq.DSLContext;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Schedules for embedders and for the API: create or replace, change, pause, delete, trigger, read. Firing is
 * {@link ScheduleFirer}'s; this class only writes definitions and computes the next fire.
 *
 * <pre>
 * ScheduleService schedules = new ScheduleService(store);
 * schedules.put(dsl, "acme", "nightly-report", ScheduleDefinition.builder("30 2 * * *", "Europe/Berlin",
 *         ScheduleDefinition.JobTemplate.of("report")).build());
 * </pre>
 *
 * <p>A write starts the schedule afresh from now: its next fire is the first at or after now (and start_at),
 * and fires missed before the write are not caught up. A fire whose job was already created ahead (up to
 * {@link ScheduleFirer#DEFAULT_LOOKAHEAD} before its instant) is withdrawn by any write (the job, still
 * waiting, is cancelled and removed, so its job_key is free) and fired again under the new definition; one
 * whose job already started stays, and the schedule goes on after it.
 */
public final class ScheduleService {
    /** The largest template payload when the caller does not say (the API's default for a job's payload). */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 65_536;
    /**
     * min_schedule_interval_s is checked over the schedule's next 2,000 fires or 400 days, whichever ends first:
     * enough to meet every gap of a daily pattern and the month lengths of a year (about 50 ms at worst).
     */
    static final int INTERVAL_CHECK_FIRES = 2_000;
    static final Duration INTERVAL_CHECK_SPAN = Duration.ofDays(400);
    static final int NEXT_FIRES = 5;

    private final JobStore store;
    private final Schedules schedules;
    private final int maxPayloadBytes;
    private final java.util.function.BiFunction<String, String, Optional<FieldError>> templateCheck;

    public ScheduleService(JobStore store) {
        this(store, DEFAULT_MAX_PAYLOAD_BYTES);
    }

    public ScheduleService(JobStore store, int maxPayloadBytes) {
        this(store, maxPayloadBytes, (type, payloadJson) -> Optional.empty());
    }

    /**
     * @param templateCheck what is wrong with a template's payload for its type (field relative to the payload,
     *                      e.g. {@code payload.url}), checked on every write: the API gives it the built-in
     *                      {@code http} type's payload rules, so a schedule does not fire a job that dies at once
     */
    public ScheduleService(JobStore store, int maxPayloadBytes,
                           java.util.function.BiFunction<String, String, Optional<FieldError>> templateCheck) {
        this.store = store;
        this.schedules = new Schedules(store.clock());
        this.maxPayloadBytes = maxPayloadBytes;
        this.templateCheck = templateCheck;
    }

    /** The stored schedule and whether this write created it. */
    public record Written(ScheduleInfo schedule, boolean created) {}

    /**
     * Creates or replaces a schedule (fields left out take their defaults). Throws
     * {@link InvalidScheduleException} (a field at fault, or a cron that fires more often than the tenant's
     * min_schedule_interval_s), {@link ScheduleLimitException} (a new schedule beyond max_schedules) or
     * {@link UnknownTenantException}; nothing is written then.
     */
    public Written put(DSLContext ctx, String tenantId, String name, ScheduleDefinition definition) {
        return put(ctx, tenantId, name, definition, false).orElseThrow();
    }

    /**
     * A PUT with {@code If-None-Match: *}: creates the schedule like {@link #put}, only if the tenant has none of that
     * name; empty when it has (nothing written). Decided in the write's own transaction: of two creates at once one
     * creates, the other is empty, never a replace of the first one's definition.
     */
    public Optional<Written> create(DSLContext ctx, String tenantId, String name, ScheduleDefinition definition) {
        try {
            return put(ctx, tenantId, name, definition, true);
        } catch (Exists e) {
            return Optional.empty(); // its transaction rolled back: the other create's row stays as it was
        }
    }

    /** A create-only write that found the schedule created meanwhile: thrown to roll its upsert back. */
    private static final class Exists extends RuntimeException {
        Exists() {
            super(null, null, false, false);
        }
    }

    private Optional<Written> put(DSLContext ctx, String tenantId, String name, ScheduleDefinition definition,
                                  boolean createOnly) {
        List<FieldError> nameErrors = ScheduleDefinition.checkName(name);
        if (!nameErrors.isEmpty()) throw new InvalidScheduleException(nameErrors);
        ScheduleDefinition.Resolved r = definition.resolve(maxPayloadBytes);
        templateCheck.apply(r.jobType(), r.jobPayloadJson()).ifPresent(e -> {
            throw new InvalidScheduleException(List.of(e.prefixed("job.")));
        });
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Instant now = schedules.now(tx).toInstant();
            SchedulesRecord old = schedules.lock(tx, tenantId, name).orElse(null);
            if (old != null && createOnly) return Optional.<Written>empty();
            Schedules.TenantRoom room = schedules.tenantRoom(tx, tenantId, old == null)
                    .orElseThrow(() -> new UnknownTenantException(tenantId));
            if (old == null && room.schedules() >= room.maxSchedules()) {
                throw new ScheduleLimitException(tenantId, room.schedules(), room.maxSchedules());
            }
            // only a new cron is held to the limit: one that exists stays as it is (README), and must still
            // be pausable, its job or end_at changeable, after an admin raised min_schedule_interval_s
            if (old == null || !old.getCron().equals(r.cron()) || !old.getTimeZone().equals(r.timeZone())) {
                checkInterval(r.schedule(), room.minScheduleIntervalS(), now);
            }
            if (old != null && sameDefinition(storedResolved(old), r)) {
                // a write that changes nothing changes nothing: a tool that applies its configuration again (every
                // deploy, every minute) had its job created ahead withdrawn and made again, under a new id
                return Optional.of(new Written(info(tx, tenantId, name, now).orElseThrow(), false));
            }
            Instant firedUpTo = old == null ? null : withdrawAhead(tx, old, now);
            Schedules.Upserted u = schedules.upsert(tx, r.write(tenantId, name, firstFire(r.schedule(), r.startAt(),
                    r.endAt(), now, firedUpTo)));
            // a create that committed after this one's lock found nothing: the upsert replaced it, undone here
            if (createOnly && !u.created()) throw new Exists();
            return Optional.of(new Written(info(tx, tenantId, name, now).orElseThrow(), u.created()));
        });
    }

    /**
     * A partial change (RFC 7386 merge patch over the stored definition: {@code {"paused": true}}, or
     * {@code {"end_at": null}} to remove one), checked and stored like a {@link #put}. Empty when there is no such
     * schedule.
     */
    public Optional<ScheduleInfo> patch(DSLContext ctx, String tenantId, String name, JsonNode mergePatch) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Optional<SchedulesRecord> row = schedules.lock(tx, tenantId, name);
            if (row.isEmpty()) return Optional.<ScheduleInfo>empty();
            return Optional.of(put(tx, tenantId, name, definitionOf(row.get()).merge(mergePatch)).schedule());
        });
    }

    /** Pauses or resumes (a resumed schedule goes on from its next fire after now; paused fires are not caught up). */
    public Optional<ScheduleInfo> setPaused(DSLContext ctx, String tenantId, String name, boolean paused) {
        return patch(ctx, tenantId, name, Json.MAPPER.createObjectNode().put("paused", paused));
    }

    public Optional<ScheduleInfo> get(DSLContext ctx, String tenantId, String name) {
        return ctx.transactionResult(c -> info(c.dsl(), tenantId, name, schedules.now(c.dsl()).toInstant()));
    }

    /** A page of schedules by name; {@code tenantId} null lists every tenant's (admins), by tenant then name. */
    public record Page(List<ScheduleInfo> schedules, String nextTenant, String nextName) {}

    public Page list(DSLContext ctx, String tenantId, String afterTenant, String afterName, int limit) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Instant now = schedules.now(tx).toInstant();
            List<Schedules.Stored> rows = schedules.page(tx, tenantId, afterTenant, afterName, limit);
            List<ScheduleInfo> out = new ArrayList<>(rows.size());
            for (Schedules.Stored s : rows) out.add(info(s, now));
            SchedulesRecord last = rows.size() == limit ? rows.get(rows.size() - 1).row() : null;
            return new Page(out, last == null ? null : last.getTenantId(), last == null ? null : last.getName());
        });
    }

    /** A tenant's schedules, the next to fire first (the dashboard). */
    public List<ScheduleInfo> byNextFire(DSLContext ctx, String tenantId, int limit) {
        return ctx.transactionResult(c -> {
            Instant now = schedules.now(c.dsl()).toInstant();
            return schedules.byNextFire(c.dsl(), tenantId, limit).stream().map(s -> info(s, now)).toList();
        });
    }

    /** Deletes the schedule (a fire created ahead is withdrawn; jobs already fired stay). False when there was none. */
    public boolean delete(DSLContext ctx, String tenantId, String name) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Optional<SchedulesRecord> row = schedules.lock(tx, tenantId, name);
            if (row.isEmpty()) return false;
            withdrawAhead(tx, row.get(), schedules.now(tx).toInstant());
            return schedules.delete(tx, tenantId, name).isPresent();
        });
    }

    /**
     * Runs the schedule's job now, outside its cron (paused or not): job_key
     * {@code schedule:<name>:trigger-<now to the second>}, so a trigger repeated within the same second is one
     * job (the second answer is the first's job, {@code created} false). An 'overlap: queue' schedule's trigger
     * queues behind its fires; a trigger is not a fire for 'overlap: skip'. Empty when there is no such schedule.
     */
    public Optional<EnqueueResult> trigger(DSLContext ctx, String tenantId, String name) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Optional<Schedules.Stored> s = schedules.find(tx, tenantId, name);
            if (s.isEmpty()) return Optional.<EnqueueResult>empty();
            OffsetDateTime now = schedules.now(tx);
            JobRequest job = jobOf(s.get().row()).runAt(now).jobKey(ScheduleKeys.trigger(name, now.toInstant())).build();
            return Optional.of(store.enqueue(tx, job));
        });
    }

    /**
     * Inserts the schedules a tenant does not have yet (tenants.yml at start-up); existing ones keep what they
     * have, since the API may have changed them. Returns how many were inserted. Definitions are checked first:
     * an invalid one throws {@link InvalidScheduleException} and nothing is written.
     */
    public int seed(DSLContext ctx, String tenantId, Map<String, ScheduleDefinition> definitions) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Instant now = schedules.now(tx).toInstant();
            List<Schedules.Write> writes = new ArrayList<>();
            // by name, as TenantStore.seed inserts by id: two seeds at once must take the rows' locks in one order
            for (Map.Entry<String, ScheduleDefinition> e : new java.util.TreeMap<>(definitions).entrySet()) {
                List<FieldError> nameErrors = ScheduleDefinition.checkName(e.getKey());
                if (!nameErrors.isEmpty()) throw new InvalidScheduleException(nameErrors);
                ScheduleDefinition.Resolved r = e.getValue().resolve(maxPayloadBytes);
                writes.add(r.write(tenantId, e.getKey(), firstFire(r.schedule(), r.startAt(), r.endAt(), now, null)));
            }
            return schedules.insertMissing(tx, writes);
        });
    }

    // -------------------------------------------------------------------------------------------- helpers

    private void checkInterval(CronSchedule cron, int minIntervalSeconds, Instant now) {
        // a five-field cron fires once a minute at most: the smallest limit needs no walk
        if (minIntervalSeconds <= 60) return;
        Optional<Duration> shortest = cron.shortestInterval(now, INTERVAL_CHECK_FIRES, INTERVAL_CHECK_SPAN);
        if (shortest.isPresent() && shortest.get().getSeconds() < minIntervalSeconds) {
            throw new InvalidScheduleException(List.of(new FieldError("cron", "fires as often as every "
                    + shortest.get().getSeconds() + " s; the tenant's min_schedule_interval_s is " + minIntervalSeconds)));
        }
    }

    /**
     * The first fire at or after now and start_at, after {@code firedUpTo} (a fire already handled), before
     * end_at; null when there is none.
     */
    static Instant firstFire(CronSchedule cron, Instant startAt, Instant endAt, Instant now, Instant firedUpTo) {
        Instant from = startAt != null && startAt.isAfter(now) ? startAt : now;
        Optional<Instant> f = cron.firstAtOrAfter(from);
        if (f.isPresent() && firedUpTo != null && !f.get().isAfter(firedUpTo)) f = cron.next(firedUpTo);
        if (f.isPresent() && endAt != null && !f.get().isBefore(endAt)) return null;
        return f.orElse(null);
    }

    /**
     * A fire handled ahead of its instant is undone before a change: its job, if still waiting, is cancelled
     * (handing its ordering key on) and deleted, and the fire before it becomes the last again. Returns the
     * instant up to which fires are done (the next fire must come after it), null for none.
     */
    private Instant withdrawAhead(DSLContext tx, SchedulesRecord s, Instant now) {
        Instant last = instant(s.getLastFireAt());
        if (last == null || !last.isAfter(now)) return last;
        Long jobId = s.getLastJobId();
        if (jobId != null) {
            OperatorActions.ActionOutcome out = store.cancelWaiting(tx, s.getTenantId(), jobId);
            if (out.result() == OperatorActions.ActionResult.WRONG_STATUS) return last; // it started: the fire happened
        }
        schedules.undoLastFire(tx, s.getTenantId(), s.getName(), jobId == null ? -1 : jobId);
        return instant(s.getPrevFireAt());
    }

    /**
     * The stored definition resolved, or null when it no longer resolves (its time zone left this JVM's tz database
     * since it was written): then any write is a change, and one that names a known zone repairs the schedule.
     */
    private static ScheduleDefinition.Resolved storedResolved(SchedulesRecord old) {
        try {
            return definitionOf(old).resolve(Integer.MAX_VALUE);
        } catch (InvalidScheduleException e) {
            return null;
        }
    }

    /** Whether two resolved definitions say the same (the payloads as JSON, whatever their key order or spacing). */
    static boolean sameDefinition(ScheduleDefinition.Resolved a, ScheduleDefinition.Resolved b) {
        if (a == null) return false;
        try {
            return a.cron().equals(b.cron()) && a.timeZone().equals(b.timeZone()) && a.jobType().equals(b.jobType())
                    && Json.EXACT.readTree(a.jobPayloadJson()).equals(Json.EXACT.readTree(b.jobPayloadJson()))
                    && java.util.Objects.equals(a.jobQueue(), b.jobQueue()) && a.jobPriority() == b.jobPriority()
                    && java.util.Objects.equals(a.jobOrderingKey(), b.jobOrderingKey())
                    && java.util.Objects.equals(a.jobMaxAttempts(), b.jobMaxAttempts())
                    && a.missedRuns().equals(b.missedRuns()) && a.backfillLimit() == b.backfillLimit()
                    && a.overlap().equals(b.overlap()) && a.paused() == b.paused()
                    && java.util.Objects.equals(a.startAt(), b.startAt()) && java.util.Objects.equals(a.endAt(), b.endAt())
                    && java.util.Objects.equals(a.jobTimeoutMs(), b.jobTimeoutMs()) && a.jobPayloadVersion() == b.jobPayloadVersion();
        } catch (JsonProcessingException e) {
            return false; // not comparable: written as a change
        }
    }

    /** The stored definition, as a caller would have written it (what a PATCH merges into). */
    static ScheduleDefinition definitionOf(SchedulesRecord s) {
        JsonNode payload;
        try {
            payload = Json.EXACT.readTree(s.getJobPayload().data());
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("stored payload of schedule " + s.getName() + " is not JSON", e);
        }
        return new ScheduleDefinition(s.getCron(), s.getTimeZone(), new ScheduleDefinition.JobTemplate(s.getJobType(),
                payload, s.getJobQueue(), (int) s.getJobPriority(), s.getJobOrderingKey(), s.getJobMaxAttempts(),
                s.getJobTimeoutMs() == null ? null : s.getJobTimeoutMs().longValue(), s.getJobPayloadVersion()),
                s.getMissedRuns(), s.getBackfillLimit(), s.getOverlap(), s.getPaused(),
                s.getStartAt() == null ? null : s.getStartAt().toInstant().toString(),
                s.getEndAt() == null ? null : s.getEndAt().toInstant().toString());
    }

    /**
     * The job a fire of this schedule enqueues, without its run_at and job_key. An 'overlap: queue' schedule
     * without an ordering key of its own gets {@code schedule:<name>}: each fire's job starts after the previous
     * one finished (ordering keys: the README).
     */
    static JobRequest.Builder jobOf(SchedulesRecord s) {
        String orderingKey = s.getJobOrderingKey();
        if (orderingKey == null && "queue".equals(s.getOverlap())) orderingKey = ScheduleKeys.orderingKey(s.getName());
        return JobRequest.builder(s.getTenantId(), s.getJobType()).queue(s.getJobQueue())
                .payload(s.getJobPayload().data()).priority(s.getJobPriority()).orderingKey(orderingKey)
                .maxAttempts(s.getJobMaxAttempts()).payloadVersion(s.getJobPayloadVersion())
                .timeout(s.getJobTimeoutMs() == null ? null : java.time.Duration.ofMillis(s.getJobTimeoutMs()));
    }

    private Optional<ScheduleInfo> info(DSLContext tx, String tenantId, String name, Instant now) {
        return schedules.find(tx, tenantId, name).map(s -> info(s, now));
    }

    static ScheduleInfo info(Schedules.Stored stored, Instant now) {
        SchedulesRecord s = stored.row();
        ScheduleDefinition d = definitionOf(s);
        Instant last = instant(s.getLastFireAt());
        boolean lastAhead = last != null && last.isAfter(now);
        List<Instant> next = new ArrayList<>();
        Long nextJob = null;
        Instant nextFire = instant(s.getNextFireAt());
        if (!s.getPaused()) {
            if (lastAhead) {
                next.add(last);
                nextJob = s.getLastJobId();
            }
            CronSchedule cron = nextFire == null ? null : storedSchedule(s);
            // a schedule whose zone this JVM no longer knows fires no more (the firer records its next fire as
            // 'invalid'): no next fires, rather than a 500 for it and for every list it is in
            if (cron != null) {
                next.add(nextFire);
                next.addAll(cron.fires(nextFire, instant(s.getEndAt()), NEXT_FIRES - next.size()));
            }
        }
        ScheduleInfo.Fire lastFire = lastAhead
                ? fire(s.getPrevFireAt(), s.getPrevOutcome(), s.getPrevJobId(), stored.prevJobStatus())
                : fire(s.getLastFireAt(), s.getLastOutcome(), s.getLastJobId(), stored.lastJobStatus());
        return new ScheduleInfo(s.getTenantId(), s.getName(), d.cron(), d.timeZone(), d.job(), s.getMissedRuns(),
                s.getBackfillLimit(), s.getOverlap(), s.getPaused(), instant(s.getStartAt()), instant(s.getEndAt()),
                next, nextJob, lastFire, s.getFired(), s.getSkipped(), instant(s.getCreatedAt()), instant(s.getUpdatedAt()));
    }

    private static CronSchedule storedSchedule(SchedulesRecord s) {
        try {
            return CronSchedule.of(s.getCron(), s.getTimeZone());
        } catch (CronSchedule.InvalidCronException e) {
            return null;
        }
    }

    private static ScheduleInfo.Fire fire(OffsetDateTime at, String outcome, Long jobId, String status) {
        return at == null ? null : new ScheduleInfo.Fire(at.toInstant(), outcome, jobId, status);
    }

    private static Instant instant(OffsetDateTime t) {
        return t == null ? null : t.toInstant();
    }
}

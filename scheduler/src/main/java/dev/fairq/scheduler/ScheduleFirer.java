package dev.fairq.scheduler;

import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.QueueClock;
import dev.fairq.schema.QueueFullException;
import dev.fairq.schema.Schedules;
import dev.fairq.schema.generated.tables.records.SchedulesRecord;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Fires due schedules: each fire enqueues one job with job_key {@code schedule:<name>:<fire instant>}.
 *
 * <p>{@link #fire} is safe to run from any process at any time, any number of times at once: exactly one job
 * per fire comes from the database, not from leadership. A batch locks its due schedules
 * {@code FOR UPDATE SKIP LOCKED} and, in the same transaction, enqueues their jobs and moves each
 * {@code next_fire_at} on; a second firer skips the locked rows, finds them no longer due once the first
 * commits, and could not insert a fire's job twice anyway (jobs_job_key_uidx). A firer that dies mid-batch
 * rolls back both, and the next one fires the same fires with the same keys.
 *
 * <p><b>When a fire's job is created.</b> Enqueueing is about 36,000 jobs/s here (JobStore.enqueueAll), so
 * 100,000 schedules due at one second cannot all be enqueued within a second of it. Schedules with
 * {@code overlap: allow} or {@code queue} therefore have their fire's job created up to {@link #DEFAULT_LOOKAHEAD}
 * ahead, with run_at = the fire instant: admission does not consider it before then (an ordinary scheduled
 * job), so it starts at its instant like any job due then, through the tenant's limits and fair share.
 * {@code overlap: skip} must look at the previous fire's job at the fire instant, so those fires are decided
 * when due, at the cost of the firing round's lag. The <b>fire lag</b> of a fire is the time from its instant
 * to the clock of the transaction that enqueued its job (the job's created_at), zero for a job created ahead.
 *
 * <p><b>Missed fires.</b> A fire handled more than {@link #DEFAULT_MISSED_AFTER} after its instant was missed
 * (no scheduler ran then); the schedule's missed_runs says what happens to those: {@code skip} drops them,
 * {@code run_once} runs the latest of them, {@code run_all} the latest backfill_limit of them, each due now
 * (its run_at is the handling time, so an old fire does not jump the tenant's other jobs through aging).
 * Fires within that time are late, not missed, and run whatever missed_runs says.
 */
public final class ScheduleFirer {
    private static final Logger log = LoggerFactory.getLogger(ScheduleFirer.class);

    /**
     * How far ahead an allow/queue fire's job is created: 100,000 fires at one instant take about 4 s to
     * enqueue here, and a failover about 5 s, so 30 s leaves room for both several times over.
     */
    public static final Duration DEFAULT_LOOKAHEAD = Duration.ofSeconds(30);
    /** A fire more than a minute late was missed: a firer that merely fell behind never takes that long. */
    public static final Duration DEFAULT_MISSED_AFTER = Duration.ofSeconds(60);
    /** Schedules per transaction: 1,000 jobs are one insert of a few tens of milliseconds. */
    public static final int DEFAULT_BATCH = 1000;
    /**
     * One call of {@link #fire} stops starting batches after this long, so the admission loop that calls it
     * keeps its pace; {@link #behind()} tells the caller to come back at once.
     */
    public static final Duration DEFAULT_BUDGET = Duration.ofMillis(250);
    /** Skipped missed fires are counted one by one up to this many per schedule and pass (a long outage). */
    static final int MAX_COUNTED = 1000;

    static final String ENQUEUED = "enqueued", SKIPPED_OVERLAP = "skipped_overlap", QUEUE_FULL = "queue_full",
            INVALID = "invalid";
    /** Every outcome a fire records ({@code last_fire.outcome}): the API's contract lists them. */
    public static final java.util.List<String> OUTCOMES = java.util.List.of(ENQUEUED, SKIPPED_OVERLAP, QUEUE_FULL, INVALID);

    private final JobStore store;
    private final Schedules schedules;
    private final QueueClock clock;
    private final ScheduleObserver observer;
    private final Duration lookahead;
    private final Duration missedAfter;
    private final int batch;
    private final Duration budget;
    private volatile boolean behind;

    public ScheduleFirer(JobStore store, ScheduleObserver observer) {
        this(store, observer, DEFAULT_LOOKAHEAD, DEFAULT_MISSED_AFTER, DEFAULT_BATCH, DEFAULT_BUDGET);
    }

    public ScheduleFirer(JobStore store, ScheduleObserver observer, Duration lookahead, Duration missedAfter, int batch,
                         Duration budget) {
        this.store = store;
        this.schedules = new Schedules(store.clock());
        this.clock = store.clock();
        this.observer = observer;
        this.lookahead = lookahead;
        this.missedAfter = missedAfter;
        this.batch = batch;
        this.budget = budget;
    }

    /** Whether the last {@link #fire} stopped at its time budget with more due. */
    public boolean behind() {
        return behind;
    }

    /**
     * Fires what is due, batch after batch, the 'overlap: skip' schedules (due now) first, until nothing is due
     * or the time budget is spent. Returns the number of jobs enqueued.
     */
    public int fire(DSLContext ctx) {
        long deadline = clock.nanoTime() + budget.toNanos();
        int jobs = 0;
        behind = false;
        for (boolean skipGroup : new boolean[]{true, false}) {
            while (true) {
                Outcome o = ctx.transactionResult(c -> fireBatch(c.dsl(), skipGroup));
                o.report(observer);
                jobs += o.jobs;
                if (o.schedules < batch) break;
                if (clock.nanoTime() >= deadline) {
                    behind = true;
                    return jobs;
                }
            }
        }
        return jobs;
    }

    /** What one batch did, reported to the observer after its transaction committed. */
    private static final class Outcome {
        int schedules;
        int jobs;
        final List<String> firedTenants = new ArrayList<>();
        final List<Duration> lags = new ArrayList<>();
        final List<Object[]> skips = new ArrayList<>();

        void skipped(String tenant, String reason, long n) {
            if (n > 0) skips.add(new Object[]{tenant, reason, n});
        }

        void report(ScheduleObserver o) {
            for (int i = 0; i < firedTenants.size(); i++) o.fired(firedTenants.get(i), lags.get(i));
            for (Object[] s : skips) o.skipped((String) s[0], (String) s[1], (Long) s[2]);
        }
    }

    /** One fire to handle: its instant and, once known, what happened. */
    private static final class Fire {
        final Instant at;
        final boolean late; // a missed fire caught up: due now, not at its instant
        String outcome;
        Long jobId;

        Fire(Instant at, boolean late) {
            this.at = at;
            this.late = late;
        }
    }

    /** One schedule's pass: its fires, the missed ones it dropped, and its next fire. */
    private static final class Plan {
        final SchedulesRecord row;
        final String latestJobStatus;
        final List<Fire> fires = new ArrayList<>();
        long missedSkipped;
        Instant next;
        boolean broken;

        Plan(SchedulesRecord row, String latestJobStatus) {
            this.row = row;
            this.latestJobStatus = latestJobStatus;
        }
    }

    private Outcome fireBatch(DSLContext tx, boolean skipGroup) {
        Outcome outcome = new Outcome();
        List<Schedules.Due> due = schedules.lockDue(tx, skipGroup, skipGroup ? 0 : lookahead.toMillis(), batch);
        outcome.schedules = due.size();
        if (due.isEmpty()) return outcome;
        OffsetDateTime dbNow = due.get(0).now();
        Instant now = dbNow.toInstant();
        Steps steps = new Steps();
        List<Plan> plans = new ArrayList<>(due.size());
        for (Schedules.Due d : due) plans.add(plan(d, now, skipGroup ? now : now.plus(lookahead), steps));

        // the jobs: one per fire that the overlap policy lets through
        List<JobRequest> requests = new ArrayList<>();
        List<Fire> requested = new ArrayList<>();
        for (Plan p : plans) {
            boolean unfinished = isUnfinished(p.latestJobStatus);
            boolean skipOverlap = "skip".equals(p.row.getOverlap());
            for (Fire f : p.fires) {
                if (f.outcome != null) continue; // decided already (invalid)
                if (skipOverlap && unfinished) {
                    f.outcome = SKIPPED_OVERLAP;
                    continue;
                }
                Instant runAt = f.late || f.at.isBefore(now) ? now : f.at;
                JobRequest r = ScheduleService.jobOf(p.row).runAt(runAt.atOffset(ZoneOffset.UTC))
                        .jobKey(ScheduleKeys.fire(p.row.getName(), f.at)).buildUnchecked();
                List<FieldError> errors = r.validate(now);
                if (!errors.isEmpty()) {
                    f.outcome = INVALID;
                    log.warn("schedule {} of tenant {}: its job is invalid ({}); the fire of {} is skipped",
                            p.row.getName(), p.row.getTenantId(), errors, f.at);
                    continue;
                }
                requests.add(r);
                requested.add(f);
                unfinished = true;
            }
        }
        enqueue(tx, requests, requested);

        List<Schedules.FireUpdate> updates = new ArrayList<>(plans.size());
        for (Plan p : plans) updates.add(update(p, now, outcome));
        schedules.applyFires(tx, updates);
        return outcome;
    }

    /**
     * Enqueues the fires' jobs in one call. A tenant whose fires do not all fit under max_queued gets as many as it
     * has room for, its earliest, and the rest are marked queue_full: the fires are independent, so one fire too many
     * must not cost the tenant all of them (a batch is refused whole).
     */
    private void enqueue(DSLContext tx, List<JobRequest> requests, List<Fire> fires) {
        Map<String, Long> room = new HashMap<>(); // tenants refused once: how many of their fires still fit
        while (true) {
            List<JobRequest> batchRequests = new ArrayList<>(requests.size());
            List<Fire> batchFires = new ArrayList<>(requests.size());
            Map<String, Long> taken = new HashMap<>();
            for (int i = 0; i < requests.size(); i++) {
                String tenant = requests.get(i).tenantId();
                Long fit = room.get(tenant);
                if (fit != null && taken.getOrDefault(tenant, 0L) >= fit) {
                    fires.get(i).outcome = QUEUE_FULL;
                } else {
                    taken.merge(tenant, 1L, Long::sum);
                    batchRequests.add(requests.get(i));
                    batchFires.add(fires.get(i));
                }
            }
            if (batchRequests.isEmpty()) return;
            try {
                List<EnqueueResult> results = store.enqueueAll(tx, batchRequests);
                for (int i = 0; i < results.size(); i++) {
                    batchFires.get(i).outcome = ENQUEUED;
                    batchFires.get(i).jobId = results.get(i).job().getId();
                }
                return;
            } catch (QueueFullException e) {
                // nothing was written (a batch is counted before its insert); go again with as many of the tenant's
                // fires as it has room for, and always fewer than were refused, so this ends
                Long refused = taken.get(e.tenantId());
                if (refused == null) throw e; // not one of this batch's tenants: nothing to leave out
                room.put(e.tenantId(), Math.max(0, Math.min(e.maxQueued() - e.queued(), refused - 1)));
            }
        }
    }

    private Schedules.FireUpdate update(Plan p, Instant now, Outcome outcome) {
        SchedulesRecord s = p.row;
        String tenant = s.getTenantId();
        Instant lastAt = instant(s.getLastFireAt()), prevAt = instant(s.getPrevFireAt());
        String lastOutcome = s.getLastOutcome(), prevOutcome = s.getPrevOutcome();
        Long lastJob = s.getLastJobId(), prevJob = s.getPrevJobId(), latestJob = s.getLatestJobId();
        long fired = 0, skipped = p.missedSkipped;
        outcome.skipped(tenant, "missed", p.missedSkipped);
        for (Fire f : p.fires) {
            prevAt = lastAt;
            prevOutcome = lastOutcome;
            prevJob = lastJob;
            lastAt = f.at;
            lastOutcome = f.outcome;
            lastJob = f.jobId;
            if (ENQUEUED.equals(f.outcome)) {
                fired++;
                latestJob = f.jobId;
                outcome.jobs++;
                outcome.firedTenants.add(tenant);
                outcome.lags.add(f.at.isBefore(now) ? Duration.between(f.at, now) : Duration.ZERO);
            } else {
                skipped++;
                outcome.skipped(tenant, f.outcome.equals(SKIPPED_OVERLAP) ? "overlap" : f.outcome, 1);
            }
        }
        return new Schedules.FireUpdate(tenant, s.getName(), p.next, lastAt, lastOutcome, lastJob, prevAt, prevOutcome,
                prevJob, latestJob, fired, skipped);
    }

    /**
     * The fires of one schedule in this pass: missed ones by missed_runs, then every fire up to the horizon
     * (now for 'overlap: skip', now + lookahead for the others), and the first fire after them.
     */
    private Plan plan(Schedules.Due d, Instant now, Instant horizon, Steps steps) {
        SchedulesRecord s = d.row();
        Plan p = new Plan(s, d.latestJobStatus());
        CronSchedule cron;
        try {
            cron = CronSchedule.of(s.getCron(), s.getTimeZone());
        } catch (CronSchedule.InvalidCronException e) {
            // stored valid, invalid now (a time zone left the tz database): the schedule stops, and says why
            log.warn("schedule {} of tenant {} cannot fire any more: {}", s.getName(), s.getTenantId(), e.getMessage(), e);
            p.next = null;
            p.fires.add(invalid(instant(s.getNextFireAt())));
            return p;
        }
        Instant end = instant(s.getEndAt());
        // the stored next fire, as the cron reads it now: one computed under other rules (a JDK's new tz rules, or
        // this version's Vixie reading of a day field starting with '*') fired once at an instant the schedule no
        // longer names; for a stored fire that is one, this is the same instant (one cron step a batch, shared)
        Instant stored = instant(s.getNextFireAt());
        Instant f = steps.firstAtOrAfter(cron, stored, end);
        if (f == null) {
            p.next = null;
            return p;
        }
        Instant onTimeFrom = now.minus(missedAfter);
        if (f.isBefore(onTimeFrom)) {
            Instant firstOnTime = steps.firstAtOrAfter(cron, onTimeFrom, end);
            Instant missedUntil = end != null && end.isBefore(onTimeFrom) ? end : onTimeFrom; // fires in [f, missedUntil)
            long missed = countFires(cron, f, missedUntil, steps);
            List<Instant> catchUp = switch (s.getMissedRuns()) {
                case "run_once" -> latest(cron, f, missedUntil, 1);
                case "run_all" -> latest(cron, f, missedUntil, s.getBackfillLimit());
                default -> List.of();
            };
            for (Instant x : catchUp) p.fires.add(new Fire(x, true));
            p.missedSkipped = Math.max(0, missed - catchUp.size());
            f = firstOnTime;
        }
        while (f != null && !f.isAfter(horizon)) {
            p.fires.add(new Fire(f, false));
            f = steps.next(cron, f, end);
        }
        p.next = f;
        return p;
    }

    private static Fire invalid(Instant at) {
        Fire f = new Fire(at, false);
        f.outcome = INVALID;
        return f;
    }

    /** Fires in [from, until), counted up to {@link #MAX_COUNTED}. */
    private static long countFires(CronSchedule cron, Instant from, Instant until, Steps steps) {
        long n = 0;
        Instant f = from;
        while (f != null && f.isBefore(until) && n < MAX_COUNTED) {
            n++;
            f = steps.next(cron, f, null);
        }
        return n;
    }

    /** The latest {@code n} fires in [from, until), oldest first. */
    private static List<Instant> latest(CronSchedule cron, Instant from, Instant until, int n) {
        List<Instant> out = new ArrayList<>();
        Optional<Instant> f = cron.previous(until);
        while (f.isPresent() && !f.get().isBefore(from) && out.size() < n) {
            out.add(f.get());
            f = cron.previous(f.get());
        }
        Collections.reverse(out);
        return out;
    }

    private static boolean isUnfinished(String status) {
        return "pending".equals(status) || "ready".equals(status) || "running".equals(status);
    }

    private static Instant instant(OffsetDateTime t) {
        return t == null ? null : t.toInstant();
    }

    /**
     * Next-fire steps of one batch, shared: schedules with the same cron and zone that fire at the same instant
     * (thousands of "every minute" schedules) cost one cron-utils walk per batch, not one each.
     */
    private static final class Steps {
        private final Map<String, Optional<Instant>> next = new HashMap<>();

        Instant next(CronSchedule cron, Instant after, Instant end) {
            Optional<Instant> n = next.computeIfAbsent(cron.expression() + "\u0000" + cron.zone().getId() + "\u0000" + after,
                    k -> cron.next(after));
            if (n.isEmpty() || (end != null && !n.get().isBefore(end))) return null;
            return n.get();
        }

        Instant firstAtOrAfter(CronSchedule cron, Instant t, Instant end) {
            return next(cron, t.minusNanos(1), end);
        }
    }
}

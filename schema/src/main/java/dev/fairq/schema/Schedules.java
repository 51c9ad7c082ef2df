package dev.fairq.schema;

import dev.fairq.schema.generated.tables.records.SchedulesRecord;
import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static dev.fairq.schema.generated.Tables.SCHEDULES;

/**
 * The schedules table (V9__schedules.sql): writes of a schedule's definition, the reads of the API, and the
 * two statements of firing: lock what is due, then record what the fires did. Cron arithmetic is not here
 * (the scheduler module's CronSchedule); every instant is computed there and passed in.
 *
 * <p>Exactly one job per fire does not depend on who calls this: the firer locks the due rows
 * {@code FOR UPDATE SKIP LOCKED} and moves {@code next_fire_at} on in the transaction that enqueues the
 * fires' jobs, and each job's job_key ({@code schedule:<name>:<instant>}) is unique per tenant
 * (jobs_job_key_uidx), so two firers, a failover or a restart cannot enqueue one fire twice.
 */
public final class Schedules {
    /** A schedule's row, with the status of its last and previous fire's jobs (null: no job, or retention deleted it). */
    public record Stored(SchedulesRecord row, String lastJobStatus, String prevJobStatus) {}

    /** What a write stores: the definition and the first fire not handled yet (null: none). */
    public record Write(String tenantId, String name, String cron, String timeZone, String jobType, String jobPayloadJson,
                        String jobQueue, int jobPriority, String jobOrderingKey, Integer jobMaxAttempts, String missedRuns,
                        int backfillLimit, String overlap, boolean paused, Instant startAt, Instant endAt,
                        Instant nextFireAt, Integer jobTimeoutMs, int jobPayloadVersion) {
        /** A template without a time limit (the type's) or a payload version (1). */
        public Write(String tenantId, String name, String cron, String timeZone, String jobType, String jobPayloadJson,
                     String jobQueue, int jobPriority, String jobOrderingKey, Integer jobMaxAttempts, String missedRuns,
                     int backfillLimit, String overlap, boolean paused, Instant startAt, Instant endAt, Instant nextFireAt) {
            this(tenantId, name, cron, timeZone, jobType, jobPayloadJson, jobQueue, jobPriority, jobOrderingKey, jobMaxAttempts,
                    missedRuns, backfillLimit, overlap, paused, startAt, endAt, nextFireAt, null, JobRequest.DEFAULT_PAYLOAD_VERSION);
        }
    }

    /** What one firing pass did to a schedule: the new next fire, last and previous fire, counters to add. */
    public record FireUpdate(String tenantId, String name, Instant nextFireAt, Instant lastFireAt, String lastOutcome,
                             Long lastJobId, Instant prevFireAt, String prevOutcome, Long prevJobId, Long latestJobId,
                             long fired, long skipped) {}

    /** A due schedule, locked for this transaction, with the database's now and its latest job's status. */
    public record Due(SchedulesRecord row, String latestJobStatus, OffsetDateTime now) {}

    /** The tenant's schedule limits and how many schedules it has (counted up to max_schedules + 1). */
    public record TenantRoom(int maxSchedules, int minScheduleIntervalS, long schedules) {}

    static final NamedSql NOW = NamedSql.of("SELECT :now");

    private static final String WITH_JOB_STATUS = """
            SELECT s.*, lj.status::text AS last_job_status, pj.status::text AS prev_job_status
            FROM schedules s LEFT JOIN jobs lj ON lj.id = s.last_job_id LEFT JOIN jobs pj ON pj.id = s.prev_job_id
            """;

    static final NamedSql FIND = NamedSql.of(WITH_JOB_STATUS + "WHERE s.tenant_id = :tenant_id AND s.name = :name");

    /** A keyset page on the primary key; with no tenant, every tenant's (admins). */
    static final NamedSql PAGE = NamedSql.of(WITH_JOB_STATUS + """
            WHERE (:tenant_id::text IS NULL OR s.tenant_id = :tenant_id::text)
              AND (s.tenant_id, s.name) > (coalesce(:after_tenant::text, ''), coalesce(:after_name::text, ''))
            ORDER BY s.tenant_id, s.name LIMIT :limit
            """);

    /** A tenant's schedules by next fire (the dashboard): at most max_schedules rows to sort. */
    static final NamedSql BY_NEXT_FIRE = NamedSql.of(WITH_JOB_STATUS + """
            WHERE s.tenant_id = :tenant_id ORDER BY s.next_fire_at NULLS LAST, s.name LIMIT :limit
            """);

    static final NamedSql LOCK = NamedSql.of("SELECT * FROM schedules WHERE tenant_id = :tenant_id AND name = :name FOR UPDATE");

    /**
     * The tenant's limits, with the tenant row locked (FOR NO KEY UPDATE, as TenantStore: it serialises the
     * tenant's schedule creations, so max_schedules is exact, without blocking enqueues' foreign-key locks).
     * The count stops at max_schedules + 1: its cost is bounded by the limit, not by the table.
     */
    static final NamedSql LOCK_TENANT_ROOM = NamedSql.of("""
            SELECT t.max_schedules, t.min_schedule_interval_s,
                   (SELECT count(*) FROM (SELECT 1 FROM schedules s WHERE s.tenant_id = t.id
                                          LIMIT t.max_schedules + 1) x) AS schedules
            FROM tenants t WHERE t.id = :tenant_id FOR NO KEY UPDATE OF t
            """);

    /**
     * The tenant row locked before {@link #LOCK_TENANT_ROOM} counts: a statement that waits for the lock keeps the
     * snapshot it took before waiting, so a count in the locking statement itself missed the schedules the creation
     * it waited for had just committed, and 20 concurrent creations at max_schedules 3 made 14.
     */
    static final NamedSql LOCK_TENANT = NamedSql.of("SELECT 1 FROM tenants WHERE id = :tenant_id FOR NO KEY UPDATE");

    static final NamedSql TENANT_LIMITS = NamedSql.of("""
            SELECT max_schedules, min_schedule_interval_s, 0::bigint FROM tenants WHERE id = :tenant_id
            """);

    private static final String COLUMNS = """
            tenant_id, name, cron, time_zone, job_type, job_payload, job_queue, job_priority, job_ordering_key,
            job_max_attempts, missed_runs, backfill_limit, overlap, paused, start_at, end_at, next_fire_at,
            job_timeout_ms, job_payload_version""";

    private static final String INPUT = """
            SELECT * FROM unnest(:tenant_ids::text[], :names::text[], :crons::text[], :time_zones::text[],
                                 :job_types::text[], :job_payloads::text[]::jsonb[], :job_queues::text[],
                                 :job_priorities::smallint[], :job_ordering_keys::text[], :job_max_attempts::integer[],
                                 :missed_runs::text[], :backfill_limits::integer[], :overlaps::text[], :paused::boolean[],
                                 :start_ats::text[]::timestamptz[], :end_ats::text[]::timestamptz[],
                                 :next_fire_ats::text[]::timestamptz[], :job_timeouts::integer[],
                                 :job_payload_versions::integer[])
            """;

    /**
     * Create or replace: the definition and the next fire. The fire state (last, previous, latest job,
     * counters) stays: the jobs a schedule already fired are still its fires.
     */
    static final NamedSql UPSERT = NamedSql.of("INSERT INTO schedules (" + COLUMNS + ")\n" + INPUT + """
            ON CONFLICT (tenant_id, name) DO UPDATE SET cron = excluded.cron, time_zone = excluded.time_zone,
                job_type = excluded.job_type, job_payload = excluded.job_payload, job_queue = excluded.job_queue,
                job_priority = excluded.job_priority, job_ordering_key = excluded.job_ordering_key,
                job_max_attempts = excluded.job_max_attempts, missed_runs = excluded.missed_runs,
                backfill_limit = excluded.backfill_limit, overlap = excluded.overlap, paused = excluded.paused,
                start_at = excluded.start_at, end_at = excluded.end_at, next_fire_at = excluded.next_fire_at,
                job_timeout_ms = excluded.job_timeout_ms, job_payload_version = excluded.job_payload_version,
                updated_at = now()
            RETURNING *, (xmax = 0) AS inserted
            """);

    /** Seeding (tenants.yml): schedules that exist keep what they have (the API may have changed them). */
    static final NamedSql INSERT_MISSING = NamedSql.of("INSERT INTO schedules (" + COLUMNS + ")\n" + INPUT
            + "ON CONFLICT (tenant_id, name) DO NOTHING");

    static final NamedSql DELETE = NamedSql.of("DELETE FROM schedules WHERE tenant_id = :tenant_id AND name = :name RETURNING *");

    /**
     * A fire created ahead was withdrawn (its job cancelled and deleted, see ScheduleService): the fire before
     * it is the last one again.
     */
    static final NamedSql UNDO_LAST_FIRE = NamedSql.of("""
            UPDATE schedules SET last_fire_at = prev_fire_at, last_outcome = prev_outcome, last_job_id = prev_job_id,
                                 prev_fire_at = NULL, prev_outcome = NULL, prev_job_id = NULL,
                                 latest_job_id = prev_job_id,
                                 fired = greatest(fired - (last_outcome = 'enqueued')::int, 0),
                                 skipped = greatest(skipped - (last_outcome <> 'enqueued')::int, 0)
            WHERE tenant_id = :tenant_id AND name = :name
            """);

    /** A withdrawn fire's job: cancelled a moment ago in this transaction, so that its job_key is free again. */
    static final NamedSql DELETE_WITHDRAWN_JOB = NamedSql.of("DELETE FROM jobs WHERE id = :id AND status = 'cancelled'");

    /**
     * The due schedules of one overlap group, in fire order, locked; rows another firer holds are skipped.
     * One range of schedules_due_idx: (overlap = 'skip', next_fire_at) over the unpaused schedules with a
     * next fire. 'overlap: skip' schedules are taken when due ({@code :until} = now), the others up to the
     * firer's lookahead before (see ScheduleFirer). The latest job's status decides 'overlap: skip'.
     */
    static final NamedSql LOCK_DUE = NamedSql.of("""
            SELECT s.*, j.status::text AS latest_job_status, :now AS db_now
            FROM schedules s LEFT JOIN jobs j ON j.id = s.latest_job_id
            WHERE NOT s.paused AND s.next_fire_at IS NOT NULL AND (s.overlap = 'skip') = :skip_group
              AND s.next_fire_at <= :now + :ahead_ms * interval '1 millisecond'
            ORDER BY (s.overlap = 'skip'), s.next_fire_at, s.tenant_id
            LIMIT :limit
            FOR UPDATE OF s SKIP LOCKED
            """);

    /** What a firing pass did, one statement for the whole batch. */
    static final NamedSql APPLY_FIRES = NamedSql.of("""
            UPDATE schedules s
            SET next_fire_at = u.next_fire_at, last_fire_at = u.last_fire_at, last_outcome = u.last_outcome,
                last_job_id = u.last_job_id, prev_fire_at = u.prev_fire_at, prev_outcome = u.prev_outcome,
                prev_job_id = u.prev_job_id, latest_job_id = u.latest_job_id, fired = s.fired + u.fired,
                skipped = s.skipped + u.skipped
            FROM unnest(:tenant_ids::text[], :names::text[], :next_fire_ats::text[]::timestamptz[],
                        :last_fire_ats::text[]::timestamptz[], :last_outcomes::text[], :last_job_ids::bigint[],
                        :prev_fire_ats::text[]::timestamptz[], :prev_outcomes::text[], :prev_job_ids::bigint[],
                        :latest_job_ids::bigint[], :fired::bigint[], :skipped::bigint[])
                 AS u(tenant_id, name, next_fire_at, last_fire_at, last_outcome, last_job_id, prev_fire_at,
                      prev_outcome, prev_job_id, latest_job_id, fired, skipped)
            WHERE s.tenant_id = u.tenant_id AND s.name = u.name
            """);

    private final QueueClock clock;

    public Schedules(QueueClock clock) {
        this.clock = clock;
    }

    /** The queue's now (the database's, or the settable clock's in tests). */
    public OffsetDateTime now(DSLContext ctx) {
        return NOW.bind().clock(clock).fetch(ctx).get(0).get(0, OffsetDateTime.class);
    }

    public Optional<Stored> find(DSLContext ctx, String tenantId, String name) {
        return FIND.bind().set("tenant_id", tenantId).set("name", name).fetch(ctx).stream().findFirst().map(Schedules::stored);
    }

    /** A page of schedules by (tenant, name) after the given pair; {@code tenantId} null: every tenant's. */
    public List<Stored> page(DSLContext ctx, String tenantId, String afterTenant, String afterName, int limit) {
        List<Stored> out = new ArrayList<>();
        for (Record r : PAGE.bind().set("tenant_id", tenantId).set("after_tenant", afterTenant).set("after_name", afterName)
                .set("limit", limit).fetch(ctx)) {
            out.add(stored(r));
        }
        return out;
    }

    /** A tenant's schedules, the next to fire first (finished ones last). */
    public List<Stored> byNextFire(DSLContext ctx, String tenantId, int limit) {
        return BY_NEXT_FIRE.bind().set("tenant_id", tenantId).set("limit", limit).fetch(ctx).map(Schedules::stored);
    }

    /** The row, locked for the caller's transaction; empty when there is none. */
    public Optional<SchedulesRecord> lock(DSLContext tx, String tenantId, String name) {
        return LOCK.bind().set("tenant_id", tenantId).set("name", name).fetch(tx).stream().findFirst()
                .map(r -> r.into(SCHEDULES));
    }

    /** The tenant's schedule limits; with {@code lockAndCount}, the tenant row locked and its schedules counted. */
    public Optional<TenantRoom> tenantRoom(DSLContext tx, String tenantId, boolean lockAndCount) {
        if (lockAndCount) LOCK_TENANT.bind().set("tenant_id", tenantId).fetch(tx);
        NamedSql sql = lockAndCount ? LOCK_TENANT_ROOM : TENANT_LIMITS;
        return sql.bind().set("tenant_id", tenantId).fetch(tx).stream().findFirst()
                .map(r -> new TenantRoom(r.get(0, Integer.class), r.get(1, Integer.class), r.get(2, Long.class)));
    }

    /** Creates or replaces; returns the row and whether it was created. */
    public record Upserted(SchedulesRecord row, boolean created) {}

    public Upserted upsert(DSLContext tx, Write w) {
        Record r = inputs(UPSERT.bind(), List.of(w)).fetch(tx).get(0);
        return new Upserted(r.into(SCHEDULES), Boolean.TRUE.equals(r.get("inserted", Boolean.class)));
    }

    /** Inserts the schedules that do not exist yet, in one statement; returns how many were inserted. */
    public int insertMissing(DSLContext tx, List<Write> writes) {
        if (writes.isEmpty()) return 0;
        return inputs(INSERT_MISSING.bind(), writes).execute(tx);
    }

    public Optional<SchedulesRecord> delete(DSLContext tx, String tenantId, String name) {
        return DELETE.bind().set("tenant_id", tenantId).set("name", name).fetch(tx).stream().findFirst()
                .map(r -> r.into(SCHEDULES));
    }

    /** After the job of a fire created ahead was cancelled: deletes it and makes the previous fire the last again. */
    public void undoLastFire(DSLContext tx, String tenantId, String name, long cancelledJobId) {
        DELETE_WITHDRAWN_JOB.bind().set("id", cancelledJobId).execute(tx);
        UNDO_LAST_FIRE.bind().set("tenant_id", tenantId).set("name", name).execute(tx);
    }

    /** Locks up to {@code limit} due schedules of one overlap group (see {@link #LOCK_DUE}). */
    public List<Due> lockDue(DSLContext tx, boolean skipGroup, long aheadMillis, int limit) {
        List<Due> out = new ArrayList<>();
        for (Record r : LOCK_DUE.bind().clock(clock).set("skip_group", skipGroup).set("ahead_ms", aheadMillis)
                .set("limit", limit).fetch(tx)) {
            out.add(new Due(r.into(SCHEDULES), r.get("latest_job_status", String.class), r.get("db_now", OffsetDateTime.class)));
        }
        return out;
    }

    public int applyFires(DSLContext tx, List<FireUpdate> updates) {
        if (updates.isEmpty()) return 0;
        int n = updates.size();
        String[] tenants = new String[n], names = new String[n], next = new String[n], last = new String[n],
                lastOutcome = new String[n], prev = new String[n], prevOutcome = new String[n];
        Long[] lastJob = new Long[n], prevJob = new Long[n], latestJob = new Long[n], fired = new Long[n], skipped = new Long[n];
        for (int i = 0; i < n; i++) {
            FireUpdate u = updates.get(i);
            tenants[i] = u.tenantId();
            names[i] = u.name();
            next[i] = text(u.nextFireAt());
            last[i] = text(u.lastFireAt());
            lastOutcome[i] = u.lastOutcome();
            lastJob[i] = u.lastJobId();
            prev[i] = text(u.prevFireAt());
            prevOutcome[i] = u.prevOutcome();
            prevJob[i] = u.prevJobId();
            latestJob[i] = u.latestJobId();
            fired[i] = u.fired();
            skipped[i] = u.skipped();
        }
        return APPLY_FIRES.bind().set("tenant_ids", tenants).set("names", names).set("next_fire_ats", next)
                .set("last_fire_ats", last).set("last_outcomes", lastOutcome).set("last_job_ids", lastJob)
                .set("prev_fire_ats", prev).set("prev_outcomes", prevOutcome).set("prev_job_ids", prevJob)
                .set("latest_job_ids", latestJob).set("fired", fired).set("skipped", skipped).execute(tx);
    }

    private static NamedSql.Binding inputs(NamedSql.Binding b, List<Write> writes) {
        int n = writes.size();
        String[] tenants = new String[n], names = new String[n], crons = new String[n], zones = new String[n],
                types = new String[n], payloads = new String[n], queues = new String[n], orderingKeys = new String[n],
                missed = new String[n], overlaps = new String[n], starts = new String[n], ends = new String[n],
                nexts = new String[n];
        Short[] priorities = new Short[n];
        Integer[] maxAttempts = new Integer[n], backfill = new Integer[n], timeouts = new Integer[n], versions = new Integer[n];
        Boolean[] paused = new Boolean[n];
        for (int i = 0; i < n; i++) {
            Write w = writes.get(i);
            tenants[i] = w.tenantId();
            names[i] = w.name();
            crons[i] = w.cron();
            zones[i] = w.timeZone();
            types[i] = w.jobType();
            payloads[i] = w.jobPayloadJson();
            queues[i] = w.jobQueue();
            priorities[i] = (short) w.jobPriority();
            orderingKeys[i] = w.jobOrderingKey();
            maxAttempts[i] = w.jobMaxAttempts();
            missed[i] = w.missedRuns();
            backfill[i] = w.backfillLimit();
            overlaps[i] = w.overlap();
            paused[i] = w.paused();
            starts[i] = text(w.startAt());
            ends[i] = text(w.endAt());
            nexts[i] = text(w.nextFireAt());
            timeouts[i] = w.jobTimeoutMs();
            versions[i] = w.jobPayloadVersion();
        }
        return b.set("tenant_ids", tenants).set("names", names).set("crons", crons).set("time_zones", zones)
                .set("job_types", types).set("job_payloads", payloads).set("job_queues", queues)
                .set("job_priorities", priorities).set("job_ordering_keys", orderingKeys)
                .set("job_max_attempts", maxAttempts).set("missed_runs", missed).set("backfill_limits", backfill)
                .set("overlaps", overlaps).set("paused", paused).set("start_ats", starts).set("end_ats", ends)
                .set("next_fire_ats", nexts).set("job_timeouts", timeouts).set("job_payload_versions", versions);
    }

    private static String text(Instant t) {
        return t == null ? null : t.toString();
    }

    private static Stored stored(Record r) {
        return new Stored(r.into(SCHEDULES), r.get("last_job_status", String.class), r.get("prev_job_status", String.class));
    }
}

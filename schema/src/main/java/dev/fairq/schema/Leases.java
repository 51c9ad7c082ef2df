package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Result;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Claim and leases, the workers' side: claiming ready jobs under a lease, extending leases (heartbeat, which
 * also keeps the worker registry alive), returning expired leases (the reaper) and handing back jobs claimed
 * but never started. Leases are on the database clock ({@code :now}), so clock skew between machines can
 * neither rescue a lapsed lease nor expire a live one.
 */
public final class Leases {
    private static final Logger log = LoggerFactory.getLogger(Leases.class);

    /**
     * Claims up to {@code limit} ready jobs in one short transaction (this one statement). FOR UPDATE SKIP
     * LOCKED: concurrent claimers each take different rows instead of queueing behind the first claimer's
     * row locks. The lease (locked_by, locked_until) and attempts + 1 are written in the same statement; the
     * handler then runs outside any transaction. Routing: only jobs of the worker's queues (null: any) and
     * types (null: any), so a worker never claims a job it has no handler for; the filter walks the ready
     * buffer, which the scheduler keeps about the worker capacity in size.
     */
    static final NamedSql CLAIM = NamedSql.of("""
            UPDATE jobs j
            SET status = 'running', locked_by = :worker_id, locked_until = :now + :lease_ms * interval '1 millisecond',
                attempts = j.attempts + 1, started_at = :now
            FROM (SELECT id FROM jobs WHERE status = 'ready'
                    AND (:queues::text[] IS NULL OR queue = ANY(:queues::text[]))
                    AND (:types::text[] IS NULL OR type = ANY(:types::text[]))
                  ORDER BY ready_rank, id LIMIT :limit FOR UPDATE SKIP LOCKED) c
            WHERE j.id = c.id
            RETURNING j.id, j.tenant_id, j.queue, j.type, j.payload::text, j.attempts, j.max_attempts, j.job_key,
                      j.ordering_key, j.created_at, j.admitted_at, j.ready_rank, j.timeout_ms, j.payload_version, j.snoozes,
                      j.started_at
            """);

    /**
     * Extends the leases of all of a worker's jobs in one statement, and proves the worker alive in the
     * registry. Fenced like a completion: only rows still locked by this worker for the same attempt are
     * touched, so a job the reaper took back stays taken, even when this very worker has claimed it again
     * since (a new attempt). A job missing from the answer is one the worker must stop.
     */
    static final NamedSql HEARTBEAT = NamedSql.of("""
            WITH alive AS (
                INSERT INTO workers (id, capacity, started_at, heartbeat_at, queues, types, reserved)
                VALUES (:worker_id, :capacity, :now, :now, :queues::text[], :types::text[], :reserved::jsonb)
                ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at
                RETURNING id
            ), input AS MATERIALIZED (
                SELECT :ids::bigint[] AS ids, :attempts::integer[] AS attempts
            )
            UPDATE jobs j SET locked_until = :now + :lease_ms * interval '1 millisecond'
            FROM input i
            WHERE j.id = ANY(i.ids) AND j.locked_by = (SELECT id FROM alive)
              AND j.attempts = i.attempts[array_position(i.ids, j.id)]
            RETURNING j.id
            """);

    /**
     * Which of the tenants of the worker's held jobs are paused: a job claimed before its tenant was paused, still
     * waiting for a thread, is handed back instead of started. Primary-key probes, in the same once-a-second check.
     */
    static final NamedSql PAUSED_TENANTS = NamedSql.of("SELECT id FROM tenants WHERE id = ANY(:ids::text[]) AND paused");

    /**
     * The fallback to NOTIFY fairq_cancel: which of the worker's running attempts someone asked to cancel.
     * Primary-key probes of the jobs the worker holds, fenced like the heartbeat.
     */
    static final NamedSql CANCEL_REQUESTS = NamedSql.of("""
            WITH input AS MATERIALIZED (
                SELECT :ids::bigint[] AS ids, :attempts::integer[] AS attempts
            )
            SELECT j.id FROM jobs j, input i
            WHERE j.id = ANY(i.ids) AND j.locked_by = :worker_id
              AND j.attempts = i.attempts[array_position(i.ids, j.id)]
              AND j.cancel_requested_at IS NOT NULL
            """);

    /**
     * Which of the jobs an enqueue inserted running under this worker's lease ({@link LocalStarts}) have committed:
     * the fallback to the commit's notification. Primary-key probes; attempt 1 only, so a job reaped meanwhile and
     * claimed again (attempt 2) is not taken for the one inserted running; and started in the enqueue (started_at =
     * created_at), since the worker remembers such a job past its lease: one reaped, dead, replayed and claimed here
     * again is at attempt 1 too, but its claim set started_at.
     */
    static final NamedSql COMMITTED_STARTS = NamedSql.of("""
            SELECT id FROM jobs WHERE id = ANY(:ids::bigint[]) AND locked_by = :worker_id AND status = 'running'
              AND attempts = 1 AND started_at = created_at
            """);

    /**
     * Which of the given enqueuing transactions (pg_current_xact_id, as text) have ended, committed or rolled back
     * (null: too old to know, ended too). Asked before {@link #COMMITTED_STARTS}, whose later snapshot then sees the
     * rows of those that committed: a job awaited whose transaction ended and that is not among the committed starts
     * was rolled back (its transaction, or the savepoint around its enqueue) and is forgotten.
     */
    static final NamedSql ENDED_TRANSACTIONS = NamedSql.of("""
            SELECT x FROM unnest(:xacts::text[]) AS t(x) WHERE pg_xact_status(x::xid8) IS DISTINCT FROM 'in progress'
            """);

    /**
     * A worker process says what it can run: its threads, the queues it serves (null: all), the types it has
     * handlers for (null: all) and the threads it reserves per queue. The scheduler routes by these rows.
     */
    static final NamedSql REGISTER = NamedSql.of("""
            INSERT INTO workers (id, capacity, started_at, heartbeat_at, queues, types, reserved)
            VALUES (:worker_id, :capacity, :now, :now, :queues::text[], :types::text[], :reserved::jsonb)
            ON CONFLICT (id) DO UPDATE SET capacity = excluded.capacity, heartbeat_at = excluded.heartbeat_at,
                queues = excluded.queues, types = excluded.types, reserved = excluded.reserved
            """);

    /** The live workers' routes (the scheduler's routing; explain's no_worker). Cost: the live worker processes. */
    static final NamedSql LIVE_ROUTES = NamedSql.of("""
            SELECT id, capacity, queues, types, reserved::text FROM workers
            WHERE heartbeat_at > :now - :within_ms * interval '1 millisecond'
            ORDER BY id
            """);

    /** The whole registry (one row per worker process seen within the last hour), for operators. */
    static final NamedSql REGISTRY = NamedSql.of("""
            SELECT id, capacity, queues, types, reserved::text, started_at, heartbeat_at,
                   heartbeat_at > :now - :within_ms * interval '1 millisecond'
            FROM workers ORDER BY id
            """);

    /** A worker's registered capacity while its heartbeat is recent (the worker pool's health check). */
    static final NamedSql LIVE_CAPACITY = NamedSql.of("""
            SELECT capacity FROM workers WHERE id = :worker_id AND heartbeat_at > :now - :within_ms * interval '1 millisecond'
            """);

    static final NamedSql UNREGISTER = NamedSql.of("DELETE FROM workers WHERE id = :worker_id");

    /** Registry rows of processes that stopped heart-beating long ago (they died without unregistering). */
    static final NamedSql PRUNE_WORKERS = NamedSql.of("""
            DELETE FROM workers WHERE heartbeat_at < :now - :older_than_ms * interval '1 millisecond'
            """);

    /**
     * Takes back jobs whose lease ran out (the worker died or stalled). The attempt already counted at the
     * claim; a job that has used all its attempts this way is dead, so a job that kills its workers cannot
     * loop forever. A job someone asked to cancel ends cancelled instead. SKIP LOCKED lets several reapers
     * run without waiting on each other. A job back in pending is admissible work again: its tenant is named
     * to the scheduler.
     */
    static final NamedSql REAP = NamedSql.of("""
            UPDATE jobs j
            SET status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'::job_status
                              WHEN j.attempts >= j.max_attempts THEN 'dead'::job_status ELSE 'pending'::job_status END,
                finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempts >= j.max_attempts THEN :now END,
                failed_at = CASE WHEN j.cancel_requested_at IS NOT NULL OR j.attempts >= j.max_attempts THEN j.failed_at
                                 ELSE :now END,
                -- no host or pid for tenants; a requested cancel says so, as the worker's own Cancelled outcome does
                last_error = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled while running; ' ELSE '' END
                             || 'lease expired: its worker stopped renewing it during attempt ' || j.attempts,
                locked_by = NULL, locked_until = NULL, ready_rank = NULL, admitted_at = NULL,
                key_head = CASE WHEN j.cancel_requested_at IS NOT NULL THEN false
                                WHEN j.attempts >= j.max_attempts
                                 AND (SELECT q.ordering_on_dead FROM queues q WHERE q.name = j.queue) = 'continue'
                                THEN false ELSE j.key_head END
            FROM (SELECT id FROM jobs WHERE status = 'running' AND locked_until < :now
                  ORDER BY locked_until LIMIT :limit FOR UPDATE SKIP LOCKED) e
            WHERE j.id = e.id
            RETURNING j.id, j.tenant_id, j.ordering_key, j.key_head,
                      CASE WHEN j.status = 'pending' THEN pg_notify('fairq_jobs', 't:' || j.tenant_id) END,
                      j.status::text
            """);

    /**
     * Claimed but never started (a graceful stop, or a lease that may have lapsed while the worker was
     * paused): back to the front of ready, the attempt not counted. Fenced on the attempt, so a job the
     * reaper took back meanwhile is left alone. A job someone asked to cancel meanwhile ends cancelled.
     */
    private static final String RELEASE_TEXT = """
            WITH input AS MATERIALIZED (
                SELECT :ids::bigint[] AS ids, :attempts::integer[] AS attempts
            )
            UPDATE jobs j
            SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'ready' ELSE 'cancelled' END::job_status,
                locked_by = NULL, locked_until = NULL, started_at = NULL, attempts = j.attempts - 1,
                finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN :now END,
                ready_rank = CASE WHEN j.cancel_requested_at IS NULL THEN j.ready_rank END,
                key_head = j.key_head AND j.cancel_requested_at IS NULL
            FROM input i
            WHERE j.id = ANY(i.ids) AND j.locked_by = :worker_id
              AND j.attempts = i.attempts[array_position(i.ids, j.id)]
            RETURNING j.id, j.tenant_id, j.ordering_key, j.status = 'cancelled' AS cancelled
            """;
    static final NamedSql RELEASE = NamedSql.of(RELEASE_TEXT);

    /**
     * RELEASE of a job started in its enqueue whose commit came too late for its lease, which the worker hands back
     * without starting it: fenced on started_at = created_at too. The commit may have handed it back already (V23,
     * the attempt given back), and this worker claimed it since at attempt 1 again: the plain fence would hand back
     * that claim while it runs, and the job ran twice.
     */
    static final NamedSql RELEASE_STARTED_IN_ENQUEUE = NamedSql.of(NamedSql.variant(RELEASE_TEXT,
            "AND j.attempts = i.attempts[array_position(i.ids, j.id)]",
            "AND j.attempts = i.attempts[array_position(i.ids, j.id)] AND j.started_at = j.created_at"));

    /**
     * A worker found the ready buffer empty while it had free threads: wake the scheduler now rather than at
     * its next timed tick, so the buffer is refilled on demand (the channel the scheduler listens on). Its commit
     * does not wait for the WAL flush whatever the pool's setting, as {@link #WAKE_WORKERS}'s.
     */
    static final NamedSql WAKE_SCHEDULER = NamedSql.of(
            "SELECT set_config('synchronous_commit', 'off', true), pg_notify('fairq_jobs', 'drained')");

    /**
     * Wakes idle workers: jobs became ready in a statement that already committed (an admission, an enqueue that
     * used a grant). Its own commit does not wait for the WAL flush (synchronous_commit off for this transaction
     * only): a NOTIFY holds the notification queue's lock through its commit ({@link Waker}).
     */
    static final NamedSql WAKE_WORKERS = NamedSql.of("SELECT set_config('synchronous_commit', 'off', true), pg_notify('fairq_ready', '')");

    private final QueueClock clock;

    Leases(QueueClock clock) {
        this.clock = clock;
    }

    public List<ClaimedJob> claim(DSLContext ctx, String workerId, int limit, Duration lease) {
        return claim(ctx, workerId, limit, lease, null, null);
    }

    /** Claims up to {@code limit} ready jobs of the given queues and types (null: any). */
    public List<ClaimedJob> claim(DSLContext ctx, String workerId, int limit, Duration lease,
                                  java.util.Collection<String> queues, java.util.Collection<String> types) {
        if (limit <= 0) return List.of();
        NamedSql.Binding claim = CLAIM.bind().clock(clock).set("worker_id", workerId)
                .set("lease_ms", lease.toMillis()).set("limit", limit)
                .set("queues", queues == null ? null : queues.toArray(String[]::new))
                .set("types", types == null ? null : types.toArray(String[]::new));
        // Plain JDBC on the hottest path of a worker: materialising jOOQ records for the claimed rows was the
        // largest share of a worker's CPU per job (JFR over ./bench/run throughput).
        List<ClaimedJob> jobs = ctx.connectionResult(c -> {
            try (PreparedStatement ps = claim.prepare(c)) {
                List<ClaimedJob> out = new ArrayList<>(limit);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new ClaimedJob(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                                rs.getString(5), rs.getInt(6), rs.getInt(7), rs.getString(8), rs.getString(9),
                                rs.getObject(10, OffsetDateTime.class), rs.getObject(11, OffsetDateTime.class),
                                rs.getDouble(12), rs.getObject(13, Integer.class), rs.getInt(14), rs.getInt(15),
                                rs.getObject(16, OffsetDateTime.class)));
                    }
                }
                return out;
            }
        });
        jobs.sort(Comparator.comparingDouble(ClaimedJob::readyRank).thenComparingLong(ClaimedJob::id));
        return jobs;
    }

    /**
     * Extends the leases of the given attempts (job id to attempt) still held by the worker; returns the ids
     * still held. An id missing from the answer lost its lease: the worker must stop that attempt.
     */
    public Set<Long> heartbeat(DSLContext ctx, String workerId, int capacity, Map<Long, Integer> attempts, Duration lease) {
        return heartbeat(ctx, workerId, capacity, WorkerRoute.ANY, attempts, lease);
    }

    /** As above, for a worker with a route (re-registered with it should its row have been pruned meanwhile). */
    public Set<Long> heartbeat(DSLContext ctx, String workerId, int capacity, WorkerRoute route,
                               Map<Long, Integer> attempts, Duration lease) {
        Long[] ids = attempts.keySet().toArray(Long[]::new);
        return new HashSet<>(route.bind(HEARTBEAT.bind()).clock(clock).set("worker_id", workerId).set("capacity", capacity)
                .set("lease_ms", lease.toMillis()).set("ids", ids).set("attempts", attemptsOf(ids, attempts))
                .fetch(ctx).getValues(0, Long.class));
    }

    /** Which of the given attempts (job id to attempt), still held by the worker, someone asked to cancel. */
    public Set<Long> cancelRequested(DSLContext ctx, String workerId, Map<Long, Integer> attempts) {
        if (attempts.isEmpty()) return Set.of();
        Long[] ids = attempts.keySet().toArray(Long[]::new);
        return new HashSet<>(CANCEL_REQUESTS.bind().set("worker_id", workerId).set("ids", ids)
                .set("attempts", attemptsOf(ids, attempts)).fetch(ctx).getValues(0, Long.class));
    }

    public Set<String> pausedTenants(DSLContext ctx, Set<String> tenantIds) {
        if (tenantIds.isEmpty()) return Set.of();
        return new HashSet<>(PAUSED_TENANTS.bind().set("ids", tenantIds.toArray(String[]::new)).fetch(ctx)
                .getValues(0, String.class));
    }

    private static Integer[] attemptsOf(Long[] ids, Map<Long, Integer> attempts) {
        Integer[] out = new Integer[ids.length];
        for (int i = 0; i < ids.length; i++) out[i] = attempts.get(ids[i]);
        return out;
    }

    public void registerWorker(DSLContext ctx, String workerId, int capacity) {
        registerWorker(ctx, workerId, capacity, WorkerRoute.ANY);
    }

    /** Registers (or re-registers) a worker process with what it can run. */
    public void registerWorker(DSLContext ctx, String workerId, int capacity, WorkerRoute route) {
        route.bind(REGISTER.bind()).clock(clock).set("worker_id", workerId).set("capacity", capacity).execute(ctx);
    }

    /** The live workers' routes (heart-beat within {@code within}), by worker id. */
    public List<WorkerRoute.Live> liveRoutes(DSLContext ctx, Duration within) {
        List<WorkerRoute.Live> out = new ArrayList<>();
        for (Record r : LIVE_ROUTES.bind().clock(clock).set("within_ms", within.toMillis()).fetch(ctx)) {
            out.add(new WorkerRoute.Live(r.get(0, String.class), r.get(1, Integer.class),
                    WorkerRoute.of(r.get(2, String[].class), r.get(3, String[].class), r.get(4, String.class))));
        }
        return out;
    }

    /** A worker process in the registry: its route, when it started, when it was last seen, and whether it is live. */
    public record Registered(String workerId, int threads, WorkerRoute route, OffsetDateTime startedAt,
                             OffsetDateTime lastSeen, boolean live) {}

    /** Every registered worker process, live (heart-beat within {@code within}) or not yet pruned. */
    public List<Registered> registry(DSLContext ctx, Duration within) {
        List<Registered> out = new ArrayList<>();
        for (Record r : REGISTRY.bind().clock(clock).set("within_ms", within.toMillis()).fetch(ctx)) {
            out.add(new Registered(r.get(0, String.class), r.get(1, Integer.class),
                    WorkerRoute.of(r.get(2, String[].class), r.get(3, String[].class), r.get(4, String.class)),
                    r.get(5, OffsetDateTime.class), r.get(6, OffsetDateTime.class), r.get(7, Boolean.class)));
        }
        return out;
    }

    public void unregisterWorker(DSLContext ctx, String workerId) {
        UNREGISTER.bind().set("worker_id", workerId).execute(ctx);
    }

    /** The worker's capacity if it heart-beat within {@code within}, else empty. */
    public java.util.Optional<Integer> liveCapacity(DSLContext ctx, String workerId, Duration within) {
        return LIVE_CAPACITY.bind().clock(clock).set("worker_id", workerId).set("within_ms", within.toMillis())
                .fetch(ctx).stream().findFirst().map(r -> r.get(0, Integer.class));
    }

    /** Forgets worker processes silent for longer than {@code olderThan}; returns how many. */
    public int pruneWorkers(DSLContext ctx, Duration olderThan) {
        return PRUNE_WORKERS.bind().clock(clock).set("older_than_ms", olderThan.toMillis()).execute(ctx);
    }

    /** Returns expired leases to pending (or dead), at most {@code limit}; returns how many. */
    public int reapExpired(DSLContext ctx, int limit) {
        return reapExpiredJobs(ctx, limit).size();
    }

    /** A job the reaper took back, and what it became: pending (to be retried), dead or cancelled. */
    public record Reaped(long jobId, String tenantId, String status) {}

    /** As {@link #reapExpired}, saying which jobs and what each became (the metrics count retries and dead letters). */
    public List<Reaped> reapExpiredJobs(DSLContext ctx, int limit) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Result<Record> rows = REAP.bind().clock(clock).set("limit", limit).fetch(tx);
            Set<OrderingKey> released = new LinkedHashSet<>();
            for (Record r : rows) {
                if (r.get(2) != null && !r.get(3, Boolean.class)) {
                    released.add(new OrderingKey(r.get(1, String.class), r.get(2, String.class)));
                }
            }
            KeyHandoff.promoteNext(tx, released);
            if (!rows.isEmpty()) log.warn("reaped {} jobs whose lease expired", rows.size());
            List<Reaped> out = new ArrayList<>();
            for (Record r : rows) out.add(new Reaped(r.get(0, Long.class), r.get(1, String.class), r.get(5, String.class)));
            return out;
        });
    }

    /**
     * Hands back claimed attempts (job id to attempt) that never started; returns how many were still the
     * worker's. A job someone asked to cancel meanwhile ends cancelled and hands its ordering key on.
     */
    public int release(DSLContext ctx, String workerId, Map<Long, Integer> attempts) {
        if (attempts.isEmpty()) return 0;
        Long[] ids = attempts.keySet().toArray(Long[]::new);
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Result<Record> rows = RELEASE.bind().clock(clock).set("ids", ids).set("attempts", attemptsOf(ids, attempts))
                    .set("worker_id", workerId).fetch(tx);
            Set<OrderingKey> released = new LinkedHashSet<>();
            for (Record r : rows) {
                if (r.get(2) != null && r.get(3, Boolean.class)) {
                    released.add(new OrderingKey(r.get(1, String.class), r.get(2, String.class)));
                }
            }
            KeyHandoff.promoteNext(tx, released);
            return rows.size();
        });
    }

    /** Hands back a job inserted running under {@code workerId}'s lease that it never started ({@link #RELEASE_STARTED_IN_ENQUEUE}). */
    public boolean releaseStartedInEnqueue(DSLContext ctx, String workerId, long id) {
        return RELEASE_STARTED_IN_ENQUEUE.bind().clock(clock).set("ids", new Long[] {id}).set("attempts", new Integer[] {1})
                .set("worker_id", workerId).fetch(ctx).isNotEmpty();
    }

    /** The ids among {@code ids} whose rows are committed and running under {@code workerId}'s lease. */
    public List<Long> committedStarts(DSLContext ctx, String workerId, List<Long> ids) {
        List<Long> out = new ArrayList<>();
        for (Record r : COMMITTED_STARTS.bind().set("ids", ids.toArray(Long[]::new)).set("worker_id", workerId).fetch(ctx)) {
            out.add(r.get(0, Long.class));
        }
        return out;
    }

    /** The ones of {@code xacts} that have ended ({@link #ENDED_TRANSACTIONS}). */
    public Set<String> endedTransactions(DSLContext ctx, List<String> xacts) {
        Set<String> out = new HashSet<>();
        for (Record r : ENDED_TRANSACTIONS.bind().set("xacts", xacts.toArray(String[]::new)).fetch(ctx)) out.add(r.get(0, String.class));
        return out;
    }

    public void wakeScheduler(DSLContext ctx) {
        WAKE_SCHEDULER.bind().run(ctx);
    }

    /** See {@link #WAKE_WORKERS}. */
    public void wakeWorkers(DSLContext ctx) {
        WAKE_WORKERS.bind().run(ctx);
    }
}

package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.jooq.DSLContext;
import org.jooq.Field;
import org.jooq.JSONB;
import org.jooq.Record;

import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static dev.fairq.schema.generated.Tables.JOBS;

/**
 * Enqueue: jobs enter the queue, in the caller's transaction. Validation first (nothing is written when any
 * request is invalid), then the soft max_queued check, then one INSERT per batch of {@link #MAX_BATCH}.
 */
public final class Enqueue {
    /** Jobs of one request array; a bigger batch is split (PostgreSQL array binds have no hard limit). */
    public static final int MAX_BATCH = 10_000;
    /**
     * A tenant whose last exact count plus what this process enqueued since stays under this share of
     * max_queued is not counted again within {@link #ROOM_TRUST_NANOS}: counting is O(min(backlog,
     * max_queued)) (20 ms at 100,000 waiting), and near the limit the count is exact again.
     */
    private static final double ROOM_TRUSTED_SHARE = 0.5;
    private static final long ROOM_TRUST_NANOS = 1_000_000_000L;
    /** Rounds of insert-then-sort-out before giving up: each round settles every row a concurrent enqueue did not race. */
    private static final int MAX_ROUNDS = 4;

    /** An INSERT_JOBS statement's input columns: {parameter, element type, column}, in the input rows' order. */
    private static final String[][] INPUT_COLUMNS = {
            {"preset_ids", "bigint", "preset_id"}, {"tenant_ids", "text", "tenant_id"}, {"queues", "text", "queue"},
            {"types", "text", "type"}, {"payloads", "text", "payload"}, {"priorities", "smallint", "priority"},
            {"run_ats", "text", "run_at"}, {"delays_ms", "bigint", "delay_ms"}, {"job_keys", "text", "job_key"},
            {"ordering_keys", "text", "ordering_key"}, {"max_attempts", "integer", "max_attempts"},
            {"request_hashes", "text", "request_hash"}, {"may_head", "boolean", "may_head"},
            {"timeouts_ms", "integer", "timeout_ms"}, {"payload_versions", "integer", "payload_version"},
            {"concurrency_keys", "text", "concurrency_key"}, {"fairness_keys", "text", "fairness_key"}};

    /** The input rows of a batch: the arrays side by side, numbered. */
    private static final String INPUT_ROWS = "unnest("
            + java.util.Arrays.stream(INPUT_COLUMNS).map(c -> ":" + c[0] + "::" + c[1] + "[]").collect(java.util.stream.Collectors.joining(", "))
            + ") WITH ORDINALITY AS r("
            + java.util.Arrays.stream(INPUT_COLUMNS).map(c -> c[2]).collect(java.util.stream.Collectors.joining(", ")) + ", ord)";

    /**
     * The input row of a single job: each parameter bound as the one element its array would hold. Seventeen
     * arrays of one were a third of a single-job enqueue's CPU in its JVM (the driver encodes each array, JFR:
     * 49 of 221 samples).
     */
    private static final String INPUT_ROW = "(SELECT "
            + java.util.Arrays.stream(INPUT_COLUMNS).map(c -> ":" + c[0] + "::" + c[1] + " AS " + c[2])
                    .collect(java.util.stream.Collectors.joining(", "))
            + ", 1::bigint AS ord) r";

    /** The requests of an INSERT_JOBS statement, one row each, with the ids they get and whether a grant may admit them. */
    private static final String INPUT = """
            WITH input AS MATERIALIZED (
                SELECT coalesce(r.preset_id, nextval(pg_get_serial_sequence('jobs', 'id'))) AS id, r.*,
                       r.ordering_key IS NULL AND r.concurrency_key IS NULL AND coalesce(r.run_at::timestamptz <= :now, true)
                           AND coalesce(r.delay_ms, 0) <= 0 AS grantable
            """ + "    FROM " + INPUT_ROWS + "\n    ORDER BY r.ord\n";

    /**
     * The three forms of an insert statement: for a batch (arrays), for a single job ({@link #INPUT_ROW}), and for
     * a single job that counts its tenant's room in the statement ({@link #oneRowCounted}).
     */
    record Forms(NamedSql batch, NamedSql one, NamedSql counted) {
        static Forms of(String text) {
            return new Forms(NamedSql.of(text), NamedSql.of(NamedSql.variant(text, INPUT_ROWS, INPUT_ROW)), oneRowCounted(text));
        }

        NamedSql pick(boolean single, boolean countRoom) {
            return countRoom ? counted : single ? one : batch;
        }
    }

    /**
     * The statement for a single job with its tenant's max_queued check in it ({@link #queuedCounts}, as
     * {@link #QUEUED_COUNT}): the job is inserted only if it fits, and the answer carries the count, or nothing for
     * a tenant that does not exist. A tenant submitting less often than once a second ({@link #ROOM_TRUST_NANOS}),
     * the common case among thousands, made the check a round trip of its own before every insert; under the
     * tenants bench's flood each of those waited for a CPU (trickle: 36-45 ms p99 on the client's clock against 14
     * on the database's).
     */
    private static NamedSql oneRowCounted(String text) {
        String one = NamedSql.variant(text, INPUT_ROWS, INPUT_ROW);
        one = NamedSql.variant(one, "), granted AS (", "), room AS MATERIALIZED (\n"
                + queuedCounts("t.id = :tenant_ids::text") + "), granted AS (");
        one = NamedSql.variant(one, "ORDER BY i.job_key, i.ord\n    ON CONFLICT DO NOTHING",
                "WHERE (SELECT r.queued + 1 <= r.max_queued FROM room r)\n    ORDER BY i.job_key, i.ord\n    ON CONFLICT DO NOTHING");
        one = NamedSql.variant(one, "AS input_ord, input.id AS input_id,",
                "AS input_ord, input.id AS input_id, room.max_queued AS room_max_queued, room.queued AS room_queued,");
        return NamedSql.of(NamedSql.variant(one, "FROM input LEFT JOIN inserted ON inserted.id = input.id",
                "FROM input LEFT JOIN inserted ON inserted.id = input.id LEFT JOIN room ON true"));
    }

    /**
     * Inserts a batch in one statement. Ids are taken in request order up front (nextval runs after the
     * ORDER BY), so a job that has to be inserted again in a second step keeps its place in its key.
     * The first job of each (tenant, ordering_key) in the batch tries to become the key's head; ON CONFLICT
     * DO NOTHING turns both a duplicate job_key and an already-taken head into "not inserted", and the
     * caller sorts those out ({@link #insertBatch}). RETURNING gives the inserted rows, whole, so the
     * caller needs no second read; the outer SELECT gives every input row with its id, matched to them.
     *
     * <p>A tenant holding an admission grant (V4__admission_grants.sql: the scheduler admitted its next job
     * in advance) has its first due job without an ordering key or a concurrency key inserted ready (a job with a
     * concurrency key waits for the scheduler, the only one that counts a key's running jobs), ranked at the front of the
     * claim order (-Infinity), and the workers are woken: a quiet tenant's job starts without a scheduler
     * round trip. The grant is locked first, the tenant's older one when it holds a spare too (V16), one a statement
     * (SKIP LOCKED: one that another open transaction is taking is simply not there, so no enqueue ever waits on
     * another's, and two at once take one each) and marked used (V15: the scheduler reads the used
     * ones at every tick, not every grant) only for a row that was actually inserted ready, so a job_key replay or a
     * conflict leaves it for the next job.
     *
     * <p>A fairness key holding a key grant (V13__key_grants.sql: a quiet key of a busy tenant) has its first due
     * job without an ordering or concurrency key inserted ready the same way, when the key has no due job waiting,
     * in the table (one probe of jobs_admit_key_idx) or earlier in the same statement: a job that came without a
     * grant is not passed by a later one that took it. A row takes at most one grant, the key's first. It is
     * ranked at the grant's rank, or at the claim point if the buffer has moved past it since (one probe of
     * jobs_claim_idx): below it, the job would pull the virtual time back, and every tenant lifted to it then
     * would win its picks until its pass caught up. With nothing buffered it goes to the front (-Infinity, which
     * LOAD leaves out of the virtual time), as a tenant grant's job does. A key without a grant of its own (one not
     * recent: the scheduler grants only keys it admitted lately) may take its tenant's new-key grant instead
     * (fairness key U+0001, {@link Admission.KeyGrant#NEW_KEY}) on the same conditions, one row a statement.
     *
     * <p>A used key grant also wakes the scheduler ('g:' + tenant on fairq_jobs: it ends the wait and names no
     * work), which makes the next one in the tick that sees this one gone: noticed only at its next timed tick, a key
     * trickling every 30 ms under a flood found no grant at 20-40% of its enqueues (subkeys). A tenant grant does
     * not: a tick per quiet tenant's enqueue cost the fairness bench's flood 4% of its rate (0.957-0.966 of FIFO's
     * against 0.995-1.005), and its renewal already keeps up (V4).
     */
    /**
     * The workers' wake-up at the commit of an application's own enqueue: one for a job a grant inserted ready; for
     * one inserted running (a {@link LocalStarts} slot) 's:' + its id + ':' + the worker's id, which only that worker
     * acts on (the others ignore it: no job became ready).
     */
    private static final String WAKE_IN_STATEMENT = "(SELECT count(pg_notify('fairq_ready', CASE WHEN w.status = 'running' "
            + "THEN 's:' || w.id || ':' || w.locked_by ELSE '' END)) FROM inserted w WHERE w.status IN ('ready', 'running'))";

    /**
     * The tenant grants a statement takes: the older unused one of each grantable request's tenant (a tenant may hold a
     * spare, V16), locked so that an enqueue never waits on another's and two at once take one each.
     */
    private static final String GRANTED = """
            ), granted AS (
                SELECT a.tenant_id, a.slot
                FROM (SELECT DISTINCT tenant_id FROM input WHERE grantable) t
                     -- a pause is in force from its commit: the scheduler takes the grants back only at its next look
                     JOIN tenants p ON p.id = t.tenant_id AND NOT p.paused
                     CROSS JOIN LATERAL (SELECT g.tenant_id, g.slot FROM admission_grants g
                                         WHERE g.tenant_id = t.tenant_id AND g.used_at IS NULL
                                         ORDER BY g.granted_at, g.slot LIMIT 1
                                         FOR UPDATE SKIP LOCKED) a
            """;

    /** Marks used the grant each inserted row took (only a row actually inserted: a replay leaves it). */
    private static final String USED = """
            ), used AS (
                UPDATE admission_grants g SET used_at = :now
                FROM (SELECT n.tenant_id, u.slot FROM grant_use u JOIN input n ON n.ord = u.ord
                      JOIN inserted i ON i.id = n.id) x
                WHERE g.tenant_id = x.tenant_id AND g.slot = x.slot AND g.used_at IS NULL
                RETURNING g.tenant_id
            """;

    private static final String INSERT_JOBS_TEXT = INPUT + GRANTED + """
            ), grant_use AS (
                SELECT DISTINCT ON (i.tenant_id) i.ord, g.slot
                FROM input i JOIN granted g ON g.tenant_id = i.tenant_id
                WHERE i.grantable
                ORDER BY i.tenant_id, i.ord
            ), inserted AS (
                INSERT INTO jobs (id, tenant_id, queue, type, payload, priority, run_at, job_key, ordering_key,
                                  key_head, max_attempts, request_hash, timeout_ms, payload_version, concurrency_key,
                                  fairness_key, status, ready_rank, admitted_at, created_at,
                                  locked_by, locked_until, attempts, started_at, not_due)
                SELECT i.id, i.tenant_id, i.queue, i.type, i.payload::jsonb, i.priority,
                       coalesce(i.run_at::timestamptz, :now + coalesce(i.delay_ms, 0) * interval '1 millisecond'),
                       i.job_key, i.ordering_key,
                       i.may_head AND i.ordering_key IS NOT NULL
                           AND row_number() OVER (PARTITION BY i.tenant_id, i.ordering_key ORDER BY i.ord) = 1,
                       i.max_attempts, i.request_hash, i.timeout_ms, i.payload_version, i.concurrency_key, i.fairness_key,
                       CASE WHEN u.ord IS NULL THEN 'pending' WHEN s.worker IS NOT NULL THEN 'running' ELSE 'ready' END::job_status,
                       CASE WHEN u.ord IS NOT NULL THEN '-Infinity'::double precision END,
                       CASE WHEN u.ord IS NOT NULL THEN :now END,
                       :now,
                       CASE WHEN u.ord IS NOT NULL THEN s.worker END,
                       CASE WHEN u.ord IS NOT NULL AND s.worker IS NOT NULL THEN s.at + s.lease_ms * interval '1 millisecond' END,
                       CASE WHEN u.ord IS NOT NULL AND s.worker IS NOT NULL THEN 1 ELSE 0 END,
                       CASE WHEN u.ord IS NOT NULL AND s.worker IS NOT NULL THEN :now END,
                       coalesce(i.run_at::timestamptz, :now + coalesce(i.delay_ms, 0) * interval '1 millisecond') > :now
                           AND (i.concurrency_key IS NOT NULL OR i.fairness_key IS NOT NULL)
                FROM input i LEFT JOIN grant_use u ON u.ord = i.ord
                     CROSS JOIN (SELECT :start_by::text AS worker, :start_lease_ms::bigint AS lease_ms,
                                        coalesce(:start_at::timestamptz, statement_timestamp()) AS at) s
                -- job keys taken in one order by every request: in the request's order, two batches naming the
                -- same keys in different orders each waited for a key the other held (a deadlock, answered 500)
                ORDER BY i.job_key, i.ord
                ON CONFLICT DO NOTHING
                RETURNING *
            """ + USED + """
            )
            SELECT input.ord AS input_ord, input.id AS input_id, inserted.*,
                   CASE WHEN inserted.status = 'running' THEN pg_current_xact_id()::text END AS start_xact,
                   """ + WAKE_IN_STATEMENT + """
             AS woken
            FROM input LEFT JOIN inserted ON inserted.id = input.id
            ORDER BY input.ord
            """;
    static final Forms INSERT_JOBS = Forms.of(INSERT_JOBS_TEXT);

    /**
     * Where the API's statements turn off the commit's wait for the WAL flush: see {@link #INSERT_JOBS_UNFLUSHED}.
     * Transaction-local, so it holds for the autocommit statement it is in, or for the rest of a batch's transaction.
     */
    private static final String FINAL_SELECT = "SELECT input.ord AS input_ord,";
    private static final String FINAL_SELECT_UNFLUSHED =
            "SELECT set_config('synchronous_commit', 'off', true) AS commit_wait, input.ord AS input_ord,";

    /**
     * INSERT_JOBS without the workers' wake-up, for a caller that commits and then wakes them itself
     * ({@link Leases#wakeWorkers}): a NOTIFY holds the notification queue's lock through its transaction's commit,
     * flush included, and every other notifying transaction queued behind it (Waker). The API with
     * FAIRQ_SUBMIT_START=flush; by default it uses {@link #INSERT_JOBS_UNFLUSHED}.
     */
    private static final String INSERT_JOBS_QUIET_TEXT = NamedSql.variant(INSERT_JOBS_TEXT,
            WAKE_IN_STATEMENT, "(SELECT count(*) FROM used)");
    static final Forms INSERT_JOBS_QUIET = Forms.of(INSERT_JOBS_QUIET_TEXT);

    /**
     * INSERT_JOBS_QUIET for a caller that acknowledges its client itself (the API): the commit does not wait for the WAL
     * flush, so the jobs are visible to the workers at once, and the statement wakes no worker. The caller commits,
     * wakes the workers ({@link Leases#wakeWorkers}), then waits for the flush ({@link JobStore#awaitDurable}) before
     * it answers, so nothing acknowledged can be lost.
     * <ul>
     * <li>Why not wake in the statement: a NOTIFY holds the notification queue's lock through its commit, and every
     * other notifying transaction queued behind it (Waker).</li>
     * <li>Why not wait for the flush at the commit: a synchronous commit waits behind every byte of WAL written
     * before it. A fresh WAL segment is zero-filled (16 MB) by whichever backend first needs it, holding the WAL
     * write lock, and every synchronous commit waits until it is done. Under the tenants bench's flood that was one
     * stall of 100-400 ms every 16 MB of WAL, about every 8 s on PostgreSQL 15 (pg_stat_activity: up to 11 of the
     * API's backends in LWLock:WALWrite behind one in IO:WALInitWrite). The slowest 1% of the trickle were the jobs
     * submitted in those stalls, waiting for their own commit while about 350 other jobs started.</li>
     * </ul>
     * The trigger's wake-up of the scheduler for pending jobs stays: it names the tenants, which only the inserted
     * rows know.
     */
    static final Forms INSERT_JOBS_UNFLUSHED = Forms.of(NamedSql.variant(INSERT_JOBS_QUIET_TEXT, FINAL_SELECT, FINAL_SELECT_UNFLUSHED));

    /**
     * The conditions for input row i to take a key grant (its key's own, or its tenant's new-key grant): none of its
     * key's due jobs waits (one probe of jobs_admit_key_idx), and no earlier row of the key in this statement that
     * cannot be admitted now, so that a job that came without a grant is not passed by a later one that took it.
     */
    private static final String NO_EARLIER_JOB_OF_THE_KEY = """
                  AND NOT EXISTS (SELECT 1 FROM jobs j
                                  WHERE j.tenant_id = i.tenant_id AND coalesce(j.fairness_key, '') = i.fairness_key
                                    AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                                    AND j.no_worker_since IS NULL AND j.run_at <= :now
                                    AND {due_bound}
                                    AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL))
                  AND NOT EXISTS (SELECT 1 FROM input e
                                  WHERE e.tenant_id = i.tenant_id AND e.fairness_key = i.fairness_key AND e.ord < i.ord
                                    AND NOT e.grantable AND coalesce(e.run_at::timestamptz <= :now, true)
                                    AND coalesce(e.delay_ms, 0) <= 0)
            """.replace("{due_bound}", Admission.DUE_SORT_KEY_BOUND);

    /**
     * INSERT_JOBS with key grants (V13__key_grants.sql, described above), for a request with a fairness key; one
     * without cannot use a key grant and keeps the shorter statement (with the key-grant part on every enqueue the
     * latency bench's HTTP p50 was 2.0-2.3 ms, against 1.6-1.8 for the build before, in two alternating pairs).
     */
    private static final String INSERT_KEYED_JOBS_TEXT = INPUT + GRANTED + """
            ), key_granted AS (
                SELECT k.tenant_id, k.fairness_key, k.slot, k.ready_rank FROM key_grants k
                WHERE (k.tenant_id, k.fairness_key) IN (SELECT tenant_id, fairness_key FROM input
                                                        WHERE grantable AND fairness_key IS NOT NULL)
                  AND NOT EXISTS (SELECT 1 FROM tenants p WHERE p.id = k.tenant_id AND p.paused) -- as GRANTED
                FOR UPDATE SKIP LOCKED
            ), new_key_wanted AS (
                -- the row of each tenant that may take its new-key grant: the first grantable row of a key (a later
                -- one of the same key never may when the first may not) with no grant of its own, none of its due jobs
                -- waiting, and no earlier row of it that cannot be admitted now; checked before the grant is locked,
                -- so that an enqueue that cannot use it (a flooding key's) leaves it to one that can; and only for a
                -- tenant that holds one (a primary-key probe of the small key_grants), so a quiet tenant's keyed
                -- enqueue does not probe jobs for it
                SELECT DISTINCT ON (i.tenant_id) i.ord, i.tenant_id
                FROM (SELECT DISTINCT ON (tenant_id, fairness_key) * FROM input n
                      WHERE grantable AND fairness_key IS NOT NULL
                        AND EXISTS (SELECT 1 FROM key_grants k WHERE k.tenant_id = n.tenant_id AND k.fairness_key = chr(1))
                      ORDER BY tenant_id, fairness_key, ord) i
                WHERE NOT EXISTS (SELECT 1 FROM key_granted g
                                  WHERE g.tenant_id = i.tenant_id AND g.fairness_key = i.fairness_key)
            """ + NO_EARLIER_JOB_OF_THE_KEY + """
                ORDER BY i.tenant_id, i.ord
            ), new_key_granted AS (
                SELECT a.tenant_id, a.slot, a.ready_rank
                FROM new_key_wanted w
                     CROSS JOIN LATERAL (SELECT k.tenant_id, k.slot, k.ready_rank FROM key_grants k
                                         WHERE k.tenant_id = w.tenant_id AND k.fairness_key = chr(1)
                                           AND NOT EXISTS (SELECT 1 FROM tenants p WHERE p.id = w.tenant_id AND p.paused)
                                         ORDER BY k.slot LIMIT 1
                                         FOR UPDATE SKIP LOCKED) a
            ), claim_point AS MATERIALIZED (
                SELECT (SELECT ready_rank FROM jobs WHERE status = 'ready' AND ready_rank > '-Infinity'
                        ORDER BY ready_rank LIMIT 1) AS rank
                WHERE EXISTS (SELECT 1 FROM key_granted) OR EXISTS (SELECT 1 FROM new_key_granted)
            ), key_grant_use AS (
                SELECT DISTINCT ON (i.tenant_id, i.fairness_key) i.ord, g.tenant_id, g.fairness_key, g.slot,
                       CASE WHEN c.rank IS NULL THEN '-Infinity'::double precision ELSE greatest(g.ready_rank, c.rank) END
                           AS ready_rank
                FROM input i JOIN key_granted g ON g.tenant_id = i.tenant_id AND g.fairness_key = i.fairness_key
                     LEFT JOIN claim_point c ON true
                WHERE i.grantable
            """ + NO_EARLIER_JOB_OF_THE_KEY + """
                ORDER BY i.tenant_id, i.fairness_key, i.ord, g.slot
            ), new_key_use AS (
                SELECT w.ord, n.tenant_id, n.slot,
                       CASE WHEN c.rank IS NULL THEN '-Infinity'::double precision ELSE greatest(n.ready_rank, c.rank) END
                           AS ready_rank
                FROM new_key_wanted w JOIN new_key_granted n ON n.tenant_id = w.tenant_id
                     LEFT JOIN claim_point c ON true
            ), grant_use AS (
                SELECT DISTINCT ON (i.tenant_id) i.ord, g.slot
                FROM input i JOIN granted g ON g.tenant_id = i.tenant_id
                WHERE i.grantable AND i.ord NOT IN (SELECT ord FROM key_grant_use)
                  AND i.ord NOT IN (SELECT ord FROM new_key_use)
                ORDER BY i.tenant_id, i.ord
            ), inserted AS (
                INSERT INTO jobs (id, tenant_id, queue, type, payload, priority, run_at, job_key, ordering_key,
                                  key_head, max_attempts, request_hash, timeout_ms, payload_version, concurrency_key,
                                  fairness_key, status, ready_rank, admitted_at, created_at, not_due)
                SELECT i.id, i.tenant_id, i.queue, i.type, i.payload::jsonb, i.priority,
                       coalesce(i.run_at::timestamptz, :now + coalesce(i.delay_ms, 0) * interval '1 millisecond'),
                       i.job_key, i.ordering_key,
                       i.may_head AND i.ordering_key IS NOT NULL
                           AND row_number() OVER (PARTITION BY i.tenant_id, i.ordering_key ORDER BY i.ord) = 1,
                       i.max_attempts, i.request_hash, i.timeout_ms, i.payload_version, i.concurrency_key, i.fairness_key,
                       CASE WHEN u.ord IS NULL AND k.ord IS NULL AND nk.ord IS NULL THEN 'pending' ELSE 'ready' END::job_status,
                       CASE WHEN k.ord IS NOT NULL THEN k.ready_rank WHEN nk.ord IS NOT NULL THEN nk.ready_rank
                            WHEN u.ord IS NOT NULL THEN '-Infinity'::double precision END,
                       CASE WHEN u.ord IS NOT NULL OR k.ord IS NOT NULL OR nk.ord IS NOT NULL THEN :now END,
                       :now,
                       coalesce(i.run_at::timestamptz, :now + coalesce(i.delay_ms, 0) * interval '1 millisecond') > :now
                           AND (i.concurrency_key IS NOT NULL OR i.fairness_key IS NOT NULL)
                FROM input i LEFT JOIN grant_use u ON u.ord = i.ord LEFT JOIN key_grant_use k ON k.ord = i.ord
                     LEFT JOIN new_key_use nk ON nk.ord = i.ord
                -- job keys taken in one order by every request: in the request's order, two batches naming the
                -- same keys in different orders each waited for a key the other held (a deadlock, answered 500)
                ORDER BY i.job_key, i.ord
                ON CONFLICT DO NOTHING
                RETURNING *
            """ + USED + """
            ), key_used AS (
                DELETE FROM key_grants g
                USING (SELECT k.tenant_id, k.fairness_key, k.slot FROM key_grant_use k JOIN input n ON n.ord = k.ord
                       JOIN inserted i ON i.id = n.id
                       UNION ALL
                       SELECT k.tenant_id, chr(1), k.slot FROM new_key_use k JOIN input n ON n.ord = k.ord
                       JOIN inserted i ON i.id = n.id) x
                WHERE g.tenant_id = x.tenant_id AND g.fairness_key = x.fairness_key AND g.slot = x.slot
                RETURNING g.tenant_id
            )
            SELECT input.ord AS input_ord, input.id AS input_id, inserted.*,
                   (SELECT count(pg_notify('fairq_ready', '')) FROM used)
                       + (SELECT count(pg_notify('fairq_ready', '')) + count(pg_notify('fairq_jobs', 'g:' || tenant_id))
                          FROM key_used) AS woken
            FROM input LEFT JOIN inserted ON inserted.id = input.id
            ORDER BY input.ord
            """;
    static final Forms INSERT_KEYED_JOBS = Forms.of(INSERT_KEYED_JOBS_TEXT);

    /**
     * INSERT_KEYED_JOBS for a caller that waits for the flush itself, as {@link #INSERT_JOBS_UNFLUSHED}. It still wakes
     * in the statement (a key grant wakes the scheduler, and only the statement knows which); without the flush in
     * its commit the notification lock is held for a moment only.
     */
    static final Forms INSERT_KEYED_JOBS_UNFLUSHED = Forms.of(NamedSql.variant(INSERT_KEYED_JOBS_TEXT,
            FINAL_SELECT, FINAL_SELECT_UNFLUSHED));

    /**
     * The max_queued check counts at most max_queued rows per tenant (an index range scan that stops at
     * the limit), so its cost is bounded by the limit, not by the backlog. One status per count: pending is a
     * range of jobs_tenant_status_idx, ready of the small jobs_claim_idx; a single "status IN (pending, ready)"
     * matches neither partial index, and with statistics taken while the table was empty it was planned as a
     * sequential scan of the whole table on every enqueue (StaleStatisticsTest). It is a soft limit: concurrent
     * enqueues of one tenant can each see room and overshoot by the batches in flight, a deliberate trade
     * against serialising every enqueue of a tenant on a counter row.
     */
    static final NamedSql QUEUED_COUNTS = NamedSql.of(queuedCounts("t.id = ANY(:tenant_ids::text[])"));
    /**
     * {@link #QUEUED_COUNTS} for one tenant, what every single-job submit asks. With an array the planner never
     * settles on a generic plan (it estimates more than one tenant, so the one-tenant custom plan always looks
     * cheaper) and planned the statement at every call: 0.48 ms of planning against 0.21 ms of execution, for
     * each of 1,000 trickling tenants' submits under a flood (pg_stat_statements, tenants bench, trickle
     * phase). With a scalar it is planned once per connection (0.161 -> 0.004 ms on PostgreSQL 15).
     */
    static final NamedSql QUEUED_COUNT = NamedSql.of(queuedCounts("t.id = :tenant_id"));

    private static String queuedCounts(String tenants) {
        return """
                SELECT t.id, t.max_queued,
                       (SELECT count(*) FROM (SELECT 1 FROM jobs j
                                              WHERE j.tenant_id = t.id AND j.status = 'pending'
                                              LIMIT t.max_queued) q)
                     + (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.id AND j.status = 'ready') AS queued
                FROM tenants t WHERE\s""" + tenants + "\n";
    }

    private final QueueClock clock;
    private volatile LocalStarts localStarts;
    /** What the last exact count found per tenant, plus what this process enqueued since (see ROOM_TRUSTED_SHARE). */
    private final Map<String, QueueRoom> queueRoom = new ConcurrentHashMap<>();

    Enqueue(QueueClock clock) {
        this.clock = clock;
    }

    private record QueueRoom(long maxQueued, long queued, long countedAtNanos) {
        QueueRoom plus(long n) {
            return new QueueRoom(maxQueued, queued + n, countedAtNanos);
        }
    }

    /**
     * Enqueues many jobs in the caller's transaction, in a few statements whatever the count. Results come
     * back in request order. Validation errors name the index of the request ({@code jobs[3].type}) and
     * nothing is written.
     */
    public List<EnqueueResult> enqueueAll(DSLContext tx, List<JobRequest> requests) {
        return enqueueAll(tx, requests, Commit.OWN);
    }

    /** Who wakes the workers for a job a grant inserted ready, and whether the commit waits for the WAL flush. */
    public enum Commit {
        /** The caller's transaction, the wake-up in the statement: an application's own enqueue. */
        OWN,
        /** The caller's commit, the wake-up the caller's after it ({@link #INSERT_JOBS_QUIET}). */
        CALLER_WAKES,
        /** As CALLER_WAKES, and the commit does not wait for the flush; the caller awaits it ({@link #INSERT_JOBS_UNFLUSHED}). */
        UNFLUSHED
    }

    /**
     * A batch with any fairness key goes through {@link #INSERT_KEYED_JOBS} (or its unflushed twin), which still
     * wakes the workers (and the scheduler, for key grants) in the statement.
     */
    public List<EnqueueResult> enqueueAll(DSLContext tx, List<JobRequest> requests, Commit commit) {
        if (requests.isEmpty()) return List.of();
        if (requests.size() > 1 && tx.connectionResult(java.sql.Connection::getAutoCommit)) {
            // maybe several statements (a batch per MAX_BATCH, a round per conflict: a second job of one ordering key
            // goes in a round after its head), given no transaction: one of ours, so that a failure in a later one
            // leaves none of the jobs in (in autocommit each committed alone). One job is one insert that counts
            // (a round after a conflict inserted nothing), so it needs none. A caller's own transaction is used as it is
            return tx.transactionResult(c -> enqueueAll(c.dsl(), requests, commit));
        }
        List<FieldError> errors = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            String prefix = requests.size() == 1 ? "" : "jobs[" + i + "].";
            for (FieldError e : requests.get(i).validate(clock.instant())) errors.add(e.prefixed(prefix));
        }
        if (!errors.isEmpty()) throw new InvalidJobException(errors);
        boolean countInInsert = checkQueueRoom(tx, requests);

        LocalStarts.Slot slot = requests.size() == 1 ? reserveLocalStart(requests.get(0)) : null;
        boolean claimed = false;
        try {
            List<EnqueueResult> results = new ArrayList<>(requests.size());
            String[] startXact = new String[1];
            for (int from = 0; from < requests.size(); from += MAX_BATCH) {
                results.addAll(insertBatch(tx, requests.subList(from, Math.min(requests.size(), from + MAX_BATCH)), commit, slot,
                        countInInsert, startXact));
            }
            if (slot != null) {
                EnqueueResult r = results.get(0);
                if (r.created() && r.job().getStatus() == JobStatus.running) {
                    slot.claimed(claimedJob(r.job()), startXact[0]);
                    claimed = true;
                }
            }
            return results;
        } finally {
            if (slot != null && !claimed) slot.release();
        }
    }

    /** Where a worker of this process is set to start granted jobs in their enqueue ({@link LocalStarts}). */
    void startLocally(LocalStarts starts) {
        this.localStarts = starts;
    }

    LocalStarts localStarts() {
        return localStarts;
    }

    /**
     * A thread of this process's worker for a job that a tenant grant may admit in its enqueue (the INSERT decides:
     * no grant, no start). A job with an ordering, concurrency or fairness key, or not due now, never takes a grant
     * here, so it never takes a thread either.
     */
    private LocalStarts.Slot reserveLocalStart(JobRequest r) {
        LocalStarts starts = localStarts;
        if (starts == null || r.orderingKey() != null || r.concurrencyKey() != null || r.fairnessKey() != null
                || r.delay() != null && !r.delay().isZero() && !r.delay().isNegative()
                || r.runAt() != null && r.runAt().toInstant().isAfter(clock.instant())) {
            return null;
        }
        return starts.reserve(r.queue(), r.type());
    }

    /** The job as a claim would have returned it (Leases.CLAIM's columns). */
    private static ClaimedJob claimedJob(JobsRecord j) {
        return new ClaimedJob(j.getId(), j.getTenantId(), j.getQueue(), j.getType(), j.getPayload() == null ? null : j.getPayload().data(),
                j.getAttempts(), j.getMaxAttempts(), j.getJobKey(), j.getOrderingKey(), j.getCreatedAt(), j.getAdmittedAt(),
                j.getReadyRank() == null ? Double.NEGATIVE_INFINITY : j.getReadyRank(), j.getTimeoutMs(),
                j.getPayloadVersion(), j.getSnoozes(), j.getStartedAt());
    }

    /**
     * The max_queued check before the insert; true when it is left to the insert itself: a single job whose
     * tenant's count is not trusted ({@link #oneRowCounted}).
     */
    private boolean checkQueueRoom(DSLContext tx, List<JobRequest> requests) {
        Map<String, Integer> adding = new LinkedHashMap<>();
        for (JobRequest r : requests) adding.merge(r.tenantId(), 1, Integer::sum);
        long now = clock.nanoTime();
        List<String> toCount = new ArrayList<>();
        for (Map.Entry<String, Integer> e : adding.entrySet()) {
            QueueRoom room = queueRoom.get(e.getKey());
            boolean trusted = room != null && now - room.countedAtNanos() < ROOM_TRUST_NANOS
                    && room.queued() + e.getValue() <= room.maxQueued() * ROOM_TRUSTED_SHARE;
            if (!trusted) toCount.add(e.getKey());
        }
        if (requests.size() == 1 && !toCount.isEmpty()) return true;
        if (!toCount.isEmpty()) {
            Map<String, Record> byTenant = new HashMap<>();
            NamedSql.Binding count = toCount.size() == 1 ? QUEUED_COUNT.bind().set("tenant_id", toCount.get(0))
                    : QUEUED_COUNTS.bind().set("tenant_ids", toCount.toArray(String[]::new));
            for (Record r : count.fetch(tx)) {
                byTenant.put(r.get(0, String.class), r);
            }
            for (String tenant : toCount) {
                Record row = byTenant.get(tenant);
                if (row == null) throw new UnknownTenantException(tenant);
                long max = row.get(1, Long.class), queued = row.get(2, Long.class);
                int add = adding.get(tenant);
                // a job_key replay adds no job: looked up only when the request would not fit without them
                if (queued + add > max) add -= replays(tx, requests, tenant);
                adding.put(tenant, add);
                counted(tenant, max, queued, add, now);
            }
        }
        adding.forEach((tenant, n) -> queueRoom.computeIfPresent(tenant, (k, room) -> room.plus(n)));
        return false;
    }

    private static Long nullableLong(ResultSet rs, String column) throws SQLException {
        long v = rs.getLong(column);
        return rs.wasNull() ? null : v;
    }

    /** An exact count of a tenant's waiting jobs: remembered, and a refusal if {@code adding} more do not fit. */
    private void counted(String tenant, long max, long queued, int adding, long now) {
        queueRoom.put(tenant, new QueueRoom(max, queued, now));
        // a request that adds nothing (job_key replays) is never refused, even by a tenant over its limit
        if (adding > 0 && queued + adding > max) throw new QueueFullException(tenant, queued, max, adding);
    }

    /**
     * What the insert of a single job counted ({@link #oneRowCounted}), before it inserted: the job is not there when
     * it did not fit (refused here) or met a conflict.
     */
    private void settleCountedRoom(DSLContext tx, JobRequest request, InsertedRow row) {
        String tenant = request.tenantId();
        if (row.roomMax() == null) throw new UnknownTenantException(tenant);
        int adding = row.job() == null ? 1 : 0;
        // not inserted for want of room, but a replay of an existing job_key adds no job: it is answered as the
        // replay it is (the next round finds the job), not refused as if it queued one more
        if (adding == 1 && row.roomQueued() + 1 > row.roomMax() && replays(tx, List.of(request), tenant) == 1) adding = 0;
        counted(tenant, row.roomMax(), row.roomQueued(), adding, clock.nanoTime());
        if (row.job() != null) queueRoom.computeIfPresent(tenant, (k, room) -> room.plus(1));
    }

    /**
     * How many of the tenant's requests name a job_key its jobs already hold: replays (or 409s), which insert nothing
     * and so take no room under max_queued. One probe of jobs_job_key_uidx per key, made only for a request that
     * does not fit.
     */
    private static int replays(DSLContext tx, List<JobRequest> requests, String tenant) {
        List<Integer> keyed = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            JobRequest r = requests.get(i);
            if (r.jobKey() != null && r.tenantId().equals(tenant)) keyed.add(i);
        }
        return keyed.isEmpty() ? 0 : findByJobKey(tx, requests, keyed).size();
    }

    private List<EnqueueResult> insertBatch(DSLContext tx, List<JobRequest> batch, Commit commit, LocalStarts.Slot slot,
                                            boolean countInInsert, String[] startXact) {
        int n = batch.size();
        Long[] presetIds = new Long[n];
        boolean[] mayHead = new boolean[n];
        Arrays.fill(mayHead, true);
        Map<Integer, Long> idByIndex = new HashMap<>();
        Map<Integer, JobsRecord> inserted = new HashMap<>();
        List<Integer> todo = new ArrayList<>();
        for (int i = 0; i < n; i++) todo.add(i);

        // Round one inserts everything it can. A row that conflicted either has a job_key that exists (return
        // that job) or met a key that already has a head (insert it again as a waiting job, same id). A
        // job_key that a concurrent transaction takes between two rounds sends its row round once more.
        Map<Integer, JobsRecord> existing = new HashMap<>();
        for (int round = 0; !todo.isEmpty(); round++) {
            if (round == MAX_ROUNDS) throw new IllegalStateException("enqueue did not settle after " + round + " rounds");
            // the first round of a single job may count its tenant's room too; a later round's row was counted then
            List<Integer> notInserted = runInsert(tx, batch, todo, presetIds, mayHead, idByIndex, inserted, commit, slot,
                    countInInsert && round == 0, startXact);
            existing.putAll(findByJobKey(tx, batch, notInserted));
            todo = new ArrayList<>();
            for (int i : notInserted) {
                if (existing.containsKey(i)) continue;
                presetIds[i] = idByIndex.get(i);
                mayHead[i] = false;
                todo.add(i);
            }
        }

        // A key left without a head by this batch (its first job was a duplicate, or the head finished
        // while this transaction was open) gets one at commit: see jobs_ensure_key_head in V1__queue.sql.

        List<EnqueueResult> results = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            if (inserted.containsKey(i)) {
                results.add(new EnqueueResult(inserted.get(i), true));
            } else {
                results.add(new EnqueueResult(existing.get(i), false));
            }
        }
        return results;
    }

    /** Inserts the rows at {@code indexes}; returns those that were not inserted (a conflict). */
    private List<Integer> runInsert(DSLContext tx, List<JobRequest> batch, List<Integer> indexes, Long[] presetIds,
                                    boolean[] mayHead, Map<Integer, Long> idByIndex, Map<Integer, JobsRecord> inserted,
                                    Commit commit, LocalStarts.Slot slot, boolean countRoom, String[] startXact) {
        int n = indexes.size();
        Long[] ids = new Long[n];
        String[] tenant = new String[n], queue = new String[n], type = new String[n], payload = new String[n];
        Short[] priority = new Short[n];
        String[] runAt = new String[n];
        Long[] delay = new Long[n];
        String[] jobKey = new String[n], orderingKey = new String[n], hash = new String[n];
        Integer[] maxAttempts = new Integer[n];
        Integer[] timeoutMs = new Integer[n];
        Integer[] versions = new Integer[n];
        String[] concurrencyKey = new String[n], fairnessKey = new String[n];
        Boolean[] head = new Boolean[n];
        for (int k = 0; k < n; k++) {
            int i = indexes.get(k);
            JobRequest r = batch.get(i);
            ids[k] = presetIds[i];
            tenant[k] = r.tenantId();
            queue[k] = r.queue();
            type[k] = r.type();
            payload[k] = r.payloadJson();
            priority[k] = (short) r.priority();
            runAt[k] = r.runAt() == null ? null : r.runAt().toString();
            delay[k] = r.delay() == null ? null : r.delay().toMillis();
            jobKey[k] = r.jobKey();
            orderingKey[k] = r.orderingKey();
            maxAttempts[k] = r.effectiveMaxAttempts();
            timeoutMs[k] = r.timeout() == null ? null : (int) r.timeout().toMillis();
            hash[k] = r.requestHash();
            versions[k] = r.payloadVersion();
            concurrencyKey[k] = r.concurrencyKey();
            fairnessKey[k] = r.fairnessKey();
            head[k] = mayHead[i];
        }
        List<Integer> notInserted = new ArrayList<>();
        boolean keyed = false;
        for (String k : fairnessKey) keyed |= k != null;
        Forms forms = switch (commit) {
            case OWN -> keyed ? INSERT_KEYED_JOBS : INSERT_JOBS;
            case CALLER_WAKES -> keyed ? INSERT_KEYED_JOBS : INSERT_JOBS_QUIET;
            case UNFLUSHED -> keyed ? INSERT_KEYED_JOBS_UNFLUSHED : INSERT_JOBS_UNFLUSHED;
        };
        boolean one = n == 1; // countRoom only ever for a single job (checkQueueRoom)
        NamedSql insert = forms.pick(one, countRoom);
        java.util.function.Function<Object[], Object> v = values -> one ? values[0] : values; // INPUT_ROW: scalars
        NamedSql.Binding binding = insert.bind().clock(clock)
                .set("preset_ids", v.apply(ids)).set("tenant_ids", v.apply(tenant)).set("queues", v.apply(queue))
                .set("types", v.apply(type)).set("payloads", v.apply(payload)).set("priorities", v.apply(priority))
                .set("run_ats", v.apply(runAt)).set("delays_ms", v.apply(delay)).set("job_keys", v.apply(jobKey))
                .set("ordering_keys", v.apply(orderingKey)).set("max_attempts", v.apply(maxAttempts))
                .set("request_hashes", v.apply(hash)).set("may_head", v.apply(head)).set("timeouts_ms", v.apply(timeoutMs))
                .set("payload_versions", v.apply(versions)).set("concurrency_keys", v.apply(concurrencyKey))
                .set("fairness_keys", v.apply(fairnessKey));
        if (!keyed) { // the keyed statements start nothing in the enqueue (a slot is never reserved for them)
            // the lease runs from this statement, not from :now (now() is the transaction's start, which may lie a
            // lease in the past), so it ends no sooner than the worker's own reckoning from just before the statement;
            // started_at is :now, as created_at and admitted_at (the three equal mark a job started in its enqueue)
            binding.set("start_by", slot == null ? null : slot.workerId())
                    .set("start_lease_ms", slot == null ? null : slot.leaseMillis())
                    .set("start_at", clock.sqlNow());
        }
        JobRows jobs = JobRows.of(insert);
        boolean readXact = slot != null && !keyed; // INSERT_JOBS' start_xact: only a job inserted running has one
        for (InsertedRow row : binding.query(tx, rs -> new InsertedRow(rs.getInt("input_ord"), rs.getLong("input_id"), jobs.of(rs),
                countRoom ? nullableLong(rs, "room_max_queued") : null, countRoom ? nullableLong(rs, "room_queued") : null,
                readXact ? rs.getString("start_xact") : null))) {
            if (row.startXact() != null) startXact[0] = row.startXact();
            if (countRoom) settleCountedRoom(tx, batch.get(indexes.get(row.ord() - 1)), row);
            int i = indexes.get(row.ord() - 1);
            idByIndex.put(i, row.id());
            if (row.job() != null) inserted.put(i, row.job());
            else notInserted.add(i);
        }
        return notInserted;
    }

    /**
     * An input row of the insert: its place in the batch, its id, the job inserted (null: a conflict, or no room), and
     * for a statement that counted its tenant's room ({@link #oneRowCounted}) the tenant's max_queued and its count
     * (null: no such tenant).
     */
    private record InsertedRow(int ord, long id, JobsRecord job, Long roomMax, Long roomQueued, String startXact) {}

    /**
     * A result's rows as JobsRecords, read with plain JDBC, each column found once per result. {@code
     * Record.into(JOBS)} matched every column by name on every row: 42-50 us of the caller's CPU a row in a
     * 5,000-row enqueue (JFR of the tenants bench's flood), against the statement's own 60-70. And jOOQ's fetch of
     * plain SQL (rendering it, a data type built for each array it binds, a type lookup per result column) was most
     * of a single-job enqueue's CPU in its JVM (JFR: 110 of 126 samples, the driver 12).
     */
    static final class JobRows {
        private static final Field<?>[] FIELDS = JOBS.fields();
        private static final int ID = Arrays.asList(FIELDS).indexOf(JOBS.ID);
        private static final Map<NamedSql, JobRows> BY_STATEMENT = new ConcurrentHashMap<>();
        /** Where each of FIELDS is in the statement's result (0: not there); found once. */
        private volatile int[] at;

        /** The reader of one statement's results: a statement's columns are the same at every execution. */
        static JobRows of(NamedSql statement) {
            return BY_STATEMENT.computeIfAbsent(statement, k -> new JobRows());
        }

        private int[] columns(ResultSet rs) throws SQLException {
            int[] found = at;
            if (found == null) {
                ResultSetMetaData md = rs.getMetaData();
                Map<String, Integer> byName = new HashMap<>();
                for (int c = md.getColumnCount(); c >= 1; c--) byName.put(md.getColumnLabel(c), c); // the first wins
                found = new int[FIELDS.length];
                for (int j = 0; j < FIELDS.length; j++) found[j] = byName.getOrDefault(FIELDS[j].getName(), 0);
                at = found;
            }
            return found;
        }

        /** The row's job, or null where the row has no job (a left join that found none). */
        JobsRecord of(ResultSet rs) throws SQLException {
            int[] at = columns(rs);
            rs.getLong(at[ID]);
            if (rs.wasNull()) return null;
            JobsRecord job = new JobsRecord();
            for (int j = 0; j < FIELDS.length; j++) if (at[j] > 0) set(job, FIELDS[j], value(rs, at[j], FIELDS[j].getType()));
            job.changed(false);
            return job;
        }

        private static Object value(ResultSet rs, int c, Class<?> type) throws SQLException {
            if (type == OffsetDateTime.class) return rs.getObject(c, OffsetDateTime.class);
            if (type == String.class) return rs.getString(c);
            if (type == JSONB.class) {
                String json = rs.getString(c);
                return json == null ? null : JSONB.valueOf(json);
            }
            if (type == JobStatus.class) {
                String status = rs.getString(c);
                return status == null ? null : JobStatus.lookupLiteral(status);
            }
            Object v = rs.getObject(c);
            if (v == null) return null;
            if (type == Long.class) return ((Number) v).longValue();
            if (type == Integer.class) return ((Number) v).intValue();
            if (type == Short.class) return ((Number) v).shortValue();
            if (type == Double.class) return ((Number) v).doubleValue();
            if (type == Boolean.class) return v;
            throw new IllegalStateException("no reader for a jobs column of " + type);
        }

        @SuppressWarnings("unchecked")
        private static <T> void set(JobsRecord job, Field<T> field, Object value) {
            job.set(field, (T) value);
        }
    }

    /**
     * A durable commit after the caller's unflushed one ({@link #INSERT_JOBS_UNFLUSHED}). A commit that waits for the
     * flush waits for every byte of WAL before its own commit record, which lies after the commit record of every
     * transaction this session has seen committed. It needs a transaction id and a WAL record of its own: a
     * transactional logical message is the smallest (about 100 bytes of WAL with its commit record), open to any
     * role and written at any wal_level (logical decoders see a message with prefix 'fairq'). synchronous_commit
     * is the connection's own (on, or remote_write/remote_apply with synchronous standbys), and on where a pool or
     * the server turned it off.
     */
    static final NamedSql AWAIT_DURABLE = NamedSql.of("""
            SELECT CASE WHEN current_setting('synchronous_commit') = 'off'
                        THEN set_config('synchronous_commit', 'on', true) END,
                   pg_logical_emit_message(true, 'fairq', 'durable')
            """);

    public void awaitDurable(DSLContext ctx) {
        AWAIT_DURABLE.bind().run(ctx);
    }

    /** The jobs already holding the given job keys: one probe of jobs_job_key_uidx per key. */
    static final NamedSql BY_JOB_KEY = NamedSql.of("""
            SELECT j.* FROM unnest(:tenant_ids::text[], :job_keys::text[]) AS k(tenant_id, job_key)
            JOIN jobs j ON j.tenant_id = k.tenant_id AND j.job_key = k.job_key
            """);

    private static Map<Integer, JobsRecord> findByJobKey(DSLContext tx, List<JobRequest> batch, List<Integer> indexes) {
        Map<Integer, JobsRecord> found = new HashMap<>();
        List<String> tenants = new ArrayList<>(), keys = new ArrayList<>();
        for (int i : indexes) {
            JobRequest r = batch.get(i);
            if (r.jobKey() != null) {
                tenants.add(r.tenantId());
                keys.add(r.jobKey());
            }
        }
        if (keys.isEmpty()) return found;
        Map<String, JobsRecord> byKey = new HashMap<>();
        JobRows jobs = JobRows.of(BY_JOB_KEY);
        for (JobsRecord r : BY_JOB_KEY.bind().set("tenant_ids", tenants.toArray(String[]::new))
                .set("job_keys", keys.toArray(String[]::new)).query(tx, jobs::of)) {
            byKey.put(r.getTenantId() + "\u0000" + r.getJobKey(), r);
        }
        for (int i : indexes) {
            JobRequest r = batch.get(i);
            if (r.jobKey() == null) continue;
            JobsRecord job = byKey.get(r.tenantId() + "\u0000" + r.jobKey());
            if (job != null) found.put(i, job);
        }
        return found;
    }
}

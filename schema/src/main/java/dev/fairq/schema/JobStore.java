package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.jooq.DSLContext;
import org.jooq.Record;
import org.jooq.Result;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import static dev.fairq.schema.generated.Tables.JOBS;

/**
 * All the SQL of the queue, in life-cycle order: enqueue, admission (used by the scheduler), claim, heartbeat,
 * finish, reap, release, the operator actions (cancel, replay, discard), and the reads the API needs. The
 * dashboards' rollup lives beside it in {@link DashboardStore}. Each statement is a constant
 * with a comment where it is subtle; each is served by an index named in V1__queue.sql.
 *
 * <p>Methods that take a {@link DSLContext} run on it as given: pass the caller's transaction to enqueue
 * atomically with the caller's own writes; pass a pool-backed context for a statement in its own short
 * transaction. Methods that write several statements open a transaction on the context they are given
 * (nested in the caller's when there is one).
 */
public final class JobStore {
    private static final Logger log = LoggerFactory.getLogger(JobStore.class);

    /** Jobs of one request array; a bigger batch is split (PostgreSQL array binds have no hard limit). */
    public static final int MAX_BATCH = 10_000;

    // ---------------------------------------------------------------------------------------------------
    // Enqueue
    // ---------------------------------------------------------------------------------------------------

    /**
     * Inserts a batch in one statement. Ids are taken in request order up front (nextval runs after the
     * ORDER BY), so a job that has to be inserted again in a second step keeps its place in its key.
     * The first job of each (tenant, ordering_key) in the batch tries to become the key's head; ON CONFLICT
     * DO NOTHING turns both a duplicate job_key and an already-taken head into "not inserted", and the
     * caller sorts those out ({@link #enqueueAll}). RETURNING gives the inserted rows, whole, so the
     * caller needs no second read; the outer SELECT gives every input row with its id, matched to them.
     *
     * <p>A tenant holding an admission grant (V4__admission_grants.sql: the scheduler admitted its next job
     * in advance) has its first due job without an ordering key inserted ready, ranked at the front of the
     * claim order (-Infinity), and the workers are woken: a quiet tenant's job starts without a scheduler
     * round trip. The grant is locked first (SKIP LOCKED: one that another open transaction is taking is
     * simply not there, so no enqueue ever waits on another's) and deleted only for a row that was actually
     * inserted ready, so a job_key replay or a conflict leaves it for the next job.
     */
    private static final String INSERT_JOBS = """
            WITH input AS MATERIALIZED (
                SELECT coalesce(r.preset_id, nextval(pg_get_serial_sequence('jobs', 'id'))) AS id, r.*,
                       r.ordering_key IS NULL AND coalesce(r.run_at::timestamptz <= now(), true)
                           AND coalesce(r.delay_ms, 0) <= 0 AS grantable
                FROM unnest(?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[], ?::smallint[], ?::text[],
                            ?::bigint[], ?::text[], ?::text[], ?::integer[], ?::text[], ?::boolean[])
                     WITH ORDINALITY AS r(preset_id, tenant_id, queue, type, payload, priority, run_at,
                                          delay_ms, job_key, ordering_key, max_attempts, request_hash, may_head, ord)
                ORDER BY r.ord
            ), granted AS (
                SELECT a.tenant_id FROM admission_grants a
                WHERE a.tenant_id IN (SELECT tenant_id FROM input WHERE grantable)
                FOR UPDATE SKIP LOCKED
            ), grant_use AS (
                SELECT DISTINCT ON (i.tenant_id) i.ord
                FROM input i JOIN granted g ON g.tenant_id = i.tenant_id
                WHERE i.grantable
                ORDER BY i.tenant_id, i.ord
            ), inserted AS (
                INSERT INTO jobs (id, tenant_id, queue, type, payload, priority, run_at, job_key, ordering_key,
                                  key_head, max_attempts, request_hash, status, ready_rank, admitted_at)
                SELECT i.id, i.tenant_id, i.queue, i.type, i.payload::jsonb, i.priority,
                       coalesce(i.run_at::timestamptz, now() + coalesce(i.delay_ms, 0) * interval '1 millisecond'),
                       i.job_key, i.ordering_key,
                       i.may_head AND i.ordering_key IS NOT NULL
                           AND row_number() OVER (PARTITION BY i.tenant_id, i.ordering_key ORDER BY i.ord) = 1,
                       i.max_attempts, i.request_hash,
                       CASE WHEN u.ord IS NULL THEN 'pending' ELSE 'ready' END::job_status,
                       CASE WHEN u.ord IS NOT NULL THEN '-Infinity'::double precision END,
                       CASE WHEN u.ord IS NOT NULL THEN now() END
                FROM input i LEFT JOIN grant_use u ON u.ord = i.ord
                ORDER BY i.ord
                ON CONFLICT DO NOTHING
                RETURNING *
            ), used AS (
                DELETE FROM admission_grants g
                WHERE g.tenant_id IN (SELECT tenant_id FROM inserted WHERE status = 'ready')
                RETURNING g.tenant_id
            )
            SELECT input.ord AS input_ord, input.id AS input_id, inserted.*,
                   (SELECT count(pg_notify('fairq_ready', '')) FROM used) AS woken
            FROM input LEFT JOIN inserted ON inserted.id = input.id
            ORDER BY input.ord
            """;

    /**
     * The max_queued check counts at most max_queued rows per tenant (an index range scan that stops at
     * the limit), so its cost is bounded by the limit, not by the backlog. It is a soft limit: concurrent
     * enqueues of one tenant can each see room and overshoot by the batches in flight, a deliberate trade
     * against serialising every enqueue of a tenant on a counter row.
     */
    private static final String QUEUED_COUNTS = """
            SELECT t.id, t.max_queued,
                   (SELECT count(*) FROM (SELECT 1 FROM jobs j
                                          WHERE j.tenant_id = t.id AND j.status IN ('pending', 'ready')
                                          LIMIT t.max_queued) q) AS queued
            FROM tenants t WHERE t.id = ANY(?::text[])
            """;

    /**
     * Enqueues one job in the caller's transaction. With a job_key that the tenant already used (a live
     * job, or a finished one still within retention) it returns that job and creates nothing.
     */
    public EnqueueResult enqueue(DSLContext tx, JobRequest request) {
        return enqueueAll(tx, List.of(request)).get(0);
    }

    /**
     * Enqueues many jobs in the caller's transaction, in a few statements whatever the count. Results come
     * back in request order. Validation errors name the index of the request ({@code jobs[3].type}) and
     * nothing is written.
     */
    public List<EnqueueResult> enqueueAll(DSLContext tx, List<JobRequest> requests) {
        if (requests.isEmpty()) return List.of();
        List<FieldError> errors = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            String prefix = requests.size() == 1 ? "" : "jobs[" + i + "].";
            for (FieldError e : requests.get(i).validate()) errors.add(e.prefixed(prefix));
        }
        if (!errors.isEmpty()) throw new InvalidJobException(errors);
        checkQueueRoom(tx, requests);

        List<EnqueueResult> results = new ArrayList<>(requests.size());
        for (int from = 0; from < requests.size(); from += MAX_BATCH) {
            results.addAll(insertBatch(tx, requests.subList(from, Math.min(requests.size(), from + MAX_BATCH))));
        }
        return results;
    }

    /**
     * What the last exact count found per tenant, plus what this process enqueued since, for one second.
     * Counting is O(min(backlog, max_queued)) (20 ms at 100,000 waiting), so a tenant far from its limit is
     * not counted on every enqueue: while the cached figure plus the new jobs stays under half of max_queued
     * the check trusts it, and near the limit it counts exactly again. A limit lowered by an admin applies
     * within the second.
     */
    private final Map<String, QueueRoom> queueRoom = new java.util.concurrent.ConcurrentHashMap<>();

    private record QueueRoom(long maxQueued, long queued, long countedAtNanos) {
        QueueRoom plus(long n) {
            return new QueueRoom(maxQueued, queued + n, countedAtNanos);
        }
    }

    private void checkQueueRoom(DSLContext tx, List<JobRequest> requests) {
        Map<String, Integer> adding = new LinkedHashMap<>();
        for (JobRequest r : requests) adding.merge(r.tenantId(), 1, Integer::sum);
        long now = System.nanoTime();
        List<String> toCount = new ArrayList<>();
        for (Map.Entry<String, Integer> e : adding.entrySet()) {
            QueueRoom room = queueRoom.get(e.getKey());
            boolean trusted = room != null && now - room.countedAtNanos() < 1_000_000_000L
                    && room.queued() + e.getValue() <= room.maxQueued() / 2;
            if (!trusted) toCount.add(e.getKey());
        }
        if (!toCount.isEmpty()) {
            Map<String, Record> byTenant = new HashMap<>();
            for (Record r : tx.resultQuery(QUEUED_COUNTS, (Object) toCount.toArray(String[]::new)).fetch()) {
                byTenant.put(r.get(0, String.class), r);
            }
            for (String tenant : toCount) {
                Record row = byTenant.get(tenant);
                if (row == null) throw new UnknownTenantException(tenant);
                long max = row.get(1, Long.class);
                long queued = row.get(2, Long.class);
                queueRoom.put(tenant, new QueueRoom(max, queued, now));
                if (queued + adding.get(tenant) > max) throw new QueueFullException(tenant, queued, max);
            }
        }
        adding.forEach((tenant, n) -> queueRoom.computeIfPresent(tenant, (k, room) -> room.plus(n)));
    }

    private List<EnqueueResult> insertBatch(DSLContext tx, List<JobRequest> batch) {
        int n = batch.size();
        Long[] presetIds = new Long[n];
        boolean[] mayHead = new boolean[n];
        java.util.Arrays.fill(mayHead, true);
        Map<Integer, Long> idByIndex = new HashMap<>();
        Map<Integer, JobsRecord> inserted = new HashMap<>();
        List<Integer> todo = new ArrayList<>();
        for (int i = 0; i < n; i++) todo.add(i);

        // Round one inserts everything it can. A row that conflicted either has a job_key that exists (return
        // that job) or met a key that already has a head (insert it again as a waiting job, same id). A
        // job_key that a concurrent transaction takes between two rounds sends its row round once more.
        Map<Integer, JobsRecord> existing = new HashMap<>();
        for (int round = 0; !todo.isEmpty(); round++) {
            if (round == 4) throw new IllegalStateException("enqueue did not settle after " + round + " rounds");
            List<Integer> notInserted = runInsert(tx, batch, todo, presetIds, mayHead, idByIndex, inserted);
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

    private List<Integer> runInsert(DSLContext tx, List<JobRequest> batch, List<Integer> indexes, Long[] presetIds,
                                    boolean[] mayHead, Map<Integer, Long> idByIndex, Map<Integer, JobsRecord> inserted) {
        int n = indexes.size();
        Long[] ids = new Long[n];
        String[] tenant = new String[n], queue = new String[n], type = new String[n], payload = new String[n];
        Short[] priority = new Short[n];
        String[] runAt = new String[n];
        Long[] delay = new Long[n];
        String[] jobKey = new String[n], orderingKey = new String[n], hash = new String[n];
        Integer[] maxAttempts = new Integer[n];
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
            hash[k] = r.requestHash();
            head[k] = mayHead[i];
        }
        List<Integer> notInserted = new ArrayList<>();
        for (Record row : tx.resultQuery(INSERT_JOBS, ids, tenant, queue, type, payload, priority, runAt, delay,
                jobKey, orderingKey, maxAttempts, hash, head).fetch()) {
            int i = indexes.get(row.get("input_ord", Integer.class) - 1);
            idByIndex.put(i, row.get("input_id", Long.class));
            if (row.get("id") != null) inserted.put(i, row.into(JOBS));
            else notInserted.add(i);
        }
        return notInserted;
    }

    private Map<Integer, JobsRecord> findByJobKey(DSLContext tx, List<JobRequest> batch, List<Integer> indexes) {
        Map<Integer, JobsRecord> found = new HashMap<>();
        List<org.jooq.Condition> keys = new ArrayList<>();
        for (int i : indexes) {
            JobRequest r = batch.get(i);
            if (r.jobKey() != null) keys.add(JOBS.TENANT_ID.eq(r.tenantId()).and(JOBS.JOB_KEY.eq(r.jobKey())));
        }
        if (keys.isEmpty()) return found;
        Map<String, JobsRecord> byKey = new HashMap<>();
        for (JobsRecord r : tx.selectFrom(JOBS).where(org.jooq.impl.DSL.or(keys)).fetch()) {
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

    // ---------------------------------------------------------------------------------------------------
    // Admission (the scheduler's side)
    // ---------------------------------------------------------------------------------------------------

    /**
     * Per tenant, its next admissible due jobs in aging order, for the tenants the scheduler names with how
     * many it may take from each. One index probe per named tenant on jobs_admit_idx, never a scan of the
     * backlog: cost grows with the tenants that have room, not with the jobs waiting.
     */
    private static final String ADMISSION_CANDIDATES = """
            SELECT l.tenant_id, c.id, c.sort_key
            FROM unnest(?::text[], ?::integer[]) AS l(tenant_id, lim)
            CROSS JOIN LATERAL (
                SELECT j.id, j.sort_key FROM jobs j
                WHERE j.tenant_id = l.tenant_id AND j.status = 'pending'
                  AND (j.ordering_key IS NULL OR j.key_head) AND j.run_at <= now()
                ORDER BY j.sort_key, j.id
                LIMIT l.lim
            ) c
            """;

    /**
     * Moves the chosen jobs to ready in one statement, each with the rank (start tag) the scheduler gave it;
     * workers claim in rank order. The status re-check makes a job cancelled meanwhile simply drop out.
     * pg_notify wakes idle workers; PostgreSQL delivers it at commit and folds duplicates into one.
     *
     * <p>The arrays go through a one-row MATERIALIZED CTE so that they are parsed once per statement. jOOQ
     * binds PostgreSQL arrays as text plus a cast, and in a generic (prepared) plan a cast written inside a
     * per-row expression is evaluated for every row: that parsing made this statement cost 55 µs per job
     * instead of 7 (see bench/RESULTS.md). COMPLETE and FAIL use the same shape for the same reason.
     */
    private static final String ADMIT = """
            WITH picks AS MATERIALIZED (
                SELECT ?::double precision[] AS ranks, ?::bigint[] AS ids
            ), admitted AS (
                UPDATE jobs j
                SET status = 'ready', admitted_at = now(), ready_rank = p.ranks[array_position(p.ids, j.id)]
                FROM picks p
                WHERE j.id = ANY(p.ids) AND j.status = 'pending'
                RETURNING j.id, j.tenant_id
            )
            SELECT admitted.id, admitted.tenant_id, pg_notify('fairq_ready', '')
            FROM admitted
            """;

    /**
     * Everything a tick needs to know, in one round trip: ready and running counts per tenant, the live
     * worker capacity, the lowest and highest rank in the ready buffer, and which tenants have admissible
     * work at all. One branch per status so each is served by its own small partial index (a single
     * "status IN (...)" is planned as a scan of the whole table); the tenants come from a loose index scan
     * over jobs_admit_idx (one probe per distinct tenant), so idle tenants cost nothing and a deep backlog
     * is never walked.
     */
    private static final String LOAD = """
            WITH RECURSIVE with_work(tenant_id) AS (
                (SELECT tenant_id FROM jobs
                 WHERE status = 'pending' AND (ordering_key IS NULL OR key_head)
                 ORDER BY tenant_id LIMIT 1)
                UNION ALL
                SELECT (SELECT j.tenant_id FROM jobs j
                        WHERE j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                          AND j.tenant_id > w.tenant_id
                        ORDER BY j.tenant_id LIMIT 1)
                FROM with_work w WHERE w.tenant_id IS NOT NULL
            )
            SELECT 'ready' AS what, tenant_id, count(*)::double precision AS n
            FROM jobs WHERE status = 'ready' GROUP BY tenant_id
            UNION ALL
            SELECT 'running', tenant_id, count(*) FROM jobs WHERE status = 'running' GROUP BY tenant_id
            UNION ALL
            SELECT 'capacity', NULL, coalesce(sum(capacity), 0) FROM workers
            WHERE heartbeat_at > now() - ? * interval '1 millisecond'
            UNION ALL
            SELECT 'next_rank', NULL, (SELECT min(ready_rank) FROM jobs WHERE status = 'ready' AND ready_rank > '-Infinity')
            UNION ALL
            SELECT 'last_rank', NULL, (SELECT max(ready_rank) FROM jobs WHERE status = 'ready')
            UNION ALL
            SELECT 'work', tenant_id, NULL FROM with_work WHERE tenant_id IS NOT NULL
            UNION ALL
            SELECT 'grant', tenant_id, extract(epoch FROM now() - granted_at)::double precision FROM admission_grants
            """;

    /** A paused tenant's admitted jobs go back to pending, so that pausing stops starts at once. */
    private static final String UNADMIT_PAUSED = """
            UPDATE jobs SET status = 'pending', ready_rank = NULL, admitted_at = NULL
            WHERE status = 'ready' AND tenant_id = ANY(?::text[])
            """;

    /** Tenants that have admissible pending work at all (the loose index scan of {@link #load}). */
    public List<String> tenantsWithWork(DSLContext ctx) {
        return load(ctx, Duration.ofSeconds(30)).tenantsWithWork();
    }

    /** Candidates per tenant, in each tenant's aging order. */
    public Map<String, List<Long>> admissionCandidates(DSLContext ctx, Map<String, Integer> limits) {
        Map<String, List<Long>> out = new LinkedHashMap<>();
        if (limits.isEmpty()) return out;
        String[] tenants = limits.keySet().toArray(String[]::new);
        Integer[] lims = new Integer[tenants.length];
        for (int i = 0; i < tenants.length; i++) lims[i] = limits.get(tenants[i]);
        record Candidate(long id, double sortKey) {}
        Map<String, List<Candidate>> keyed = new LinkedHashMap<>();
        for (Record r : ctx.resultQuery(ADMISSION_CANDIDATES, tenants, lims).fetch()) {
            keyed.computeIfAbsent(r.get(0, String.class), k -> new ArrayList<>())
                    .add(new Candidate(r.get(1, Long.class), r.get(2, Double.class)));
        }
        // Each tenant's rows come out of its index walk in order already; sorting here makes that a
        // guarantee rather than a property of the plan (and lets the query skip an outer sort).
        keyed.forEach((tenant, rows) -> {
            rows.sort(java.util.Comparator.comparingDouble(Candidate::sortKey).thenComparingLong(Candidate::id));
            out.put(tenant, rows.stream().map(Candidate::id).toList());
        });
        return out;
    }

    /** Admits the given jobs with the given ranks; returns the ids actually moved to ready. */
    public List<Long> admit(DSLContext ctx, List<Long> ids, List<Double> ranks) {
        if (ids.isEmpty()) return List.of();
        Long[] idArray = ids.toArray(Long[]::new);
        return ctx.resultQuery(ADMIT, ranks.toArray(Double[]::new), idArray).fetch(0, Long.class);
    }

    /** Admits the given jobs behind everything already ready, in the given order (tools and tests). */
    public List<Long> admit(DSLContext ctx, List<Long> idsInOrder) {
        Double last = ctx.fetchValue("SELECT max(ready_rank) FROM jobs WHERE status = 'ready'") instanceof Number n
                ? n.doubleValue() : 0.0;
        List<Double> ranks = new ArrayList<>(idsInOrder.size());
        for (int i = 0; i < idsInOrder.size(); i++) ranks.add(last + 1 + i);
        return admit(ctx, idsInOrder, ranks);
    }

    public QueueLoad load(DSLContext ctx, Duration workerLiveness) {
        Map<String, Integer> ready = new HashMap<>(), running = new HashMap<>();
        List<String> withWork = new ArrayList<>();
        Map<String, Double> grants = new HashMap<>();
        int capacity = 0;
        Double nextRank = null, lastRank = null;
        for (Record r : ctx.resultQuery(LOAD, workerLiveness.toMillis()).fetch()) {
            String tenant = r.get(1, String.class);
            Double n = r.get(2, Double.class);
            switch (r.get(0, String.class)) {
                case "ready" -> ready.put(tenant, n.intValue());
                case "running" -> running.put(tenant, n.intValue());
                case "capacity" -> capacity = n.intValue();
                case "next_rank" -> nextRank = n;
                case "last_rank" -> lastRank = n;
                case "grant" -> grants.put(tenant, n);
                default -> withWork.add(tenant);
            }
        }
        return new QueueLoad(ready, running, capacity, nextRank, lastRank, withWork, grants);
    }

    /**
     * What a tick starts from.
     *
     * @param nextRank lowest rank in the ready buffer (the virtual time of the next job to start), or null
     * @param lastRank highest rank in the ready buffer, or null
     * @param grantAgeSeconds the tenants holding an admission grant, with how long they have held it
     */
    public record QueueLoad(Map<String, Integer> readyByTenant, Map<String, Integer> runningByTenant,
                            int workerCapacity, Double nextRank, Double lastRank, List<String> tenantsWithWork,
                            Map<String, Double> grantAgeSeconds) {
        public int ready(String tenant) { return readyByTenant.getOrDefault(tenant, 0); }
        public int running(String tenant) { return runningByTenant.getOrDefault(tenant, 0); }
        public int totalReady() { return readyByTenant.values().stream().mapToInt(Integer::intValue).sum(); }
        public int totalRunning() { return runningByTenant.values().stream().mapToInt(Integer::intValue).sum(); }
    }

    /**
     * Grants each tenant one admission in advance (see INSERT_JOBS). The scheduler only
     * grants to tenants the last LOAD showed without a grant, and it alone inserts grants, so ON CONFLICT
     * never meets a row an enqueue is deleting, and no enqueue makes the tick wait.
     */
    private static final String GRANT = """
            INSERT INTO admission_grants (tenant_id)
            SELECT * FROM unnest(?::text[])
            ON CONFLICT (tenant_id) DO NOTHING
            """;

    /** Takes grants back. SKIP LOCKED: a grant an enqueue is taking right now is left to that enqueue. */
    private static final String REVOKE_GRANTS = """
            DELETE FROM admission_grants
            WHERE tenant_id IN (SELECT tenant_id FROM admission_grants WHERE tenant_id = ANY(?::text[])
                                FOR UPDATE SKIP LOCKED)
            RETURNING tenant_id
            """;

    public void grant(DSLContext ctx, List<String> tenants) {
        if (tenants.isEmpty()) return;
        ctx.execute(GRANT, (Object) tenants.toArray(String[]::new));
    }

    /** Returns the tenants whose grant was taken back (not one an enqueue is taking at this moment). */
    public List<String> revokeGrants(DSLContext ctx, List<String> tenants) {
        if (tenants.isEmpty()) return List.of();
        return ctx.resultQuery(REVOKE_GRANTS, (Object) tenants.toArray(String[]::new)).fetch(0, String.class);
    }

    public int unadmitPaused(DSLContext ctx, List<String> pausedTenants) {
        if (pausedTenants.isEmpty()) return 0;
        return ctx.execute(UNADMIT_PAUSED, (Object) pausedTenants.toArray(String[]::new));
    }

    // ---------------------------------------------------------------------------------------------------
    // Workers: claim, heartbeat, finish, reap, release
    // ---------------------------------------------------------------------------------------------------

    /**
     * Claims up to {@code limit} ready jobs in one short transaction (this one statement). FOR UPDATE SKIP
     * LOCKED: concurrent claimers each take different rows instead of queueing behind the first claimer's
     * row locks. The lease (locked_by, locked_until on the database clock) and attempts + 1 are written in
     * the same statement; the handler then runs outside any transaction.
     */
    private static final String CLAIM = """
            UPDATE jobs j
            SET status = 'running', locked_by = ?, locked_until = now() + ? * interval '1 millisecond',
                attempts = j.attempts + 1, started_at = now()
            FROM (SELECT id FROM jobs WHERE status = 'ready'
                  ORDER BY ready_rank, id LIMIT ? FOR UPDATE SKIP LOCKED) c
            WHERE j.id = c.id
            RETURNING j.id, j.tenant_id, j.queue, j.type, j.payload::text, j.attempts, j.max_attempts, j.job_key,
                      j.ordering_key, j.created_at, j.admitted_at, j.ready_rank
            """;

    /**
     * Extends the leases of all of a worker's jobs in one statement, and proves the worker alive in the
     * registry. Only rows still locked by this worker are touched: a job the reaper took back stays taken.
     */
    private static final String HEARTBEAT = """
            WITH alive AS (
                INSERT INTO workers (id, capacity) VALUES (?, ?)
                ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()
                RETURNING id
            )
            UPDATE jobs SET locked_until = now() + ? * interval '1 millisecond'
            WHERE id = ANY(?::bigint[]) AND locked_by = (SELECT id FROM alive)
            RETURNING id
            """;

    /**
     * Successes, fenced: a row changes only while this worker still holds this attempt's lease. Zero rows
     * for a job means the lease expired and the job was reclaimed; the late result is dropped.
     *
     * <p>Rows are found by {@code id = ANY(ids)} through the primary key and each row's expected attempt is
     * looked up by its position in the array. Two plan traps are avoided on purpose: joining an unnest of the
     * arrays (right after a burst, with stale statistics saying "1 running job", PostgreSQL nests the whole
     * array inside a scan of the running jobs: 4 s for 5,000 completions), and a {@code status = 'running'}
     * condition, which lets the planner walk every running job through jobs_lease_idx instead of probing the
     * ids (the lease already implies running: jobs_lease_only_while_running).
     *
     * <p>The same statement hands each finished head's ordering key to the key's oldest waiting job, so the
     * common path is one autocommit round trip and a key is never left headless between two statements.
     * Both updates run in one command: the finished head's row is already updated by this command when the
     * next job becomes head, so jobs_ordering_head_uidx sees one head at a time; the NOT EXISTS excludes the
     * rows finished here because the statement's snapshot still shows them as heads.
     */
    private static final String COMPLETE = """
            WITH input AS MATERIALIZED (
                SELECT ?::bigint[] AS ids, ?::integer[] AS attempts
            ), done AS (
                UPDATE jobs j
                SET status = 'succeeded', finished_at = now(), locked_by = NULL, locked_until = NULL,
                    key_head = false
                FROM input i
                WHERE j.id = ANY(i.ids) AND j.locked_by = ?
                  AND j.attempts = i.attempts[array_position(i.ids, j.id)]
                RETURNING j.id, j.tenant_id, j.ordering_key
            ), keys AS (
                SELECT DISTINCT tenant_id, ordering_key FROM done WHERE ordering_key IS NOT NULL
            ), promoted AS (
                UPDATE jobs n SET key_head = true
                FROM keys k
                WHERE n.id = (SELECT w.id FROM jobs w
                              WHERE w.tenant_id = k.tenant_id AND w.ordering_key = k.ordering_key
                                AND w.status = 'pending' AND NOT w.key_head
                              ORDER BY w.id LIMIT 1)
                  AND NOT EXISTS (SELECT 1 FROM jobs h
                                  WHERE h.tenant_id = k.tenant_id AND h.ordering_key = k.ordering_key
                                    AND h.key_head AND h.id NOT IN (SELECT id FROM done))
                RETURNING n.id
            )
            SELECT id FROM done
            """;

    /**
     * Failures, fenced like COMPLETE. A retry goes back to pending with run_at on the database clock and
     * failed_at stamped (the dashboard rollup counts retried failures per minute by it). A dead head keeps
     * its key blocked unless its queue says 'continue'.
     */
    private static final String FAIL = """
            WITH input AS MATERIALIZED (
                SELECT ?::boolean[] AS dead, ?::bigint[] AS delay_ms, ?::text[] AS error, ?::integer[] AS attempt,
                       ?::bigint[] AS ids
            ), f AS MATERIALIZED (
                SELECT j.id, i.dead[p.i] AS dead, i.delay_ms[p.i] AS delay_ms, i.error[p.i] AS error,
                       i.attempt[p.i] AS attempt
                FROM input i, jobs j, LATERAL (SELECT array_position(i.ids, j.id) AS i) p
                WHERE j.id = ANY(i.ids) AND j.locked_by = ?
            )
            UPDATE jobs j
            SET status = CASE WHEN f.dead THEN 'dead'::job_status ELSE 'pending'::job_status END,
                run_at = CASE WHEN f.dead THEN j.run_at ELSE now() + f.delay_ms * interval '1 millisecond' END,
                finished_at = CASE WHEN f.dead THEN now() END,
                failed_at = CASE WHEN f.dead THEN j.failed_at ELSE now() END,
                last_error = f.error, locked_by = NULL, locked_until = NULL,
                ready_rank = NULL, admitted_at = NULL,
                key_head = CASE WHEN f.dead AND (SELECT q.ordering_on_dead FROM queues q WHERE q.name = j.queue) = 'continue'
                                THEN false ELSE j.key_head END
            FROM f
            WHERE j.id = f.id AND j.attempts = f.attempt AND j.locked_by = ?
            RETURNING j.id, j.tenant_id, j.ordering_key, j.key_head
            """;

    /**
     * The head of a key finished (or gave up its turn): hand the turn to the oldest waiting job of the key,
     * unless the key already has a head again. Runs in the same transaction as the finish, so a key is
     * never left with waiting jobs and no head.
     */
    private static final String PROMOTE_NEXT = """
            UPDATE jobs j SET key_head = true
            FROM (SELECT DISTINCT tenant_id, ordering_key
                  FROM unnest(?::text[], ?::text[]) AS k(tenant_id, ordering_key)) k
            WHERE j.id = (SELECT w.id FROM jobs w
                          WHERE w.tenant_id = k.tenant_id AND w.ordering_key = k.ordering_key
                            AND w.status = 'pending' AND NOT w.key_head
                          ORDER BY w.id LIMIT 1)
              AND NOT EXISTS (SELECT 1 FROM jobs h
                              WHERE h.tenant_id = k.tenant_id AND h.ordering_key = k.ordering_key AND h.key_head)
            """;

    /**
     * Takes back jobs whose lease ran out (the worker died or stalled). The attempt already counted at the
     * claim; a job that has used all its attempts this way is dead, so a job that kills its workers cannot
     * loop forever. SKIP LOCKED lets several reapers run without waiting on each other.
     */
    private static final String REAP = """
            UPDATE jobs j
            SET status = CASE WHEN j.attempts >= j.max_attempts THEN 'dead'::job_status ELSE 'pending'::job_status END,
                finished_at = CASE WHEN j.attempts >= j.max_attempts THEN now() END,
                failed_at = CASE WHEN j.attempts >= j.max_attempts THEN j.failed_at ELSE now() END,
                last_error = 'lease expired: worker ' || j.locked_by || ' stopped renewing it during attempt ' || j.attempts,
                locked_by = NULL, locked_until = NULL, ready_rank = NULL, admitted_at = NULL,
                key_head = CASE WHEN j.attempts >= j.max_attempts
                                 AND (SELECT q.ordering_on_dead FROM queues q WHERE q.name = j.queue) = 'continue'
                                THEN false ELSE j.key_head END
            FROM (SELECT id FROM jobs WHERE status = 'running' AND locked_until < now()
                  ORDER BY locked_until LIMIT ? FOR UPDATE SKIP LOCKED) e
            WHERE j.id = e.id
            RETURNING j.id, j.tenant_id, j.ordering_key, j.key_head
            """;

    /** Claimed but never started (graceful shutdown): back to the front of ready, the attempt not counted. */
    private static final String RELEASE = """
            UPDATE jobs SET status = 'ready', locked_by = NULL, locked_until = NULL, started_at = NULL,
                            attempts = attempts - 1
            WHERE id = ANY(?::bigint[]) AND locked_by = ?
            """;

    public List<ClaimedJob> claim(DSLContext ctx, String workerId, int limit, Duration lease) {
        if (limit <= 0) return List.of();
        // Plain JDBC on the hottest path of a worker: materialising jOOQ records for the claimed rows was the
        // largest share of a worker's CPU per job (JFR over ./bench/run throughput).
        List<ClaimedJob> jobs = ctx.connectionResult(c -> {
            try (java.sql.PreparedStatement ps = c.prepareStatement(CLAIM)) {
                ps.setString(1, workerId);
                ps.setLong(2, lease.toMillis());
                ps.setInt(3, limit);
                List<ClaimedJob> out = new ArrayList<>(limit);
                try (java.sql.ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new ClaimedJob(rs.getLong(1), rs.getString(2), rs.getString(3), rs.getString(4),
                                rs.getString(5), rs.getInt(6), rs.getInt(7), rs.getString(8), rs.getString(9),
                                rs.getObject(10, java.time.OffsetDateTime.class),
                                rs.getObject(11, java.time.OffsetDateTime.class), rs.getDouble(12)));
                    }
                }
                return out;
            }
        });
        jobs.sort(java.util.Comparator.comparingDouble(ClaimedJob::readyRank).thenComparingLong(ClaimedJob::id));
        return jobs;
    }

    /**
     * A worker found the ready buffer empty while it had free threads: wake the scheduler now rather than at
     * its next timed tick, so the buffer is refilled on demand (the channel the scheduler listens on).
     */
    public void wakeScheduler(DSLContext ctx) {
        ctx.execute("SELECT pg_notify('fairq_jobs', 'drained')");
    }

    /** Extends the leases of the given jobs still held by the worker; returns the ids still held. */
    public Set<Long> heartbeat(DSLContext ctx, String workerId, int capacity, Set<Long> jobIds, Duration lease) {
        return new HashSet<>(ctx.resultQuery(HEARTBEAT, workerId, capacity, lease.toMillis(),
                jobIds.toArray(Long[]::new)).fetch(0, Long.class));
    }

    public void registerWorker(DSLContext ctx, String workerId, int capacity) {
        ctx.execute("INSERT INTO workers (id, capacity) VALUES (?, ?) "
                + "ON CONFLICT (id) DO UPDATE SET capacity = excluded.capacity, heartbeat_at = now()", workerId, capacity);
    }

    public void unregisterWorker(DSLContext ctx, String workerId) {
        ctx.execute("DELETE FROM workers WHERE id = ?", workerId);
    }

    /**
     * Records a batch of outcomes in one transaction (a statement for the successes, one for the failures,
     * one to hand ordering keys on). Returns the ids that were recorded; an id missing from the result had
     * lost its lease and was left alone.
     */
    public Set<Long> finish(DSLContext ctx, String workerId, List<? extends JobOutcome> outcomes) {
        if (outcomes.isEmpty()) return Set.of();
        List<JobOutcome.Succeeded> ok = new ArrayList<>();
        List<JobOutcome.Failed> failed = new ArrayList<>();
        for (JobOutcome o : outcomes) {
            if (o instanceof JobOutcome.Succeeded s) ok.add(s);
            else failed.add((JobOutcome.Failed) o);
        }
        if (failed.isEmpty()) return complete(ctx, workerId, ok); // the hot path: one statement
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Set<Long> recorded = complete(tx, workerId, ok);
            int n = failed.size();
            Long[] ids = new Long[n];
            Integer[] attempts = new Integer[n];
            Boolean[] dead = new Boolean[n];
            Long[] delays = new Long[n];
            String[] errors = new String[n];
            for (int i = 0; i < n; i++) {
                JobOutcome.Failed f = failed.get(i);
                ids[i] = f.jobId();
                attempts[i] = f.attempt();
                dead[i] = f.dead();
                delays[i] = Math.max(0, f.retryDelayMs());
                errors[i] = truncate(f.error(), 4000);
            }
            List<String[]> released = new ArrayList<>();
            for (Record r : tx.resultQuery(FAIL, dead, delays, errors, attempts, ids, workerId, workerId).fetch()) {
                recorded.add(r.get(0, Long.class));
                if (r.get(2) != null && !r.get(3, Boolean.class)) {
                    released.add(new String[]{r.get(1, String.class), r.get(2, String.class)});
                }
            }
            promoteNext(tx, released);
            return recorded;
        });
    }

    private static Set<Long> complete(DSLContext ctx, String workerId, List<JobOutcome.Succeeded> ok) {
        if (ok.isEmpty()) return new HashSet<>();
        Long[] ids = ok.stream().map(JobOutcome::jobId).toArray(Long[]::new);
        Integer[] attempts = ok.stream().map(JobOutcome::attempt).toArray(Integer[]::new);
        return new HashSet<>(ctx.resultQuery(COMPLETE, ids, attempts, workerId).fetch(0, Long.class));
    }

    /** Returns expired leases to pending (or dead), at most {@code limit}; returns how many. */
    public int reapExpired(DSLContext ctx, int limit) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Result<Record> rows = tx.resultQuery(REAP, limit).fetch();
            List<String[]> released = new ArrayList<>();
            for (Record r : rows) {
                if (r.get(2) != null && !r.get(3, Boolean.class)) {
                    released.add(new String[]{r.get(1, String.class), r.get(2, String.class)});
                }
            }
            promoteNext(tx, released);
            if (!rows.isEmpty()) log.warn("reaped {} jobs whose lease expired", rows.size());
            return rows.size();
        });
    }

    public int release(DSLContext ctx, String workerId, List<Long> jobIds) {
        if (jobIds.isEmpty()) return 0;
        return ctx.execute(RELEASE, jobIds.toArray(Long[]::new), workerId);
    }

    private static void promoteNext(DSLContext tx, List<String[]> keys) {
        if (keys.isEmpty()) return;
        String[] tenants = keys.stream().map(k -> k[0]).toArray(String[]::new);
        String[] orderingKeys = keys.stream().map(k -> k[1]).toArray(String[]::new);
        tx.execute(PROMOTE_NEXT, tenants, orderingKeys);
    }

    // ---------------------------------------------------------------------------------------------------
    // Look-up and operator actions
    // ---------------------------------------------------------------------------------------------------

    public Optional<JobsRecord> find(DSLContext ctx, long id) {
        return ctx.selectFrom(JOBS).where(JOBS.ID.eq(id)).fetchOptional();
    }

    /** A tenant's own job; another tenant's id is simply not found. */
    public Optional<JobsRecord> find(DSLContext ctx, String tenantId, long id) {
        return ctx.selectFrom(JOBS).where(JOBS.ID.eq(id).and(JOBS.TENANT_ID.eq(tenantId))).fetchOptional();
    }

    /** What an operator action did. */
    public enum ActionResult { DONE, NOT_FOUND, WRONG_STATUS }

    /**
     * An operator action's result and the job as that action's transaction left it (null when not found).
     * Read inside the transaction: a worker may claim a replayed job the moment it commits, and the caller's
     * answer must describe what the action did, not what happened next.
     */
    public record ActionOutcome(ActionResult result, JobsRecord job) {}

    /**
     * pending or ready -> cancelled. A cancelled head hands its key on. {@code tenantId} null means any
     * tenant (admin).
     */
    public ActionOutcome cancel(DSLContext ctx, String tenantId, long id) {
        return act(ctx, tenantId, id, Set.of(JobStatus.pending, JobStatus.ready), (tx, j) -> {
            tx.update(JOBS).set(JOBS.STATUS, JobStatus.cancelled).set(JOBS.FINISHED_AT, org.jooq.impl.DSL.currentOffsetDateTime())
                    .set(JOBS.KEY_HEAD, false).set(JOBS.READY_RANK, (Double) null)
                    .where(JOBS.ID.eq(id)).execute();
            if (j.getKeyHead()) promoteNext(tx, List.<String[]>of(new String[]{j.getTenantId(), j.getOrderingKey()}));
        });
    }

    /**
     * dead or cancelled -> pending, attempts reset, due now. A job that is not its key's head takes the head
     * if the key has none, otherwise it waits its turn (by id, so it goes next).
     */
    public ActionOutcome replay(DSLContext ctx, String tenantId, long id) {
        return act(ctx, tenantId, id, Set.of(JobStatus.dead, JobStatus.cancelled), (tx, j) -> {
            boolean head = j.getKeyHead();
            if (!head && j.getOrderingKey() != null) {
                // A concurrent enqueue that takes the head between this check and the update makes the
                // update fail on jobs_ordering_head_uidx: an error for the caller, never two heads.
                head = !tx.fetchExists(JOBS, JOBS.TENANT_ID.eq(j.getTenantId())
                        .and(JOBS.ORDERING_KEY.eq(j.getOrderingKey())).and(JOBS.KEY_HEAD));
            }
            tx.update(JOBS).set(JOBS.STATUS, JobStatus.pending).set(JOBS.ATTEMPTS, 0)
                    .set(JOBS.RUN_AT, org.jooq.impl.DSL.currentOffsetDateTime())
                    .set(JOBS.FINISHED_AT, (java.time.OffsetDateTime) null)
                    .set(JOBS.KEY_HEAD, head)
                    .where(JOBS.ID.eq(id)).execute();
            tx.execute("SELECT pg_notify('fairq_jobs', '')");
        });
    }

    /** dead -> cancelled (kept for the record); a dead head that blocked its key hands the key on. */
    public ActionOutcome discard(DSLContext ctx, String tenantId, long id) {
        return act(ctx, tenantId, id, Set.of(JobStatus.dead), (tx, j) -> {
            tx.update(JOBS).set(JOBS.STATUS, JobStatus.cancelled).set(JOBS.KEY_HEAD, false)
                    .where(JOBS.ID.eq(id)).execute();
            if (j.getKeyHead()) promoteNext(tx, List.<String[]>of(new String[]{j.getTenantId(), j.getOrderingKey()}));
        });
    }

    /**
     * An operator action in one transaction: lock the job (the tenant's own, or any with a null tenant),
     * check its status, apply the change.
     */
    private static ActionOutcome act(DSLContext ctx, String tenantId, long id, Set<JobStatus> allowed,
                                     java.util.function.BiConsumer<DSLContext, JobsRecord> change) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Optional<JobsRecord> job = lockForAction(tx, tenantId, id);
            if (job.isEmpty()) return new ActionOutcome(ActionResult.NOT_FOUND, null);
            if (!allowed.contains(job.get().getStatus())) return new ActionOutcome(ActionResult.WRONG_STATUS, job.get());
            change.accept(tx, job.get());
            return new ActionOutcome(ActionResult.DONE, tx.selectFrom(JOBS).where(JOBS.ID.eq(id)).fetchOne());
        });
    }

    private static Optional<JobsRecord> lockForAction(DSLContext tx, String tenantId, long id) {
        var condition = JOBS.ID.eq(id);
        if (tenantId != null) condition = condition.and(JOBS.TENANT_ID.eq(tenantId));
        return tx.selectFrom(JOBS).where(condition).forUpdate().fetchOptional();
    }

    // ---------------------------------------------------------------------------------------------------
    // The active scheduler's published state (for explain in any process)
    // ---------------------------------------------------------------------------------------------------

    /** One tenant's scheduler state. {@code nextTokenInMs} 0 when a token is available. */
    public record SchedulerTenantState(String tenantId, double tokensAvailable, long nextTokenInMs, double pass,
                                       Integer position, int competing, java.time.OffsetDateTime nextTokenAt,
                                       java.time.OffsetDateTime updatedAt) {}

    /** All tenants in one statement (upsert from arrays); the scheduler calls it at most once a second. */
    private static final String PUBLISH_STATE = """
            INSERT INTO scheduler_tenant_state AS s (tenant_id, tokens_available, next_token_at, pass, position,
                                                     competing, updated_at)
            SELECT u.tenant_id, u.tokens, now() + u.next_ms * interval '1 millisecond', u.pass, u.position,
                   u.competing, now()
            FROM unnest(?::text[], ?::float8[], ?::bigint[], ?::float8[], ?::integer[], ?::integer[])
                 AS u(tenant_id, tokens, next_ms, pass, position, competing)
            WHERE EXISTS (SELECT 1 FROM tenants t WHERE t.id = u.tenant_id)
            ON CONFLICT (tenant_id) DO UPDATE
            SET tokens_available = excluded.tokens_available, next_token_at = excluded.next_token_at,
                pass = excluded.pass, position = excluded.position, competing = excluded.competing,
                updated_at = excluded.updated_at
            """;

    public void publishSchedulerState(DSLContext ctx, List<SchedulerTenantState> states) {
        if (states.isEmpty()) return;
        int n = states.size();
        String[] ids = new String[n];
        Double[] tokens = new Double[n], pass = new Double[n];
        Long[] next = new Long[n];
        Integer[] position = new Integer[n], competing = new Integer[n];
        for (int i = 0; i < n; i++) {
            SchedulerTenantState s = states.get(i);
            ids[i] = s.tenantId();
            tokens[i] = s.tokensAvailable();
            next[i] = s.nextTokenInMs();
            pass[i] = s.pass();
            position[i] = s.position();
            competing[i] = s.competing();
        }
        ctx.execute(PUBLISH_STATE, ids, tokens, next, pass, position, competing);
    }

    public Optional<SchedulerTenantState> schedulerState(DSLContext ctx, String tenantId) {
        return ctx.resultQuery("""
                SELECT tenant_id, tokens_available, pass, position, competing, next_token_at, updated_at,
                       greatest(0, (fairq_epoch(next_token_at) - fairq_epoch(now())) * 1000)
                FROM scheduler_tenant_state WHERE tenant_id = ?""", tenantId).fetchOptional()
                .map(r -> new SchedulerTenantState(r.get(0, String.class), r.get(1, Double.class),
                        Math.round(r.get(7, Double.class) == null ? 0 : r.get(7, Double.class)), r.get(2, Double.class),
                        r.get(3, Integer.class), r.get(4, Integer.class), r.get(5, java.time.OffsetDateTime.class),
                        r.get(6, java.time.OffsetDateTime.class)));
    }

    // ---------------------------------------------------------------------------------------------------
    // Retention
    // ---------------------------------------------------------------------------------------------------

    /**
     * Deletes finished jobs older than their retention, a bounded batch at a time so that no statement holds
     * many row locks or runs long. Dead jobs are kept longer (they are the dead-letter queue), and a dead
     * head is never deleted: it blocks its key until someone replays or discards it. Each tenant and status
     * is one range of jobs_tenant_finished_idx (tenant_id, status, finished_at), which the dashboards need
     * anyway: a finished-time index of its own would cost every completion one more index entry.
     */
    private static final String DELETE_FINISHED = """
            DELETE FROM jobs WHERE id IN (
                SELECT old.id
                FROM tenants t
                CROSS JOIN (VALUES ('succeeded'::job_status, ?::bigint), ('cancelled', ?), ('dead', ?)) AS r(status, keep_ms)
                CROSS JOIN LATERAL (
                    SELECT j.id FROM jobs j
                    WHERE j.tenant_id = t.id AND j.status = r.status AND j.finished_at IS NOT NULL
                      AND j.finished_at < now() - r.keep_ms * interval '1 millisecond' AND NOT j.key_head
                    LIMIT ?) old
                LIMIT ?)
            """;

    public int deleteFinished(DSLContext ctx, Duration retention, Duration deadRetention, int batch) {
        return ctx.execute(DELETE_FINISHED, retention.toMillis(), retention.toMillis(), deadRetention.toMillis(),
                batch, batch);
    }

    private static String truncate(String s, int max) {
        if (s == null) return null;
        return s.length() <= max ? s : s.substring(0, max);
    }
}

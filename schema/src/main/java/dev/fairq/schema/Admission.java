package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Admission, the scheduler's side of the queue: what a tick reads (the load), the candidates of the tenants
 * it may serve, the statement that moves the chosen jobs to ready, and admission grants. Every statement here
 * runs on the active scheduler's lock connection (the fence; see SchedulerService).
 */
public final class Admission {
    /**
     * The highest sort_key a job due at :now can have. jobs.sort_key is {@code fairq_epoch(run_at) / 10.0 - priority}
     * (V1), so run_at <= :now and priority >= {@link JobRequest#MIN_PRIORITY} put a due job at or below this, written
     * the column's way so that one at the edge compares equal. A read of due jobs in sort_key order stops here
     * instead of walking every delayed job behind them (DelayedBacklogTest): the candidate read, the key grants',
     * the enqueue's and explain's key probes. A compile-time constant, so using it initialises nothing.
     */
    static final String DUE_SORT_KEY_BOUND = "j.sort_key <= fairq_epoch(:now) / 10.0 - (" + JobRequest.MIN_PRIORITY + ")";

    /**
     * Per tenant, its next admissible due jobs in aging order, for the tenants the scheduler names with how
     * many it may take from each, read per <i>lane</i>. Jobs with neither a concurrency nor a fairness key: one
     * index probe per named tenant on jobs_admit_idx. The others: a loose index scan of jobs_admit_key_idx finds
     * the tenant's lanes, (fairness key, concurrency key) pairs with jobs waiting ('' for none; one probe per lane,
     * none per job), and each lane is read at most up to:
     * <ul>
     *   <li>the tenant's limit;</li>
     *   <li>its concurrency key's room, the key's limit minus its jobs ready or running ({@code :key_*}, from the
     *       scheduler; a key not named is unlimited). A full key (room 0) is not read at all: however deep its
     *       backlog, it costs the round one probe and holds back neither the tenant's other lanes nor anyone
     *       else (no head-of-line blocking);</li>
     *   <li>twice the tenant's limit over its lanes (at least 2), so that a tenant with thousands of fairness
     *       keys reads about twice what a round can take, not a limit's worth per key. Such a lane says it was
     *       cut ({@code capped}): the scheduler keeps the aging order exact by not passing its last job.</li>
     * </ul>
     * Parked jobs (no live worker can run them: routing, V11) are in neither index and never read. Each row
     * carries the job's queue and type, so that the scheduler can park those no live worker serves.
     * A tenant the scheduler knows to have no keyed jobs ({@code :keyed} false) skips the lane probe: with
     * 10,000 tenants draining, each picked for one job a round, it doubled the statement's index probes. A
     * tenant probed whose probe found no lane comes back as one row with lane -1 and no job: the scheduler
     * then skips its probe until a wake-up, a timer or a rescan names the tenant again (every way a keyed job
     * becomes pending names its tenant: the enqueue trigger, retries, snoozes, key hand-offs, reaps, replays).
     * Cost: the tenants with room plus their lanes with waiting jobs, never the backlog. Each read stops at the
     * highest sort_key a due job can have (run_at now, priority -100): without that bound a lane holding fewer due
     * jobs than it was asked for walked every delayed job behind them, at every round (40,004 index entries for a
     * tenant with 2 due jobs and 40,000 due tomorrow, DelayedBacklogTest; the same bound in the key probes of
     * GRANT_KEYS, the enqueue and explain). The lane probe walks jobs_lanes_idx, which leaves out keyed jobs
     * written to wait ({@code not_due}, V20) until LOAD sees them due: a lane whose jobs were all
     * not due yet cost its probe at every round (10,000 customers with a reminder for tomorrow: about 50 ms a round).
     */
    static final NamedSql CANDIDATES = NamedSql.of("""
            WITH RECURSIVE req AS MATERIALIZED (
                SELECT * FROM unnest(:tenant_ids::text[], :limits::integer[], :keyed::boolean[]) AS l(tenant_id, lim, keyed)
            ), rooms AS MATERIALIZED (
                SELECT * FROM unnest(:key_tenants::text[], :key_names::text[], :key_rooms::integer[])
                    AS k(tenant_id, ckey, room)
            ), lanes(tenant_id, lim, fk, ck) AS (
                SELECT r.tenant_id, r.lim, f.fk, f.ck
                FROM req r LEFT JOIN LATERAL (
                    SELECT coalesce(j.fairness_key, '') AS fk, coalesce(j.concurrency_key, '') AS ck FROM jobs j
                    WHERE j.tenant_id = r.tenant_id AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                      AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL) AND j.no_worker_since IS NULL
                      AND NOT j.not_due
                    ORDER BY coalesce(j.fairness_key, ''), coalesce(j.concurrency_key, '') LIMIT 1
                ) f ON true
                WHERE r.keyed
                UNION ALL
                SELECT l.tenant_id, l.lim, f.fk, f.ck
                FROM lanes l CROSS JOIN LATERAL (
                    SELECT coalesce(j.fairness_key, '') AS fk, coalesce(j.concurrency_key, '') AS ck FROM jobs j
                    WHERE j.tenant_id = l.tenant_id AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                      AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL) AND j.no_worker_since IS NULL
                      AND NOT j.not_due AND (coalesce(j.fairness_key, ''), coalesce(j.concurrency_key, '')) > (l.fk, l.ck)
                    ORDER BY coalesce(j.fairness_key, ''), coalesce(j.concurrency_key, '') LIMIT 1
                ) f
                WHERE l.fk IS NOT NULL
            ), sized AS MATERIALIZED (
                SELECT l.tenant_id, l.fk, l.ck, least(l.lim, coalesce(k.room, l.lim)) AS lane_limit,
                       greatest(2, ceil(2.0 * l.lim / count(*) OVER (PARTITION BY l.tenant_id)))::integer AS cap
                FROM lanes l LEFT JOIN rooms k ON k.tenant_id = l.tenant_id AND k.ckey = l.ck
                WHERE l.fk IS NOT NULL
            )
            SELECT r.tenant_id, c.id, c.sort_key, c.queue, c.type, NULL::text AS ckey, NULL::text AS fkey,
                   false AS capped, 0 AS lane
            FROM req r CROSS JOIN LATERAL (
                SELECT j.id, j.sort_key, j.queue, j.type FROM jobs j
                WHERE j.tenant_id = r.tenant_id AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                  AND j.concurrency_key IS NULL AND j.fairness_key IS NULL AND j.no_worker_since IS NULL
                  AND j.run_at <= :now AND {due_bound}
                ORDER BY j.sort_key, j.id
                LIMIT r.lim
            ) c
            UNION ALL
            SELECT s.tenant_id, c.id, c.sort_key, c.queue, c.type, nullif(s.ck, ''), nullif(s.fk, ''),
                   s.cap < s.lane_limit AND count(*) OVER w = s.cap, dense_rank() OVER (ORDER BY s.tenant_id, s.fk, s.ck)
            FROM sized s CROSS JOIN LATERAL (
                SELECT j.id, j.sort_key, j.queue, j.type FROM jobs j
                WHERE j.tenant_id = s.tenant_id AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                  AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL) AND j.no_worker_since IS NULL
                  AND coalesce(j.fairness_key, '') = s.fk AND coalesce(j.concurrency_key, '') = s.ck
                  AND j.run_at <= :now AND {due_bound}
                ORDER BY j.sort_key, j.id
                LIMIT least(s.lane_limit, s.cap)
            ) c
            WHERE s.lane_limit > 0
            WINDOW w AS (PARTITION BY s.tenant_id, s.fk, s.ck)
            UNION ALL
            SELECT l.tenant_id, NULL, NULL, NULL, NULL, NULL, NULL, false, -1 FROM lanes l WHERE l.fk IS NULL
            """.replace("{due_bound}", DUE_SORT_KEY_BOUND));

    /**
     * Moves the chosen jobs to ready in one statement, each with the rank (start tag) the scheduler gave it;
     * workers claim in rank order. The status re-check makes a job cancelled meanwhile simply drop out.
     * pg_notify wakes idle workers; PostgreSQL delivers it at commit and folds duplicates into one.
     *
     * <p>The arrays go through a one-row MATERIALIZED CTE so that they are parsed once per statement. Arrays
     * are bound as text plus a cast, and in a generic (prepared) plan a cast written inside a per-row
     * expression is evaluated for every row: that parsing made this statement cost 55 µs per job instead of
     * 7 (see bench/RESULTS.md). COMPLETE and FAIL use the same shape for the same reason.
     */
    private static final String ADMIT_TEXT = """
            WITH picks AS MATERIALIZED (
                SELECT :ranks::double precision[] AS ranks, :ids::bigint[] AS ids
            ), admitted AS (
                UPDATE jobs j
                SET status = 'ready', admitted_at = :now, ready_rank = p.ranks[array_position(p.ids, j.id)]
                FROM picks p
                WHERE j.id = ANY(p.ids) AND j.status = 'pending'
                RETURNING j.id, j.tenant_id
            )
            SELECT admitted.id, admitted.tenant_id, pg_notify('fairq_ready', '')
            FROM admitted
            """;
    static final NamedSql ADMIT = NamedSql.of(ADMIT_TEXT);

    /** ADMIT without the wake-up, for a caller that sends it once the statement committed, off its thread ({@link Waker}). */
    static final NamedSql ADMIT_QUIETLY = NamedSql.of(NamedSql.variant(ADMIT_TEXT, ", pg_notify('fairq_ready', '')", ""));

    /** LOAD's branch that reads the unused tenant grants (left out by {@link #LOAD_WITHOUT_GRANTS}). */
    private static final String GRANT_BRANCH = """
            UNION ALL
            SELECT 'grant', tenant_id, extract(epoch FROM :now - granted_at)::double precision, slot::text, NULL, NULL, NULL,
                   NULL, NULL
            FROM admission_grants WHERE used_at IS NULL
            """;

    /**
     * Everything a tick needs to know, in one round trip: ready and running counts per tenant, the live
     * worker capacity, the lowest and highest rank in the ready buffer, and the grants. One branch per status
     * so each is served by its own small partial index (a single "status IN (...)" is planned as a scan of
     * the whole table). Its cost follows the ready buffer, the running jobs and the grants, all bounded by the
     * worker capacity: which tenants have work waiting is not read here but kept in the scheduler's memory
 * (wake-ups name the tenant; {@link #TENANTS_WITH_WORK} rebuilds it). The ready jobs are counted per
     * queue and type too (the same rows, grouped finer), so that jobs no live worker can run are found in the
     * buffer (routing: a job inserted ready by a grant, or the buffer of a worker that died). Ready and running
     * jobs are counted per concurrency key as well (grouped finer again): the scheduler is the only one that
     * makes a job with a concurrency key ready (such a job never takes a grant of either kind), so these counts,
     * read at the start of every tick by the leader that then admits on the same fenced connection, can only fall before its
     * admission commits. That makes the key limits exact, across failovers too: nothing about them lives only
     * in memory.
     *
     * <p>The used grants are read in index order (the ORDER BY): a plain index scan marks the entries of rows gone
     * since the last vacuum dead, and the next scan skips them, where a bitmap scan (the planner's choice without the
     * ORDER BY) visited every grant used and cleared in the last 10 s at every tick: LOAD cost 2.05 ms a tick against
     * 0.65 ms without the branch in the tenants bench's trickle (PostgreSQL 15, pg_stat_statements), 0.21 against 0.03
     * ms for the branch alone after 1,000 grants used and cleared (EXPLAIN ANALYZE, the second scan).
     *
     * <p>The lowest rank is read by ORDER BY ... LIMIT 1, not min(): the ready buffer looks empty to the planner
     * between analyses, and min() was then planned as an aggregate over the whole of jobs_claim_idx, dead entries
     * of claimed jobs included: 5-8 ms of every tick (measured with EXPLAIN ANALYZE during the tenants bench's
     * 10,000-tenant drain, where that was most of the statement).
     *
     * <p>LOAD also moves the keyed jobs written to wait (not_due: enqueued for later, retried or snoozed with a delay,
     * V20) that are due now into their lanes, at most {@link #PROMOTE_PER_LOAD}, oldest due first, and returns their
     * tenants ('promoted'), which may have work now. Through jobs_not_due_idx (run_at): a tick costs the jobs coming
     * due, one index probe when none is. It was a statement of its own, run every 10 ms: a round trip that took 1-7 ms
     * of the scheduler's thread on the loaded 2-core machine (the statement itself 0.06 ms), 5-20% of the tick loop
     * in the tenants bench's drains (per-step timing, bench/RESULTS.md stop 52). SKIP LOCKED: a row someone is
     * cancelling right now is taken at the next tick. The rows are locked by the inner read, so the update needs no
     * condition but their ids: with {@code AND j.not_due} it was planned as a walk of the whole jobs_not_due_idx
     * filtering the ids (every job waiting, at every tick), not as primary key probes. The branches that read jobs
     * see the snapshot from before the update, which changes no column they read.
     */
    private static final String LOAD_TEXT = """
            WITH promoted AS (
                UPDATE jobs j SET not_due = false
                WHERE j.id = ANY(ARRAY(SELECT d.id FROM jobs d WHERE d.not_due AND d.status = 'pending' AND d.run_at <= :now
                                       ORDER BY d.run_at LIMIT {promote_limit} FOR UPDATE SKIP LOCKED))
                RETURNING j.tenant_id
            )
            SELECT 'ready' AS what, tenant_id, count(*)::double precision AS n, queue, type, concurrency_key, fairness_key,
                   max(ready_rank) AS last_rank, min(ready_rank) FILTER (WHERE ready_rank > '-Infinity') AS first_rank
            FROM jobs WHERE status = 'ready' GROUP BY tenant_id, queue, type, concurrency_key, fairness_key
            UNION ALL
            SELECT 'running', tenant_id, count(*), NULL, NULL, concurrency_key, NULL, NULL, NULL FROM jobs
            WHERE status = 'running' GROUP BY tenant_id, concurrency_key
            UNION ALL
            SELECT 'capacity', NULL, coalesce(sum(capacity), 0), NULL, NULL, NULL, NULL, NULL, NULL FROM workers
            WHERE heartbeat_at > :now - :liveness_ms * interval '1 millisecond'
            UNION ALL
            SELECT 'next_rank', NULL, (SELECT ready_rank FROM jobs WHERE status = 'ready' AND ready_rank > '-Infinity'
                                       ORDER BY ready_rank LIMIT 1), NULL, NULL, NULL, NULL, NULL, NULL
            UNION ALL
            SELECT 'last_rank', NULL, (SELECT max(ready_rank) FROM jobs WHERE status = 'ready'), NULL, NULL, NULL, NULL, NULL, NULL
            UNION ALL
            SELECT 'grant', tenant_id, extract(epoch FROM :now - granted_at)::double precision, slot::text, NULL, NULL, NULL,
                   NULL, NULL
            FROM admission_grants WHERE used_at IS NULL
            UNION ALL
            SELECT 'used_grant', u.tenant_id, NULL, u.slot::text, NULL, NULL, NULL, NULL, NULL
            FROM (SELECT tenant_id, slot FROM admission_grants WHERE used_at IS NOT NULL ORDER BY tenant_id) u
            UNION ALL
            SELECT 'key_grant', tenant_id, extract(epoch FROM :now - granted_at)::double precision, slot::text, NULL, NULL,
                   fairness_key, NULL, NULL
            FROM key_grants
            UNION ALL
            SELECT 'promoted', tenant_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM promoted GROUP BY tenant_id
            """.replace("{promote_limit}", Integer.toString(Admission.PROMOTE_PER_LOAD));
    static final NamedSql LOAD = NamedSql.of(LOAD_TEXT);

    /**
     * The most keyed jobs one LOAD moves into their lanes as they come due, the rest at the next tick: 100,000
     * reminders due at 09:00 take 20 ticks.
     */
    static final int PROMOTE_PER_LOAD = 5_000;

    /**
     * LOAD without the unused tenant grants, for the ticks between two reads of them: the scheduler keeps them in
     * memory meanwhile (it alone makes and takes back unused grants; see Scheduler#GRANT_READ_EVERY_NANOS), and every
     * LOAD reads the used ones (V15's partial index: the grants taken since they were last cleared, a row or two a
     * tick). Every unused grant is a row of LOAD: with the tenants bench's 1,000 trickling tenants each holding one,
     * LOAD took 3.1 ms of PostgreSQL 15 with them and 0.5 ms without (pgbench, the statement as the scheduler runs
     * it), and the scheduler's thread spent most of a tick decoding and hashing them, at 130 ticks a second.
     */
    static final NamedSql LOAD_WITHOUT_GRANTS = NamedSql.of(NamedSql.variant(LOAD_TEXT, GRANT_BRANCH, ""));

    /**
     * The tenants with admissible pending jobs, due or not: a loose index scan over jobs_admit_idx and one over
     * jobs_admit_key_idx (jobs with a concurrency or fairness key), one probe
     * per distinct tenant (never a walk of the backlog, never the tenants table). The scheduler reads it when
     * it becomes the leader and, as a safety net, every few seconds; between those its wake-ups keep it
     * current. Cost: the tenants that have work, not those that exist.
     */
    static final NamedSql TENANTS_WITH_WORK = NamedSql.of("""
            WITH RECURSIVE with_work(tenant_id) AS (
                (SELECT tenant_id FROM jobs
                 WHERE status = 'pending' AND (ordering_key IS NULL OR key_head) AND no_worker_since IS NULL
                   AND concurrency_key IS NULL AND fairness_key IS NULL
                 ORDER BY tenant_id LIMIT 1)
                UNION ALL
                SELECT (SELECT j.tenant_id FROM jobs j
                        WHERE j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                          AND j.no_worker_since IS NULL AND j.concurrency_key IS NULL AND j.fairness_key IS NULL
                          AND j.tenant_id > w.tenant_id
                        ORDER BY j.tenant_id LIMIT 1)
                FROM with_work w WHERE w.tenant_id IS NOT NULL
            ), with_keyed_work(tenant_id) AS (
                (SELECT tenant_id FROM jobs
                 WHERE status = 'pending' AND (ordering_key IS NULL OR key_head) AND no_worker_since IS NULL
                   AND (concurrency_key IS NOT NULL OR fairness_key IS NOT NULL)
                 ORDER BY tenant_id LIMIT 1)
                UNION ALL
                SELECT (SELECT j.tenant_id FROM jobs j
                        WHERE j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head) AND j.no_worker_since IS NULL
                          AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL) AND j.tenant_id > w.tenant_id
                        ORDER BY j.tenant_id LIMIT 1)
                FROM with_keyed_work w WHERE w.tenant_id IS NOT NULL
            )
            SELECT tenant_id FROM with_work WHERE tenant_id IS NOT NULL
            UNION
            SELECT tenant_id FROM with_keyed_work WHERE tenant_id IS NOT NULL
            """);

    /**
     * For tenants that have nothing due now, how long until their next admissible job is due (null: none
     * waits). One probe of jobs_due_later_idx per tenant: only delayed, scheduled and retried jobs are in it, parked
     * ones left out (V21: each probe had walked them all).
     * A job that came due between the candidate probe and this one (a 10 ms retry) is not left out: its
     * negative wait becomes a timer of 0 (it used to drop out of the active set until the minute's rescan). The
     * jobs the round is admitting are left out by id (they are still pending at this point).
     */
    static final NamedSql NEXT_DUE = NamedSql.of("""
            SELECT t.tenant_id,
                   (SELECT (fairq_epoch(min(j.run_at)) - fairq_epoch(:now)) * 1000 FROM jobs j
                    WHERE j.tenant_id = t.tenant_id AND j.status = 'pending' AND j.run_at > j.created_at
                      AND (j.ordering_key IS NULL OR j.key_head) AND j.no_worker_since IS NULL
                      AND j.id <> ALL(:picked_ids::bigint[]))
            FROM unnest(:tenant_ids::text[]) AS t(tenant_id)
            """);

    /** A paused tenant's admitted jobs go back to pending, so that pausing stops starts at once. */
    static final NamedSql UNADMIT_PAUSED = NamedSql.of("""
            UPDATE jobs SET status = 'pending', ready_rank = NULL, admitted_at = NULL
            WHERE status = 'ready' AND tenant_id = ANY(:tenant_ids::text[])
            """);

    /**
     * Grants admissions in advance, one per (tenant, slot) pair (see Enqueue.INSERT_JOBS, V16 for the spare slot), and
     * deletes the used grants (V15) of :spent, the ones the tick's LOAD read, that it does not grant again. The
     * scheduler only grants slots the last LOAD showed without an unused grant, and it alone makes grants: a slot's
     * row is either absent, or used (committed: no enqueue locks a used row), which becomes a grant again in place. So ON
     * CONFLICT never meets a row an enqueue is taking, and no enqueue makes the tick wait.
     */
    static final NamedSql GRANT = NamedSql.of("""
            WITH granting AS (
                SELECT * FROM unnest(:tenant_ids::text[], :slots::integer[]) AS g(t, s)
            ), spent AS (
                DELETE FROM admission_grants a
                USING unnest(:spent::text[], :spent_slots::integer[]) AS x(t, s)
                WHERE a.tenant_id = x.t AND a.slot = x.s AND a.used_at IS NOT NULL
                  AND NOT EXISTS (SELECT 1 FROM granting g WHERE g.t = x.t AND g.s = x.s)
            )
            INSERT INTO admission_grants (tenant_id, slot, granted_at)
            SELECT t, s, :now FROM granting
            WHERE EXISTS (SELECT 1 FROM tenants WHERE id = t) -- a tenant deleted meanwhile gets none
            ON CONFLICT (tenant_id, slot) DO UPDATE SET granted_at = excluded.granted_at, used_at = NULL
                WHERE admission_grants.used_at IS NOT NULL
            RETURNING tenant_id, slot
            """);

    /**
     * Grants fairness keys of busy tenants one admission in advance each, at the given ranks, at most :most a tenant
     * in the order given (V13__key_grants.sql, Enqueue.INSERT_JOBS), each only if none of the key's due jobs waits (one probe of jobs_admit_key_idx, as the
     * enqueue that would use it checks): the round's read cannot tell a key whose one job it admitted from one
     * with more behind it when it asked for one. As for GRANT, the scheduler grants only pairs the last LOAD
     * showed without one.
     */
    static final NamedSql GRANT_KEYS = NamedSql.of("""
            INSERT INTO key_grants (tenant_id, fairness_key, slot, ready_rank, granted_at)
            SELECT q.t, q.k, q.s, q.r, :now
            FROM (SELECT g.t, g.k, g.s, g.r, g.m, row_number() OVER (PARTITION BY g.t ORDER BY g.o) AS n
                  FROM unnest(:tenant_ids::text[], :keys::text[], :slots::integer[], :ranks::double precision[],
                              :most::integer[]) WITH ORDINALITY AS g(t, k, s, r, m, o)
                  -- scalar subqueries, so one probe per key asked for: as joins, the window's order with sorts ruled
                  -- out was had from a walk of the whole tenants table, and with stale statistics the jobs probe
                  -- became one read of every tenant's due keyed jobs
                  WHERE (SELECT EXISTS (SELECT 1 FROM tenants WHERE id = g.t)) -- a tenant deleted meanwhile gets none
                    AND NOT (SELECT EXISTS (SELECT 1 FROM jobs j
                                            WHERE j.tenant_id = g.t AND coalesce(j.fairness_key, '') = g.k
                                              AND j.status = 'pending' AND (j.ordering_key IS NULL OR j.key_head)
                                              AND j.no_worker_since IS NULL AND j.run_at <= :now
                                              AND {due_bound}
                                              AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL)))) q
            WHERE q.n <= q.m -- at most the tenant's room among its keys that passed
            ON CONFLICT (tenant_id, fairness_key, slot) DO NOTHING
            RETURNING tenant_id, fairness_key, slot
            """.replace("{due_bound}", DUE_SORT_KEY_BOUND));

    /** Takes key grants back, SKIP LOCKED as REVOKE_GRANTS. */
    static final NamedSql REVOKE_KEY_GRANTS = NamedSql.of("""
            DELETE FROM key_grants
            WHERE (tenant_id, fairness_key, slot) IN (
                SELECT k.tenant_id, k.fairness_key, k.slot FROM key_grants k
                WHERE (k.tenant_id, k.fairness_key, k.slot) IN (
                    SELECT * FROM unnest(:tenant_ids::text[], :keys::text[], :slots::integer[]))
                FOR UPDATE SKIP LOCKED)
            RETURNING tenant_id, fairness_key, slot
            """);

    /** Takes grants back. SKIP LOCKED: a grant an enqueue is taking right now is left to that enqueue. */
    static final NamedSql REVOKE_GRANTS = NamedSql.of("""
            DELETE FROM admission_grants
            WHERE (tenant_id, slot) IN (SELECT a.tenant_id, a.slot FROM admission_grants a
                                        WHERE (a.tenant_id, a.slot) IN (
                                                  SELECT * FROM unnest(:tenant_ids::text[], :slots::integer[]))
                                          AND a.used_at IS NULL
                                        FOR UPDATE SKIP LOCKED)
            RETURNING tenant_id, slot
            """);

    /**
     * Routing: parks pending jobs no live worker can run (they leave jobs_admit_idx, so no probe walks them
     * again; explain says no_worker). The status re-check leaves a job that moved on meanwhile alone.
     */
    static final NamedSql PARK = NamedSql.of("""
            UPDATE jobs SET no_worker_since = :now
            WHERE id = ANY(:ids::bigint[]) AND status = 'pending' AND no_worker_since IS NULL
            """);

    /**
     * Routing: ready jobs of (tenant, queue, type) groups no live worker can run go back to pending, parked
     * (a grant put them there, or the only worker serving them died). The buffer is small; this runs only for
     * the groups LOAD found unroutable.
     */
    static final NamedSql UNADMIT_UNROUTABLE = NamedSql.of("""
            UPDATE jobs j SET status = 'pending', ready_rank = NULL, admitted_at = NULL, no_worker_since = :now
            FROM unnest(:tenant_ids::text[], :queues::text[], :types::text[]) AS g(tenant_id, queue, type)
            WHERE j.status = 'ready' AND j.tenant_id = g.tenant_id AND j.queue = g.queue AND j.type = g.type
            """);

    /**
     * Routing: un-parks a batch of parked jobs that a live worker can now run (the routes are given as pairs,
     * a NULL queue or type meaning any), through jobs_no_worker_idx one range per type when no route takes
     * every type. Returns each un-parked job's tenant, which becomes work for the scheduler again. Runs only
     * when the live routes changed, so its cost is the parked jobs of the routes that came, once.
     */
    static final NamedSql UNPARK = NamedSql.of("""
            WITH picked AS (
                SELECT j.id FROM jobs j
                WHERE j.no_worker_since IS NOT NULL AND j.status = 'pending'
                  AND (:types::text[] IS NULL OR j.type = ANY(:types::text[]))
                  AND EXISTS (SELECT 1 FROM unnest(:route_queues::text[], :route_types::text[]) AS r(q, t)
                              WHERE (r.q IS NULL OR r.q = j.queue) AND (r.t IS NULL OR r.t = j.type))
                LIMIT :batch
            )
            UPDATE jobs j SET no_worker_since = NULL FROM picked p
            WHERE j.id = p.id AND j.no_worker_since IS NOT NULL AND j.status = 'pending'
            RETURNING j.tenant_id
            """);

    /**
     * The worker time of the attempts that finished in a window, per tenant and job type (what shares by worker
     * time learn their estimates from and correct their charges with). One range of jobs_tenant_finished_idx per
     * named tenant and finished status: the tenants the scheduler saw running jobs, never all tenants. A
     * succeeded attempt's time is its handler's run (run_us, measured by the worker); others' is started_at to
     * finished_at, which also holds the wait for a thread after a prefetching claim and the group commit. The
     * window ends a second before now, so that completions still committing (asynchronously) with an earlier
     * finished_at are not skipped; the caller passes the returned end as the next start. A retried attempt
     * (back to pending) is not read: its charge stays the estimate.
     *
     * <p>Each (tenant, status) range is read in finished_at order, which only jobs_tenant_finished_idx gives
     * without a sort (the scheduler's session rules sorts out). The window (the last second or so) always lies past
     * the last ANALYZE, so the planner estimates about one row through either index, and written as {@code status
     * IN (...)} with no order, statistics that saw mostly pending jobs (autoanalyze runs right after a bulk insert)
     * made it take jobs_tenant_status_idx: an index range over the tenant's whole finished history, the window a
     * filter. Under the tenants benchmark's trickle phase that was 59 reads of 70 ms (max 151) in 15 s of the
     * flood, inside the tick (pg_stat_statements, PG15), so the ready buffer ran dry behind it.
     */
    static final NamedSql FINISHED_WORK = NamedSql.of("""
            WITH w AS MATERIALIZED (SELECT :now - interval '1 second' AS until)
            SELECT NULL::text AS tenant_id, NULL::text AS type, 0::bigint AS n, 0::double precision AS seconds, w.until
            FROM w
            UNION ALL
            SELECT t.tenant_id, f.type, f.n, f.seconds, NULL
            FROM w, unnest(:tenant_ids::text[], :sinces::text[]) AS t(tenant_id, since)
            CROSS JOIN LATERAL (
                -- grouped inside, so that the planner cannot pull it up into one join over every tenant's finished
                -- jobs: it did, a bitmap scan of all finished jobs in retention hash-joined to the tenants (87,199
                -- rows and 273 ms a read in the latency benchmark's loaded phase, 4 reads a second in the tick)
                SELECT r.type, count(*) AS n,
                       sum(greatest(coalesce(r.run_us / 1e6, fairq_epoch(r.finished_at) - fairq_epoch(r.started_at)),
                                    :floor_seconds))::double precision AS seconds
                FROM unnest('{succeeded,dead,cancelled}'::job_status[]) AS s(status)
                CROSS JOIN LATERAL (
                    SELECT j.type, j.run_us, j.started_at, j.finished_at
                    FROM jobs j
                    WHERE j.tenant_id = t.tenant_id AND j.status = s.status
                      AND j.finished_at > coalesce(t.since::timestamptz, 'infinity') AND j.finished_at <= w.until
                    ORDER BY j.finished_at
                ) r
                WHERE r.started_at IS NOT NULL
                GROUP BY r.type
            ) f
            """);

    /** Attempts of one tenant and type that finished in the window, and the worker time they took. */
    public record FinishedWork(String tenantId, String type, long attempts, double seconds) {}

    /** What {@link #finishedWork} read, and where the next read starts. */
    public record FinishedWindow(List<FinishedWork> work, OffsetDateTime until) {}

    /**
     * Attempts finished by each tenant after its own bound ({@code since}, element by element; null: none,
     * only the window's end). The bounds travel as text (ISO-8601) and are cast in the statement: exact to the
     * microsecond, as the window's end they were taken from. Each attempt counts at least {@code floorSeconds}, the
     * least a job is charged at admission: settling a floored charge down to a no-op's 10 us of run time would
     * make a busy tenant's jobs free while a tenant that is never read keeps paying the floor.
     */
    public FinishedWindow finishedWork(DSLContext ctx, List<String> tenants, List<OffsetDateTime> since,
                                       double floorSeconds) {
        List<FinishedWork> out = new ArrayList<>();
        OffsetDateTime until = null;
        String[] bounds = new String[since.size()];
        for (int i = 0; i < bounds.length; i++) bounds[i] = since.get(i) == null ? null : since.get(i).toString();
        for (Record r : FINISHED_WORK.bind().clock(clock).set("tenant_ids", tenants.toArray(String[]::new))
                .set("sinces", bounds).set("floor_seconds", floorSeconds).fetch(ctx)) {
            String tenant = r.get(0, String.class);
            if (tenant == null) until = r.get(4, OffsetDateTime.class);
            else out.add(new FinishedWork(tenant, r.get(1, String.class), r.get(2, Long.class), r.get(3, Double.class)));
        }
        return new FinishedWindow(out, until);
    }

    /** The highest rank in the ready buffer, for admitting behind everything already there. */
    static final NamedSql LAST_RANK = NamedSql.of("SELECT max(ready_rank) FROM jobs WHERE status = 'ready'");

    /**
     * The planner settings of the scheduler's session (SchedulerService sets them on its connection): every
     * admission query walks an index made for it, in that index's order where it needs one, so no plan needs a sort
     * or a sequential scan, and ruling both out leaves the planner no bad choice when the statistics are stale.
     */
    public static final List<String> PLANNER_SETTINGS = List.of("enable_sort = off", "enable_seqscan = off");

    private final QueueClock clock;

    Admission(QueueClock clock) {
        this.clock = clock;
    }

    /**
     * What a tick starts from.
     *
     * @param nextRank        lowest rank in the ready buffer (the virtual time of the next job to start), or null
     * @param lastRank        highest rank in the ready buffer, or null
     * @param grantAgeSeconds the unused admission grants ({@link #grantId}), with how long they have been held (empty
     *                        when LOAD left them out)
     * @param usedGrants      the grants ({@link #grantId}) an enqueue took and the scheduler has not cleared yet (V15)
     * @param promoted        the tenants some of whose keyed jobs this LOAD moved into their lanes as they came due
     */
    public record QueueLoad(Map<String, Integer> readyByTenant, Map<String, Integer> runningByTenant,
                            int workerCapacity, Double nextRank, Double lastRank, Map<String, Double> grantAgeSeconds,
                            List<ReadyGroup> readyGroups, Map<String, Map<String, Integer>> activeByKey,
                            Map<String, Map<String, ReadyKey>> readyKeys, Map<String, Double> readyFirstRanks,
                            Map<String, Map<String, Double>> keyGrantAgeSeconds, Set<String> usedGrants,
                            List<String> promoted) {
        public QueueLoad(Map<String, Integer> readyByTenant, Map<String, Integer> runningByTenant, int workerCapacity,
                         Double nextRank, Double lastRank, Map<String, Double> grantAgeSeconds) {
            this(readyByTenant, runningByTenant, workerCapacity, nextRank, lastRank, grantAgeSeconds, List.of(), Map.of(),
                    Map.of(), Map.of(), Map.of(), Set.of(), List.of());
        }

        /** The lowest and highest finite rank of the tenant's jobs in the ready buffer; null when it has none. */
        public Double readyFirstRank(String tenant) {
            return readyFirstRanks.get(tenant);
        }

        /** The tenant's fairness keys that have jobs in the ready buffer (admitted, not started). */
        public Set<String> readyFairnessKeys(String tenant) {
            return readyKeys.getOrDefault(tenant, Map.of()).keySet();
        }

        /** The key's jobs in the ready buffer (how many, the highest rank); null when it has none there. */
        public ReadyKey readyKey(String tenant, String fairnessKey) {
            return readyKeys.getOrDefault(tenant, Map.of()).get(fairnessKey);
        }

        /** Jobs of the tenant's concurrency key that are ready or running. */
        public int active(String tenant, String key) {
            return activeByKey.getOrDefault(tenant, Map.of()).getOrDefault(key, 0);
        }

        public int ready(String tenant) { return readyByTenant.getOrDefault(tenant, 0); }
        public int running(String tenant) { return runningByTenant.getOrDefault(tenant, 0); }
        public int totalReady() { return readyByTenant.values().stream().mapToInt(Integer::intValue).sum(); }
        public int totalRunning() { return runningByTenant.values().stream().mapToInt(Integer::intValue).sum(); }
    }

    /** A fairness key's jobs in the ready buffer: how many, and the highest rank among them. */
    public record ReadyKey(int count, double lastRank) {
        ReadyKey plus(ReadyKey other) {
            return new ReadyKey(count + other.count, Math.max(lastRank, other.lastRank));
        }
    }

    /** Ready jobs of one tenant, queue and type. */
    public record ReadyGroup(String tenantId, String queue, String type, int count) {}

    public QueueLoad load(DSLContext ctx, Duration workerLiveness) {
        return load(ctx, workerLiveness, true);
    }

    /** {@code withGrants} false: the load without the tenant grants ({@link QueueLoad#grantAgeSeconds()} empty). */
    public QueueLoad load(DSLContext ctx, Duration workerLiveness, boolean withGrants) {
        Map<String, Integer> ready = new HashMap<>(), running = new HashMap<>();
        record Route(String tenantId, String queue, String type) {}
        Map<Route, Integer> groups = new LinkedHashMap<>(); // LOAD's ready rows are per concurrency key too
        Map<String, Double> grants = new HashMap<>();
        Set<String> usedGrants = new HashSet<>();
        List<String> promoted = new ArrayList<>();
        Map<String, Map<String, Integer>> byKey = new HashMap<>();
        Map<String, Map<String, ReadyKey>> readyKeys = new HashMap<>();
        Map<String, Double> firstRanks = new HashMap<>();
        Map<String, Map<String, Double>> keyGrants = new HashMap<>();
        int capacity = 0;
        Double nextRank = null, lastRank = null;
        // Plain JDBC, as for the candidates: with 10,000 tenants draining, the ready buffer (100 ms of admissions)
        // spans ~1,300 tenants, one row each, read every tick without a jOOQ record per row (the candidates'
        // records had been most of the scheduler's CPU per admitted job).
        NamedSql.Binding query = (withGrants ? LOAD : LOAD_WITHOUT_GRANTS).bind().clock(clock).set("liveness_ms", workerLiveness.toMillis());
        Object[] scalars = new Object[3]; // capacity, next rank, last rank
        ctx.connection(c -> {
            try (java.sql.PreparedStatement ps = query.prepare(c); java.sql.ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String what = rs.getString(1);
                    String tenant = rs.getString(2);
                    double n = rs.getDouble(3);
                    boolean isNull = rs.wasNull();
                    String key = rs.getString(6);
                    String fairnessKey = rs.getString(7);
                    if (what.equals("key_grant")) {
                        keyGrants.computeIfAbsent(tenant, t -> new HashMap<>())
                                .put(KeyGrant.id(fairnessKey, Integer.parseInt(rs.getString(4))), n);
                        continue;
                    }
                    if (fairnessKey != null) {
                        readyKeys.computeIfAbsent(tenant, t -> new HashMap<>()).merge(fairnessKey,
                                new ReadyKey((int) n, rs.getDouble(8)), ReadyKey::plus);
                    }
                    if (key != null && (what.equals("ready") || what.equals("running"))) {
                        byKey.computeIfAbsent(tenant, t -> new HashMap<>()).merge(key, (int) n, Integer::sum);
                    }
                    switch (what) {
                        case "ready" -> {
                            ready.merge(tenant, (int) n, Integer::sum);
                            double first = rs.getDouble(9);
                            if (!rs.wasNull()) { // the group has jobs ranked other than by grant
                                firstRanks.merge(tenant, first, Math::min);
                            }
                            groups.merge(new Route(tenant, rs.getString(4), rs.getString(5)), (int) n, Integer::sum);
                        }
                        case "running" -> running.merge(tenant, (int) n, Integer::sum);
                        case "capacity" -> scalars[0] = (int) n;
                        case "next_rank" -> scalars[1] = isNull ? null : n;
                        case "last_rank" -> scalars[2] = isNull ? null : n;
                        case "used_grant" -> usedGrants.add(grantId(tenant, Integer.parseInt(rs.getString(4))));
                        case "promoted" -> promoted.add(tenant);
                        default -> grants.put(grantId(tenant, Integer.parseInt(rs.getString(4))), n);
                    }
                }
            }
        });
        if (scalars[0] != null) capacity = (Integer) scalars[0];
        nextRank = (Double) scalars[1];
        lastRank = (Double) scalars[2];
        List<ReadyGroup> readyGroups = new ArrayList<>(groups.size());
        groups.forEach((g, count) -> readyGroups.add(new ReadyGroup(g.tenantId(), g.queue(), g.type(), count)));
        return new QueueLoad(ready, running, capacity, nextRank, lastRank, grants, readyGroups, byKey, readyKeys, firstRanks,
                keyGrants, usedGrants, promoted);
    }

    /** The tenants with admissible pending jobs (see {@link #TENANTS_WITH_WORK}). */
    public List<String> tenantsWithWork(DSLContext ctx) {
        List<String> out = new ArrayList<>(TENANTS_WITH_WORK.bind().fetch(ctx).getValues(0, String.class));
        out.sort(null); // by id, as each loose scan finds them (the union of the two does not keep the order)
        return out;
    }

    /** Per tenant, milliseconds until its next admissible job is due; tenants with none are left out. */
    public Map<String, Long> nextDueInMs(DSLContext ctx, List<String> tenants) {
        return nextDueInMs(ctx, tenants, List.of());
    }

    /** As above, leaving out the given jobs (those a round is admitting right now). */
    public Map<String, Long> nextDueInMs(DSLContext ctx, List<String> tenants, List<Long> picked) {
        Map<String, Long> out = new HashMap<>();
        if (tenants.isEmpty()) return out;
        for (Record r : NEXT_DUE.bind().clock(clock).set("tenant_ids", tenants.toArray(String[]::new))
                .set("picked_ids", picked.toArray(Long[]::new)).fetch(ctx)) {
            Double ms = r.get(1, Double.class);
            if (ms != null) out.put(r.get(0, String.class), Math.max(0, (long) Math.ceil(ms)));
        }
        return out;
    }

    /**
     * A job a round may admit: its place in its tenant's aging order, its route (queue and type: whether a live
     * worker can run it; the type is also what its cost is estimated by), its concurrency and fairness keys (or
     * null).
     */
    public record Candidate(long id, double sortKey, String queue, String type, String concurrencyKey,
                            String fairnessKey) {}

    /** Candidates per tenant, in each tenant's aging order; keys are unlimited (tools and tests). */
    public Map<String, List<Long>> candidates(DSLContext ctx, Map<String, Integer> limits) {
        Map<String, List<Long>> out = new LinkedHashMap<>();
        candidates(ctx, limits, Map.of()).byTenant().forEach((t, c) -> out.put(t, c.stream().map(Candidate::id).toList()));
        return out;
    }

    /**
     * What a read of candidates found: per tenant its jobs, and the tenants one of whose lanes was cut at its
     * cap (they may have more due jobs than they got, however few they got: not a sign that they ran dry).
     */
    public record CandidateRead(Map<String, List<Candidate>> byTenant, java.util.Set<String> cut,
                                java.util.Set<String> noKeyedJobs) {}

    /**
     * Candidates per tenant, in each tenant's aging order within each fairness key (the scheduler interleaves
     * the keys), at most the tenant's limit per fairness key: each concurrency key named in {@code keyRooms}
     * (tenant -> key -> how many more of it may be admitted) contributes at most its room. Each carries its
     * route (queue and type) and its keys.
     */
    public CandidateRead candidates(DSLContext ctx, Map<String, Integer> limits,
                                    Map<String, Map<String, Integer>> keyRooms) {
        return candidates(ctx, limits, keyRooms, java.util.Set.of());
    }

    /**
     * As above; the tenants in {@code withoutKeyedJobs} are known to have no job with a concurrency or fairness
     * key and are read without the lane probe. The answer names the tenants whose lane probe found none.
     */
    public CandidateRead candidates(DSLContext ctx, Map<String, Integer> limits,
                                    Map<String, Map<String, Integer>> keyRooms, java.util.Set<String> withoutKeyedJobs) {
        Map<String, List<Candidate>> out = new LinkedHashMap<>();
        java.util.Set<String> cutTenants = new java.util.HashSet<>(), noKeyed = new java.util.HashSet<>();
        if (limits.isEmpty()) return new CandidateRead(out, cutTenants, noKeyed);
        String[] tenants = limits.keySet().toArray(String[]::new);
        Integer[] lims = new Integer[tenants.length];
        Boolean[] probeLanes = new Boolean[tenants.length];
        for (int i = 0; i < tenants.length; i++) {
            lims[i] = limits.get(tenants[i]);
            probeLanes[i] = !withoutKeyedJobs.contains(tenants[i]);
        }
        List<String> keyTenants = new ArrayList<>(), keyNames = new ArrayList<>();
        List<Integer> keyRoom = new ArrayList<>();
        for (String t : tenants) {
            keyRooms.getOrDefault(t, Map.of()).forEach((key, room) -> {
                keyTenants.add(t);
                keyNames.add(key);
                keyRoom.add(Math.max(0, room));
            });
        }
        record Row(Candidate candidate, boolean capped, int lane) {}
        // tenant -> fairness key ("" for none) -> its rows
        Map<String, Map<String, List<Row>>> keyed = new LinkedHashMap<>();
        NamedSql.Binding query = CANDIDATES.bind().clock(clock).set("tenant_ids", tenants).set("limits", lims)
                .set("keyed", probeLanes)
                .set("key_tenants", keyTenants.toArray(String[]::new)).set("key_names", keyNames.toArray(String[]::new))
                .set("key_rooms", keyRoom.toArray(Integer[]::new));
        // Plain JDBC: up to a few thousand rows a tick, and materialising jOOQ records for them was most of the
        // scheduler's CPU per admitted job once the rows carried their queue and type (routing).
        ctx.connection(c -> {
            try (java.sql.PreparedStatement ps = query.prepare(c); java.sql.ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    if (rs.getInt(9) == -1) { // its lane probe found no keyed job
                        noKeyed.add(rs.getString(1));
                        continue;
                    }
                    Candidate cand = new Candidate(rs.getLong(2), rs.getDouble(3), rs.getString(4), rs.getString(5),
                            rs.getString(6), rs.getString(7));
                    keyed.computeIfAbsent(rs.getString(1), k -> new LinkedHashMap<>())
                            .computeIfAbsent(cand.fairnessKey() == null ? "" : cand.fairnessKey(), k -> new ArrayList<>())
                            .add(new Row(cand, rs.getBoolean(8), rs.getInt(9)));
                }
            }
        });
        // Each lane comes out of its index walk in order already; a fairness key's lanes (no concurrency key, and
        // each concurrency key with room) are merged by this sort, cut at the tenant's limit, and never past the
        // last job read of a lane that was cut at its cap (the lane's next job might go first).
        Comparator<Row> order = Comparator.comparingDouble((Row row) -> row.candidate().sortKey())
                .thenComparingLong(row -> row.candidate().id());
        keyed.forEach((tenant, byKey) -> {
            List<Candidate> cut = new ArrayList<>();
            for (List<Row> rows : byKey.values()) {
                Map<Integer, Row> lastOfCappedLane = new HashMap<>();
                for (Row row : rows) {
                    if (row.capped()) lastOfCappedLane.merge(row.lane(), row, (a, b) -> order.compare(a, b) >= 0 ? a : b);
                }
                Row bound = lastOfCappedLane.values().stream().min(order).orElse(null);
                if (bound != null) cutTenants.add(tenant);
                rows.sort(order);
                int taken = 0;
                for (Row row : rows) {
                    if (taken >= limits.get(tenant) || (bound != null && order.compare(row, bound) > 0)) break;
                    cut.add(row.candidate());
                    taken++;
                }
            }
            out.put(tenant, cut);
        });
        return new CandidateRead(out, cutTenants, noKeyed);
    }

    /** Parks pending jobs no live worker can run; returns how many. */
    public int park(DSLContext ctx, List<Long> ids) {
        if (ids.isEmpty()) return 0;
        return PARK.bind().clock(clock).set("ids", ids.toArray(Long[]::new)).execute(ctx);
    }

    /** Sends ready jobs of the given groups (no live worker can run them) back to pending, parked; returns how many. */
    public int unadmitUnroutable(DSLContext ctx, List<ReadyGroup> groups) {
        if (groups.isEmpty()) return 0;
        return UNADMIT_UNROUTABLE.bind().clock(clock)
                .set("tenant_ids", groups.stream().map(ReadyGroup::tenantId).toArray(String[]::new))
                .set("queues", groups.stream().map(ReadyGroup::queue).toArray(String[]::new))
                .set("types", groups.stream().map(ReadyGroup::type).toArray(String[]::new)).execute(ctx);
    }

    /**
     * Un-parks at most {@code batch} parked jobs that one of the live routes can run; returns their tenants
     * (one entry per job, so the size says whether the batch was full).
     */
    public List<String> unpark(DSLContext ctx, List<WorkerRoute.Live> live, int batch) {
        if (live.isEmpty()) return List.of();
        List<String> routeQueues = new ArrayList<>(), routeTypes = new ArrayList<>();
        java.util.Set<String> types = new java.util.TreeSet<>();
        boolean anyType = false;
        for (WorkerRoute.Live w : live) {
            WorkerRoute r = w.route();
            if (r.types() == null) anyType = true;
            else types.addAll(r.types());
            for (String q : r.queues() == null ? java.util.Collections.<String>singleton(null) : r.queues()) {
                for (String t : r.types() == null ? java.util.Collections.<String>singleton(null) : r.types()) {
                    routeQueues.add(q);
                    routeTypes.add(t);
                }
            }
        }
        if (routeQueues.isEmpty()) return List.of();
        return UNPARK.bind().set("types", anyType ? null : types.toArray(String[]::new))
                .set("route_queues", routeQueues.toArray(String[]::new)).set("route_types", routeTypes.toArray(String[]::new))
                .set("batch", batch).fetch(ctx).getValues(0, String.class);
    }

    /** Admits the given jobs with the given ranks; returns the ids actually moved to ready. */
    public List<Long> admit(DSLContext ctx, List<Long> ids, List<Double> ranks) {
        if (ids.isEmpty()) return List.of();
        return ADMIT.bind().clock(clock).set("ranks", ranks.toArray(Double[]::new)).set("ids", ids.toArray(Long[]::new))
                .fetch(ctx).getValues(0, Long.class);
    }

    /** As {@link #admit(DSLContext, List, List)}, without waking the workers: the caller does, after the commit. */
    public List<Long> admitQuietly(DSLContext ctx, List<Long> ids, List<Double> ranks) {
        if (ids.isEmpty()) return List.of();
        return ADMIT_QUIETLY.bind().clock(clock).set("ranks", ranks.toArray(Double[]::new)).set("ids", ids.toArray(Long[]::new))
                .fetch(ctx).getValues(0, Long.class);
    }

    /** Admits the given jobs behind everything already ready, in the given order (tools and tests). */
    public List<Long> admit(DSLContext ctx, List<Long> idsInOrder) {
        Double last = LAST_RANK.bind().fetch(ctx).get(0).get(0, Double.class);
        double base = last == null ? 0.0 : last;
        List<Double> ranks = new ArrayList<>(idsInOrder.size());
        for (int i = 0; i < idsInOrder.size(); i++) ranks.add(base + 1 + i);
        return admit(ctx, idsInOrder, ranks);
    }

    public int unadmitPaused(DSLContext ctx, List<String> pausedTenants) {
        if (pausedTenants.isEmpty()) return 0;
        return UNADMIT_PAUSED.bind().set("tenant_ids", pausedTenants.toArray(String[]::new)).execute(ctx);
    }

    /**
     * How a tenant grant is named: the tenant's id for its first slot, the id + '\0' + the slot for its spare (V16;
     * a text value never holds a NUL byte, so the two never meet).
     */
    public static String grantId(String tenantId, int slot) {
        return slot == 0 ? tenantId : tenantId + '\0' + slot;
    }

    public static String tenantOfGrant(String grantId) {
        int at = grantId.indexOf('\0');
        return at < 0 ? grantId : grantId.substring(0, at);
    }

    public static int slotOfGrant(String grantId) {
        int at = grantId.indexOf('\0');
        return at < 0 ? 0 : Integer.parseInt(grantId.substring(at + 1));
    }

    /** Grants an admission each ({@link #grantId} names the slot); returns those made (a deleted tenant gets none). */
    public List<String> grant(DSLContext ctx, List<String> grantIds) {
        return grant(ctx, grantIds, Set.of());
    }

    /**
     * As {@link #grant(DSLContext, List)}, and deletes the used grants of {@code spent} (read by the tick's LOAD) that
     * are not granted again: a used grant granted again becomes the new grant in place.
     */
    public List<String> grant(DSLContext ctx, List<String> grantIds, Set<String> spent) {
        if (grantIds.isEmpty() && spent.isEmpty()) return List.of();
        NamedSql.Binding b = bindGrants(GRANT.bind().clock(clock), "tenant_ids", "slots", grantIds);
        return grantIds(bindGrants(b, "spent", "spent_slots", spent).fetch(ctx));
    }

    /** Binds grants ({@link #grantId}) as two parallel arrays, tenants and slots. */
    private static NamedSql.Binding bindGrants(NamedSql.Binding b, String tenants, String slots,
                                               java.util.Collection<String> grantIds) {
        return b.set(tenants, grantIds.stream().map(Admission::tenantOfGrant).toArray(String[]::new))
                .set(slots, grantIds.stream().map(Admission::slotOfGrant).toArray(Integer[]::new));
    }

    /** The grants ({@link #grantId}) of rows (tenant_id, slot). */
    private static List<String> grantIds(org.jooq.Result<org.jooq.Record> rows) {
        List<String> out = new ArrayList<>(rows.size());
        for (org.jooq.Record r : rows) out.add(grantId(r.get(0, String.class), r.get(1, Integer.class)));
        return out;
    }

    /**
     * A fairness key's grant: which tenant and key, and (when granting) the rank its job is inserted at and the most
     * grants its tenant may take in this statement (the same for each of the tenant's rows).
     */
    public record KeyGrant(String tenantId, String fairnessKey, int slot, double rank, int most) {
        /**
         * The fairness key of a new-key grant: the next due job of any key of its tenant that holds no key grant of its
         * own and has no due job waiting takes it in its enqueue (Enqueue.INSERT_KEYED_JOBS). U+0001 is no key a job
         * can carry (JobRequest: no control characters), and not the key of the jobs without one ('').
         */
        public static final String NEW_KEY = "\u0001";

        public KeyGrant(String tenantId, String fairnessKey, int slot) {
            this(tenantId, fairnessKey, slot, 0, 1);
        }

        /** How a grant is named within its tenant: the key and the slot. */
        public static String id(String fairnessKey, int slot) {
            return fairnessKey + '\0' + slot;
        }

        public static String keyOf(String id) {
            return id.substring(0, id.lastIndexOf('\0'));
        }

        public static int slotOf(String id) {
            return Integer.parseInt(id.substring(id.lastIndexOf('\0') + 1));
        }

        public String id() {
            return id(fairnessKey, slot);
        }
    }

    /** Returns the (tenant, key) pairs granted (not a deleted tenant's, nor a key with a due job waiting), ranks 0. */
    public List<KeyGrant> grantKeys(DSLContext ctx, List<KeyGrant> grants) {
        if (grants.isEmpty()) return List.of();
        List<KeyGrant> out = new ArrayList<>();
        for (org.jooq.Record r : GRANT_KEYS.bind().clock(clock)
                .set("tenant_ids", grants.stream().map(KeyGrant::tenantId).toArray(String[]::new))
                .set("keys", grants.stream().map(KeyGrant::fairnessKey).toArray(String[]::new))
                .set("slots", grants.stream().map(KeyGrant::slot).toArray(Integer[]::new))
                .set("ranks", grants.stream().map(KeyGrant::rank).toArray(Double[]::new))
                .set("most", grants.stream().map(KeyGrant::most).toArray(Integer[]::new)).fetch(ctx)) {
            out.add(new KeyGrant(r.get(0, String.class), r.get(1, String.class), r.get(2, Integer.class)));
        }
        return out;
    }

    /** Returns the key grants taken back (not one an enqueue is taking at this moment), ranks left 0. */
    public List<KeyGrant> revokeKeyGrants(DSLContext ctx, List<KeyGrant> grants) {
        if (grants.isEmpty()) return List.of();
        List<KeyGrant> out = new ArrayList<>();
        for (org.jooq.Record r : REVOKE_KEY_GRANTS.bind()
                .set("tenant_ids", grants.stream().map(KeyGrant::tenantId).toArray(String[]::new))
                .set("keys", grants.stream().map(KeyGrant::fairnessKey).toArray(String[]::new))
                .set("slots", grants.stream().map(KeyGrant::slot).toArray(Integer[]::new)).fetch(ctx)) {
            out.add(new KeyGrant(r.get(0, String.class), r.get(1, String.class), r.get(2, Integer.class)));
        }
        return out;
    }

    /** Returns the grants ({@link #grantId}) taken back (not one an enqueue is taking at this moment). */
    public List<String> revokeGrants(DSLContext ctx, List<String> grantIds) {
        if (grantIds.isEmpty()) return List.of();
        return grantIds(bindGrants(REVOKE_GRANTS.bind(), "tenant_ids", "slots", grantIds).fetch(ctx));
    }
}

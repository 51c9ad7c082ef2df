package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Completion: a worker records how attempts ended, in batches (group commit). Every statement is fenced on
 * the lease ({@code locked_by} and the attempt), so a worker that lost its lease changes nothing.
 */
public final class Completion {
    /** last_error keeps this much of an error (the start of the text carries the cause). */
    public static final int MAX_ERROR_CHARS = 4000;

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
     * <p>A finished job with a concurrency key wakes the scheduler with its tenant: the key has room again, and
     * the next job behind it should not wait for a timed tick (measured: with 20 keys of limit 2 and 50 ms jobs,
     * a key's next job waited for the scheduler's idle tick, and the keys ran at a fifth of their limits).
     *
     * <p>The same statement hands each finished head's ordering key to the key's oldest waiting job, and wakes
     * the scheduler with that job's tenant (the scheduler learns of admissible work only from wake-ups: a
     * promoted head is new work), so the
     * common path is one autocommit round trip and a key is never left headless between two statements.
     * Both updates run in one command: the finished head's row is already updated by this command when the
     * next job becomes head, so jobs_ordering_head_uidx sees one head at a time; the NOT EXISTS excludes the
     * rows finished here because the statement's snapshot still shows them as heads.
     */
    static final NamedSql COMPLETE = NamedSql.of("""
            WITH input AS MATERIALIZED (
                SELECT :ids::bigint[] AS ids, :attempts::integer[] AS attempts, :run_us::bigint[] AS run_us
            ), done AS (
                UPDATE jobs j
                SET status = 'succeeded', finished_at = :now, locked_by = NULL, locked_until = NULL,
                    key_head = false, run_us = nullif(i.run_us[array_position(i.ids, j.id)], -1)
                FROM input i
                WHERE j.id = ANY(i.ids) AND j.locked_by = :worker_id
                  AND j.attempts = i.attempts[array_position(i.ids, j.id)]
                RETURNING j.id, j.tenant_id, j.ordering_key, j.concurrency_key
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
                RETURNING n.id, pg_notify('fairq_jobs', 't:' || n.tenant_id)
            ), key_freed AS (
                SELECT count(pg_notify('fairq_jobs', 't:' || tenant_id)) AS n
                FROM (SELECT DISTINCT tenant_id FROM done WHERE concurrency_key IS NOT NULL) x
            )
            SELECT id, (SELECT n FROM key_freed) FROM done
            """);

    /**
     * Failures, fenced like COMPLETE. A retry goes back to pending with run_at on the queue's clock and
     * failed_at stamped (the dashboard rollup counts retried failures per minute by it), and wakes the
     * scheduler with its tenant, which then sets a timer for the retry's due time. A dead head keeps its key
     * blocked unless its queue says 'continue'. A job someone asked to cancel while it ran ends cancelled
     * instead, whatever the worker knew: a cancel that races a failure never becomes a retry. A keyed retry with a
     * delay waits out of its lane (not_due) until the scheduler sees it due (Admission's LOAD); so does a keyed
     * snooze.
     */
    static final NamedSql FAIL = NamedSql.of("""
            WITH input AS MATERIALIZED (
                SELECT :dead::boolean[] AS dead, :delays_ms::bigint[] AS delay_ms, :errors::text[] AS error,
                       :attempts::integer[] AS attempt, :ids::bigint[] AS ids
            ), f AS MATERIALIZED (
                SELECT j.id, i.dead[p.i] AS dead, i.delay_ms[p.i] AS delay_ms, i.error[p.i] AS error,
                       i.attempt[p.i] AS attempt
                FROM input i, jobs j, LATERAL (SELECT array_position(i.ids, j.id) AS i) p
                WHERE j.id = ANY(i.ids) AND j.locked_by = :worker_id
            )
            UPDATE jobs j
            SET status = CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'::job_status
                              WHEN f.dead THEN 'dead'::job_status ELSE 'pending'::job_status END,
                run_at = CASE WHEN f.dead OR j.cancel_requested_at IS NOT NULL THEN j.run_at
                              ELSE :now + f.delay_ms * interval '1 millisecond' END,
                finished_at = CASE WHEN f.dead OR j.cancel_requested_at IS NOT NULL THEN :now END,
                failed_at = CASE WHEN f.dead OR j.cancel_requested_at IS NOT NULL THEN j.failed_at ELSE :now END,
                last_error = f.error, locked_by = NULL, locked_until = NULL,
                ready_rank = NULL, admitted_at = NULL,
                not_due = NOT f.dead AND j.cancel_requested_at IS NULL AND f.delay_ms > 0
                          AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL),
                key_head = CASE WHEN j.cancel_requested_at IS NOT NULL THEN false
                                WHEN f.dead AND (SELECT q.ordering_on_dead FROM queues q WHERE q.name = j.queue) = 'continue'
                                THEN false ELSE j.key_head END
            FROM f
            WHERE j.id = f.id AND j.attempts = f.attempt AND j.locked_by = :worker_id
            RETURNING j.id, j.tenant_id, j.ordering_key, j.key_head,
                      CASE WHEN j.status = 'pending' OR j.concurrency_key IS NOT NULL
                           THEN pg_notify('fairq_jobs', 't:' || j.tenant_id) END
            """);

    /**
     * Attempts stopped by a cancel request, fenced like COMPLETE: the job ends cancelled (never retried) and
     * its ordering key goes to the next job (a running job with a key is its key's head).
     */
    static final NamedSql CANCEL = NamedSql.of("""
            WITH input AS MATERIALIZED (
                SELECT :ids::bigint[] AS ids, :attempts::integer[] AS attempts, :errors::text[] AS errors
            )
            UPDATE jobs j
            SET status = 'cancelled', finished_at = :now, locked_by = NULL, locked_until = NULL, key_head = false,
                ready_rank = NULL, last_error = coalesce(i.errors[array_position(i.ids, j.id)], j.last_error)
            FROM input i
            WHERE j.id = ANY(i.ids) AND j.locked_by = :worker_id
              AND j.attempts = i.attempts[array_position(i.ids, j.id)]
            RETURNING j.id, j.tenant_id, j.ordering_key
            """);

    /**
     * Snoozes, fenced like COMPLETE: back to pending with run_at later, the attempt given back (attempts - 1),
     * snoozes + 1, last_error saying it was a snooze. The job keeps key_head, so a snoozed head keeps its
     * ordering key and the next job of the key keeps waiting. A job someone asked to cancel meanwhile ends
     * cancelled and hands its key on. A pending job is admissible work again later: its tenant is named to
     * the scheduler (which sets a timer for run_at, as for a retry); so is a job with a concurrency key,
     * whatever its end (its key has room again, as after FAIL).
     */
    static final NamedSql SNOOZE = NamedSql.of("""
            WITH input AS MATERIALIZED (
                SELECT :ids::bigint[] AS ids, :attempts::integer[] AS attempts, :delays_ms::bigint[] AS delays,
                       :reasons::text[] AS reasons
            )
            UPDATE jobs j
            SET status = CASE WHEN j.cancel_requested_at IS NULL THEN 'pending' ELSE 'cancelled' END::job_status,
                run_at = CASE WHEN j.cancel_requested_at IS NULL
                              THEN :now + i.delays[array_position(i.ids, j.id)] * interval '1 millisecond'
                              ELSE j.run_at END,
                finished_at = CASE WHEN j.cancel_requested_at IS NOT NULL THEN :now END,
                attempts = j.attempts - 1, snoozes = j.snoozes + 1,
                not_due = j.cancel_requested_at IS NULL AND i.delays[array_position(i.ids, j.id)] > 0
                          AND (j.concurrency_key IS NOT NULL OR j.fairness_key IS NOT NULL),
                last_error = i.reasons[array_position(i.ids, j.id)],
                locked_by = NULL, locked_until = NULL, ready_rank = NULL, admitted_at = NULL,
                key_head = j.key_head AND j.cancel_requested_at IS NULL
            FROM input i
            WHERE j.id = ANY(i.ids) AND j.locked_by = :worker_id
              AND j.attempts = i.attempts[array_position(i.ids, j.id)]
            RETURNING j.id, j.tenant_id, j.ordering_key, j.status = 'cancelled' AS cancelled,
                      CASE WHEN j.status = 'pending' OR j.concurrency_key IS NOT NULL
                           THEN pg_notify('fairq_jobs', 't:' || j.tenant_id) END
            """);

    private final QueueClock clock;

    Completion(QueueClock clock) {
        this.clock = clock;
    }

    /**
     * Records a batch of outcomes in one transaction (a statement for the successes, one for the failures,
     * one for the cancelled attempts, one to hand ordering keys on). Returns the ids that were recorded; an
     * id missing from the result had lost its lease and was left alone.
     */
    public Set<Long> finish(DSLContext ctx, String workerId, List<? extends JobOutcome> outcomes) {
        if (outcomes.isEmpty()) return Set.of();
        List<JobOutcome.Succeeded> ok = new ArrayList<>();
        List<JobOutcome.Failed> failed = new ArrayList<>();
        List<JobOutcome.Cancelled> cancelled = new ArrayList<>();
        List<JobOutcome.Snoozed> snoozed = new ArrayList<>();
        for (JobOutcome o : outcomes) {
            if (o instanceof JobOutcome.Succeeded s) ok.add(s);
            else if (o instanceof JobOutcome.Failed f) failed.add(f);
            else if (o instanceof JobOutcome.Snoozed z) snoozed.add(z);
            else cancelled.add((JobOutcome.Cancelled) o);
        }
        if (failed.isEmpty() && cancelled.isEmpty() && snoozed.isEmpty()) return complete(ctx, workerId, ok); // the hot path: one statement
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Set<Long> recorded = complete(tx, workerId, ok);
            Set<OrderingKey> released = new LinkedHashSet<>();
            if (!snoozed.isEmpty()) {
                Long[] ids = snoozed.stream().map(JobOutcome::jobId).toArray(Long[]::new);
                Integer[] attempts = snoozed.stream().map(JobOutcome::attempt).toArray(Integer[]::new);
                Long[] delays = snoozed.stream().map(z -> storableDelay(z.delayMs())).toArray(Long[]::new);
                String[] reasons = snoozed.stream().map(z -> truncate(z.reason(), MAX_ERROR_CHARS)).toArray(String[]::new);
                for (Record r : SNOOZE.bind().clock(clock).set("ids", ids).set("attempts", attempts).set("delays_ms", delays)
                        .set("reasons", reasons).set("worker_id", workerId).fetch(tx)) {
                    recorded.add(r.get(0, Long.class));
                    if (r.get(2) != null && r.get(3, Boolean.class)) {
                        released.add(new OrderingKey(r.get(1, String.class), r.get(2, String.class)));
                    }
                }
            }
            if (!cancelled.isEmpty()) {
                Long[] ids = cancelled.stream().map(JobOutcome::jobId).toArray(Long[]::new);
                Integer[] attempts = cancelled.stream().map(JobOutcome::attempt).toArray(Integer[]::new);
                String[] errors = cancelled.stream().map(x -> truncate(x.error(), MAX_ERROR_CHARS)).toArray(String[]::new);
                for (Record r : CANCEL.bind().clock(clock).set("ids", ids).set("attempts", attempts).set("errors", errors)
                        .set("worker_id", workerId).fetch(tx)) {
                    recorded.add(r.get(0, Long.class));
                    if (r.get(2) != null) released.add(new OrderingKey(r.get(1, String.class), r.get(2, String.class)));
                }
            }
            if (failed.isEmpty()) {
                KeyHandoff.promoteNext(tx, released);
                return recorded;
            }
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
                delays[i] = storableDelay(f.retryDelayMs());
                errors[i] = truncate(f.error(), MAX_ERROR_CHARS);
            }
            for (Record r : FAIL.bind().clock(clock).set("dead", dead).set("delays_ms", delays).set("errors", errors)
                    .set("attempts", attempts).set("ids", ids).set("worker_id", workerId).fetch(tx)) {
                recorded.add(r.get(0, Long.class));
                if (r.get(2) != null && !r.get(3, Boolean.class)) {
                    released.add(new OrderingKey(r.get(1, String.class), r.get(2, String.class)));
                }
            }
            KeyHandoff.promoteNext(tx, released);
            return recorded;
        });
    }

    private Set<Long> complete(DSLContext ctx, String workerId, List<JobOutcome.Succeeded> ok) {
        if (ok.isEmpty()) return new HashSet<>();
        Long[] ids = ok.stream().map(JobOutcome::jobId).toArray(Long[]::new);
        Integer[] attempts = ok.stream().map(JobOutcome::attempt).toArray(Integer[]::new);
        Long[] runUs = ok.stream().map(JobOutcome.Succeeded::runMicros).toArray(Long[]::new);
        // Plain JDBC, as the claim: rendering the plain SQL through jOOQ was a third of the completer thread's samples
        // (JFR over ./bench/run subkeys' flood: 12 of its 35)
        return new HashSet<>(COMPLETE.bind().clock(clock).set("ids", ids).set("attempts", attempts).set("run_us", runUs)
                .set("worker_id", workerId).query(ctx, rs -> rs.getLong(1)));
    }

    /**
     * A retry's or snooze's delay as run_at can take it: 0 to {@link JobRequest#MAX_DELAY_MS} (a year, the most any
     * job may be delayed). One far beyond (a handler's retryAfter, a RetryPolicy's max) overflowed run_at ("interval
     * out of range") and failed the statement at every retry, with every outcome of its batch (WorkerSqlTest).
     */
    static long storableDelay(long ms) {
        return Math.min(JobRequest.MAX_DELAY_MS, Math.max(0, ms));
    }

    /** An error text as last_error holds it: at most {@code max} characters, {@link #storableText} (null stays null). */
    static String truncate(String s, int max) {
        if (s == null) return null;
        return storableText(s.length() <= max ? s : s.substring(0, max));
    }

    /**
     * A handler's text as PostgreSQL's text type can hold it: a NUL (a handler quoting binary data) becomes U+FFFD.
     * Stored as is, it failed its statement at every retry: a completion with every outcome of its batch, so the
     * worker recorded nothing again (WorkerEngineTest); a side effect's result, so the key stayed held and the
     * effect ran again after its lock (SideEffectOnceTest).
     */
    public static String storableText(String s) {
        return s == null || s.indexOf('\u0000') < 0 ? s : s.replace('\u0000', '\uFFFD');
    }
}

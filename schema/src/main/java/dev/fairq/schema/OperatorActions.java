package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.jooq.DSLContext;
import org.jooq.Record;

import java.util.Optional;
import java.util.Set;

import static dev.fairq.schema.generated.Tables.JOBS;

/**
 * Look-ups and the operator actions (cancel, replay, discard), for tenants (their own jobs) and admins (any
 * tenant's: {@code tenantId} null). Each action is one transaction: lock the job, check its status, change
 * it, and answer with the job as that transaction left it.
 */
public final class OperatorActions {
    /** One job; with a tenant, only that tenant's (another tenant's id is simply not found). */
    static final NamedSql FIND = NamedSql.of("""
            SELECT * FROM jobs WHERE id = :id AND (:tenant_id::text IS NULL OR tenant_id = :tenant_id::text)
            """);

    static final NamedSql LOCK = NamedSql.of("""
            SELECT * FROM jobs WHERE id = :id AND (:tenant_id::text IS NULL OR tenant_id = :tenant_id::text)
            FOR UPDATE
            """);

    /**
     * pending or ready -> cancelled (the caller checked the status under the lock). An admitted (ready) job held a
     * place under max_running and its key's limit: the scheduler is woken with the tenant at commit, as by a
     * completion, instead of finding the place at its next idle tick (250 ms).
     */
    static final NamedSql CANCEL = NamedSql.of("""
            WITH cancelled AS (
                UPDATE jobs SET status = 'cancelled', finished_at = :now, key_head = false, ready_rank = NULL
                WHERE id = :id RETURNING *
            )
            SELECT cancelled.*, CASE WHEN :was_ready THEN pg_notify('fairq_jobs', 't:' || cancelled.tenant_id) END
            FROM cancelled
            """);

    /**
     * running: the cancel is requested (a second request keeps the first time) and the workers are told at
     * commit on fairq_cancel, with the job id as the payload; the one running it stops it and records it
     * cancelled (Completion.CANCEL). A worker that misses the notification finds the request with its
     * periodic check (Leases.CANCEL_REQUESTS), and every other way out of running honours it (V8).
     */
    static final NamedSql REQUEST_CANCEL = NamedSql.of("""
            WITH requested AS (
                UPDATE jobs SET cancel_requested_at = coalesce(cancel_requested_at, :now)
                WHERE id = :id RETURNING *
            )
            SELECT requested.*, pg_notify('fairq_cancel', requested.id::text) FROM requested
            """);

    /**
     * The key's head (another job whose turn it is), if any, locked FOR SHARE as fairq_ensure_key_head (V1) does: a
     * head being finished right now is waited for and then seen gone (its hand-on could not see the replayed job, so
     * a replay that took it for the head left the key with a waiting job and no head, for good), and a head that
     * finishes later waits for this transaction, so its hand-on sees the replayed job.
     */
    static final NamedSql KEY_HEAD = NamedSql.of("""
            SELECT id FROM jobs WHERE tenant_id = :tenant_id AND ordering_key = :ordering_key AND key_head FOR SHARE
            """);

    /**
     * dead or cancelled -> pending, attempts and snoozes reset, due now, not parked (the scheduler parks it again
     * when still no worker can run it); the scheduler is woken with the tenant. A concurrent enqueue (or hand-on)
     * that takes the key's head between the head check and this update makes it fail on jobs_ordering_head_uidx,
     * never two heads: {@link #replay} then decides again, and the job waits its turn.
     */
    static final NamedSql REPLAY = NamedSql.of("""
            WITH replayed AS (
                UPDATE jobs SET status = 'pending', attempts = 0, run_at = :now, finished_at = NULL, key_head = :head,
                                cancel_requested_at = NULL, snoozes = 0, no_worker_since = NULL
                WHERE id = :id RETURNING *
            )
            SELECT replayed.*, pg_notify('fairq_jobs', 't:' || replayed.tenant_id) FROM replayed
            """);

    /** dead -> cancelled, kept for the record. */
    static final NamedSql DISCARD = NamedSql.of("""
            UPDATE jobs SET status = 'cancelled', key_head = false WHERE id = :id RETURNING *
            """);

    /**
     * What an operator action did: DONE (changed as asked), STOPPING (a cancel of a running job: requested,
     * the worker stops it within about a second), ALREADY_ENDED (a cancel of a job that had already ended:
     * nothing changed), NOT_FOUND, WRONG_STATUS (the action does not apply to the job's status).
     */
    public enum ActionResult { DONE, STOPPING, ALREADY_ENDED, NOT_FOUND, WRONG_STATUS }

    /**
     * An operator action's result and the job as that action's transaction left it (null when not found).
     * Read inside the transaction: a worker may claim a replayed job the moment it commits, and the caller's
     * answer must describe what the action did, not what happened next.
     */
    public record ActionOutcome(ActionResult result, JobsRecord job) {}

    private final QueueClock clock;

    OperatorActions(QueueClock clock) {
        this.clock = clock;
    }

    /** A job by id; {@code tenantId} null means any tenant (admin). */
    public Optional<JobsRecord> find(DSLContext ctx, String tenantId, long id) {
        return FIND.bind().set("id", id).set("tenant_id", tenantId).fetch(ctx).stream().findFirst().map(r -> r.into(JOBS));
    }

    /**
     * pending or ready -> cancelled at once (DONE; a cancelled head hands its key on). running -> the cancel
     * is requested and the worker running it is told (STOPPING; see REQUEST_CANCEL). A job that already
     * ended (succeeded, dead, cancelled) is left as it is (ALREADY_ENDED), so a repeated cancel is harmless.
     */
    public ActionOutcome cancel(DSLContext ctx, String tenantId, long id) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Optional<JobsRecord> found = LOCK.bind().set("id", id).set("tenant_id", tenantId).fetch(tx).stream()
                    .findFirst().map(OperatorActions::one);
            if (found.isEmpty()) return new ActionOutcome(ActionResult.NOT_FOUND, null);
            JobsRecord j = found.get();
            switch (j.getStatus()) {
                case pending, ready -> {
                    JobsRecord after = one(CANCEL.bind().clock(clock).set("id", id)
                            .set("was_ready", j.getStatus() == JobStatus.ready).fetch(tx).get(0));
                    if (j.getKeyHead()) KeyHandoff.promoteNext(tx, Set.of(new OrderingKey(j.getTenantId(), j.getOrderingKey())));
                    return new ActionOutcome(ActionResult.DONE, after);
                }
                case running -> {
                    return new ActionOutcome(ActionResult.STOPPING,
                            one(REQUEST_CANCEL.bind().clock(clock).set("id", id).fetch(tx).get(0)));
                }
                default -> {
                    return new ActionOutcome(ActionResult.ALREADY_ENDED, j);
                }
            }
        });
    }

    /**
     * pending or ready -> cancelled (DONE); any other status is left alone (WRONG_STATUS), a running job too:
     * no stop is requested. For withdrawing a job that has not started (a schedule's fire created ahead).
     */
    public ActionOutcome cancelWaiting(DSLContext ctx, String tenantId, long id) {
        return act(ctx, tenantId, id, Set.of(JobStatus.pending, JobStatus.ready), (tx, j) -> {
            JobsRecord after = one(CANCEL.bind().clock(clock).set("id", id)
                    .set("was_ready", j.getStatus() == JobStatus.ready).fetch(tx).get(0));
            if (j.getKeyHead()) KeyHandoff.promoteNext(tx, Set.of(new OrderingKey(j.getTenantId(), j.getOrderingKey())));
            return after;
        });
    }

    /**
     * dead or cancelled -> pending, attempts reset, due now. A job that is not its key's head takes the head
     * if the key has none, otherwise it waits its turn (by id, so it goes next).
     */
    public ActionOutcome replay(DSLContext ctx, String tenantId, long id) {
        try {
            return replayOnce(ctx, tenantId, id);
        } catch (RuntimeException e) {
            // the key got a head meanwhile (an enqueue or a hand-on committed after the head check): it had answered
            // the caller a 500; decided again, the job sees that head and waits its turn
            if (!headTaken(e)) throw e;
            return replayOnce(ctx, tenantId, id);
        }
    }

    private ActionOutcome replayOnce(DSLContext ctx, String tenantId, long id) {
        return act(ctx, tenantId, id, Set.of(JobStatus.dead, JobStatus.cancelled), (tx, j) -> {
            boolean head = j.getKeyHead();
            if (!head && j.getOrderingKey() != null) {
                head = KEY_HEAD.bind().set("tenant_id", j.getTenantId()).set("ordering_key", j.getOrderingKey())
                        .fetch(tx).isEmpty();
            }
            return one(REPLAY.bind().clock(clock).set("id", id).set("head", head).fetch(tx).get(0));
        });
    }

    /** A unique violation of jobs_ordering_head_uidx somewhere in the cause chain. */
    private static boolean headTaken(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof java.sql.SQLException s && "23505".equals(s.getSQLState())
                    && String.valueOf(s.getMessage()).contains("jobs_ordering_head_uidx")) {
                return true;
            }
        }
        return false;
    }

    /** dead -> cancelled (kept for the record); a dead head that blocked its key hands the key on. */
    public ActionOutcome discard(DSLContext ctx, String tenantId, long id) {
        return act(ctx, tenantId, id, Set.of(JobStatus.dead), (tx, j) -> {
            JobsRecord after = one(DISCARD.bind().set("id", id).fetch(tx).get(0));
            if (j.getKeyHead()) KeyHandoff.promoteNext(tx, Set.of(new OrderingKey(j.getTenantId(), j.getOrderingKey())));
            return after;
        });
    }

    private interface Change {
        JobsRecord apply(DSLContext tx, JobsRecord before);
    }

    /** An operator action in one transaction: lock the job, check its status, apply the change. */
    private static ActionOutcome act(DSLContext ctx, String tenantId, long id, Set<JobStatus> allowed, Change change) {
        return ctx.transactionResult(c -> {
            DSLContext tx = c.dsl();
            Optional<JobsRecord> job = LOCK.bind().set("id", id).set("tenant_id", tenantId).fetch(tx).stream()
                    .findFirst().map(OperatorActions::one);
            if (job.isEmpty()) return new ActionOutcome(ActionResult.NOT_FOUND, null);
            if (!allowed.contains(job.get().getStatus())) return new ActionOutcome(ActionResult.WRONG_STATUS, job.get());
            return new ActionOutcome(ActionResult.DONE, change.apply(tx, job.get()));
        });
    }

    private static JobsRecord one(Record r) {
        return r.into(JOBS);
    }
}

package dev.fairq.schema;

import dev.fairq.schema.generated.tables.records.JobsRecord;
import org.jooq.DSLContext;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The queue, for embedders and for fairq's own roles: every operation of a job's life cycle, each delegating
 * to the class of its stage, where its SQL and the reason for each statement live:
 * <ol>
 *   <li>{@link Enqueue}: jobs enter, in the caller's transaction, deduplicated by job_key;</li>
 *   <li>{@link Admission}: the scheduler's load, candidates, admissions and grants;</li>
 *   <li>{@link Leases}: claims under a lease, heartbeats, the reaper, hand-backs, the worker registry;</li>
 *   <li>{@link Completion}: outcomes, fenced on the lease;</li>
 *   <li>{@link OperatorActions}: find, cancel, replay, discard;</li>
 *   <li>{@link Retention}: finished jobs leave the table.</li>
 * </ol>
 * {@link SideEffects} is the handlers' idempotency store (a key's effect runs once, its result is kept).
 * The API's read-only SQL is in {@link JobQueries}, the dashboards' rollup in {@link DashboardStore}. Every
 * statement is a {@link NamedSql} run with this store's {@link QueueClock}.
 *
 * <p>Methods that take a {@link DSLContext} run on it as given: pass the caller's transaction to enqueue
 * atomically with the caller's own writes; pass a pool-backed context for a statement in its own short
 * transaction. Methods that write several statements open a transaction on the context they are given
 * (nested in the caller's when there is one).
 */
public final class JobStore {
    private static final org.slf4j.Logger SUBMIT_LOG = org.slf4j.LoggerFactory.getLogger(JobStore.class);
    /** Jobs of one insert statement; a bigger enqueue is split. */
    public static final int MAX_BATCH = Enqueue.MAX_BATCH;

    private final QueueClock clock;
    private final Enqueue enqueue;
    private final Admission admission;
    private final Leases leases;
    private final Completion completion;
    private final OperatorActions actions;
    private final Retention retention;
    private final SchedulerStates schedulerStates;
    private final SideEffects sideEffects;

    /** A store on the database's clock (production). */
    public JobStore() {
        this(QueueClock.SYSTEM);
    }

    /** A store whose statements run on the given clock (a {@link SettableClock} in tests). */
    public JobStore(QueueClock clock) {
        this.clock = clock;
        this.enqueue = new Enqueue(clock);
        this.admission = new Admission(clock);
        this.leases = new Leases(clock);
        this.completion = new Completion(clock);
        this.actions = new OperatorActions(clock);
        this.retention = new Retention(clock);
        this.schedulerStates = new SchedulerStates(clock);
        this.sideEffects = new SideEffects(clock);
    }

    public QueueClock clock() { return clock; }
    public Admission admission() { return admission; }
    public Leases leases() { return leases; }
    public Completion completion() { return completion; }
    public Retention retention() { return retention; }
    public SchedulerStates schedulerStates() { return schedulerStates; }
    public SideEffects sideEffects() { return sideEffects; }

    // ------------------------------------------------------------------------------------------- enqueue

    /**
     * Enqueues one job in the caller's transaction. With a job_key that the tenant already used (a live
     * job, or a finished one still within retention) it returns that job and creates nothing.
     */
    public EnqueueResult enqueue(DSLContext tx, JobRequest request) {
        return enqueue.enqueueAll(tx, List.of(request)).get(0);
    }

    /** Many jobs in the caller's transaction, in a few statements; results in request order. See {@link Enqueue}. */
    public List<EnqueueResult> enqueueAll(DSLContext tx, List<JobRequest> requests) {
        return enqueue.enqueueAll(tx, requests);
    }

    /**
     * As {@link #enqueueAll(DSLContext, List)}, but a job a tenant grant inserted ready wakes no worker until the
     * caller does ({@link Leases#wakeWorkers}) once its transaction committed: see {@link Enqueue#INSERT_JOBS_QUIET}.
     * For a caller that owns the transaction (the API with FAIRQ_SUBMIT_START=flush); in an application's own
     * transaction the wake-up belongs in it.
     */
    public List<EnqueueResult> enqueueAllWakingAfterCommit(DSLContext tx, List<JobRequest> requests) {
        return enqueue.enqueueAll(tx, requests, Enqueue.Commit.CALLER_WAKES);
    }

    /**
     * As {@link #enqueueAll(DSLContext, List)}, for a caller that owns the transaction and acknowledges its client
     * itself (the API): the commit does not wait for the WAL flush, so the jobs are visible to the workers at once,
     * and a job a tenant grant inserted ready wakes no worker until the caller does ({@link Leases#wakeWorkers}).
     * The caller must call {@link #awaitDurable} after the commit and before it acknowledges anything; a database
     * crash before that can lose the jobs, which the client, never having been answered, submits again (see
     * {@link Enqueue#INSERT_JOBS_UNFLUSHED}). In an application's own transaction use enqueueAll: its commit is the
     * acknowledgement.
     */
    public List<EnqueueResult> enqueueAllUnflushed(DSLContext tx, List<JobRequest> requests) {
        return enqueue.enqueueAll(tx, requests, Enqueue.Commit.UNFLUSHED);
    }

    /**
     * A worker of this process that takes granted single-job enqueues at once ({@link LocalStarts}); null: none.
     * Set by the worker at its start, cleared at its stop.
     */
    public synchronized void startLocally(LocalStarts starts) {
        enqueue.startLocally(starts);
    }

    /** The worker that set {@code starts} stops: no enqueue starts a job through it from now on. */
    public synchronized void stopStartingLocally(LocalStarts starts) {
        if (enqueue.localStarts() == starts) startLocally(null);
    }

    /**
     * For a caller that owns the commit (the API): the jobs its enqueue inserted running through this process's
     * worker start now. Call it right after the commit; an application's own enqueue needs nothing (its commit
     * sends the worker their ids).
     */
    public void startCommitted(List<EnqueueResult> results) {
        LocalStarts starts = enqueue.localStarts();
        if (starts == null) return;
        for (EnqueueResult r : results) {
            if (r.created() && r.job().getStatus() == dev.fairq.schema.generated.enums.JobStatus.running) starts.committed(r.job().getId());
        }
    }

    /**
     * Enqueues in a transaction of its own, the way the API submits: for an application that has no writes of its
     * own to commit with the jobs. {@code db} must be pool-backed (autocommit), not a transaction. Returns once the
     * jobs are durable, as {@link #enqueueAll} returns at the commit; a job may start before that (see below).
     *
     * <p>The connections of {@code db}'s pool must be in autocommit (HikariCP's default; a pool configured with
     * autoCommit false makes every call throw). A context of the caller's open transaction makes it throw too; a
     * pool-backed context used while a transaction of the caller's is open elsewhere commits on its own, apart.
     *
     * <p>One job is one statement in autocommit, several are one transaction. The commit does not wait for the WAL
     * flush ({@link #enqueueAllUnflushed}), so a job that a grant admitted starts at once: on a free thread of this
     * process's worker (it was inserted running), or by a claim after the workers' wake-up. Then the call waits for
     * the flush ({@link #awaitDurable}) on the same connection, so that a crash and restart in between makes it fail
     * instead of returning for jobs the server lost. A job can thus run and yet be lost by a database crash before
     * this call returns; the caller, never answered, enqueues it again (at least once, as every job). Against
     * {@code dsl.transactionResult(tx -> enqueueAll(tx.dsl(), jobs))} it saves the COMMIT's round trip before the
     * start: 0.7 ms of the latency bench's 2.1 ms enqueue call at 50 jobs a second (PostgreSQL 15, stop 47).
     */
    public List<EnqueueResult> submit(DSLContext db, List<JobRequest> requests) {
        if (requests.isEmpty()) return List.of();
        return db.connectionResult(c -> {
            // in a caller's transaction the unflushed commit would be the caller's, with all its writes
            if (!c.getAutoCommit()) throw new IllegalStateException("submit runs its own transaction: in a transaction of yours, use enqueueAll");
            DSLContext one = db.configuration().derive(c).dsl();
            List<EnqueueResult> results = requests.size() == 1 ? enqueueAllUnflushed(one, requests)
                    : one.transactionResult(tx -> enqueueAllUnflushed(tx.dsl(), requests));
            startCommitted(results);
            for (EnqueueResult r : results) {
                if (r.created() && r.job().getStatus() == dev.fairq.schema.generated.enums.JobStatus.ready) {
                    // INSERT_JOBS_UNFLUSHED wakes no worker in its statement. The jobs are committed: a failed
                    // wake must not make the caller enqueue them again (the workers' next claim finds them)
                    try {
                        leases.wakeWorkers(one);
                    } catch (RuntimeException e) {
                        SUBMIT_LOG.warn("submit: the workers' wake-up failed; the ready jobs wait for their next claim", e);
                    }
                    break;
                }
            }
            awaitDurable(one);
            return results;
        });
    }

    /** {@link #submit(DSLContext, List)} for one job. */
    public EnqueueResult submit(DSLContext db, JobRequest request) {
        return submit(db, List.of(request)).get(0);
    }

    /**
     * Returns once everything this session saw committed is durable (flushed to the WAL on disk, and on synchronous
     * standbys where the deployment has them). See {@link Enqueue#AWAIT_DURABLE}.
     */
    public void awaitDurable(DSLContext ctx) {
        enqueue.awaitDurable(ctx);
    }

    // ----------------------------------------------------------------------------------------- admission

    public Admission.QueueLoad load(DSLContext ctx, Duration workerLiveness) {
        return admission.load(ctx, workerLiveness);
    }

    /** {@code withGrants} false: without the tenant grants ({@link Admission#LOAD_WITHOUT_GRANTS}). */
    public Admission.QueueLoad load(DSLContext ctx, Duration workerLiveness, boolean withGrants) {
        return admission.load(ctx, workerLiveness, withGrants);
    }

    /** Tenants that have admissible pending work at all. */
    public List<String> tenantsWithWork(DSLContext ctx) {
        return admission.tenantsWithWork(ctx);
    }

    public Map<String, List<Long>> admissionCandidates(DSLContext ctx, Map<String, Integer> limits) {
        return admission.candidates(ctx, limits);
    }

    public List<Long> admit(DSLContext ctx, List<Long> ids, List<Double> ranks) {
        return admission.admit(ctx, ids, ranks);
    }

    /** Admits without waking the workers; the caller wakes them once the statement committed ({@link Waker}). */
    public List<Long> admitQuietly(DSLContext ctx, List<Long> ids, List<Double> ranks) {
        return admission.admitQuietly(ctx, ids, ranks);
    }

    /** Admits the given jobs behind everything already ready, in the given order (tools and tests). */
    public List<Long> admit(DSLContext ctx, List<Long> idsInOrder) {
        return admission.admit(ctx, idsInOrder);
    }

    // -------------------------------------------------------------------------------------------- leases

    public List<ClaimedJob> claim(DSLContext ctx, String workerId, int limit, Duration lease) {
        return leases.claim(ctx, workerId, limit, lease);
    }

    /** Extends the leases of the given attempts (job id to attempt); returns the ids still held. */
    public Set<Long> heartbeat(DSLContext ctx, String workerId, int capacity, Map<Long, Integer> attempts, Duration lease) {
        return leases.heartbeat(ctx, workerId, capacity, attempts, lease);
    }

    public int reapExpired(DSLContext ctx, int limit) {
        return leases.reapExpired(ctx, limit);
    }

    /** As {@link #reapExpired}, saying which jobs and what each became. */
    public List<Leases.Reaped> reapExpiredJobs(DSLContext ctx, int limit) {
        return leases.reapExpiredJobs(ctx, limit);
    }

    /** Hands back claimed attempts (job id to attempt) that never started. */
    public int release(DSLContext ctx, String workerId, Map<Long, Integer> attempts) {
        return leases.release(ctx, workerId, attempts);
    }

    // ---------------------------------------------------------------------------------------- completion

    public Set<Long> finish(DSLContext ctx, String workerId, List<? extends JobOutcome> outcomes) {
        return completion.finish(ctx, workerId, outcomes);
    }

    // ---------------------------------------------------------------------------------- operator actions

    public Optional<JobsRecord> find(DSLContext ctx, long id) {
        return actions.find(ctx, null, id);
    }

    /** A tenant's own job; another tenant's id is simply not found. */
    public Optional<JobsRecord> find(DSLContext ctx, String tenantId, long id) {
        return actions.find(ctx, tenantId, id);
    }

    /**
     * pending or ready -> cancelled; running -> cancel requested (the worker stops it); an ended job is left
     * as it is. {@code tenantId} null means any tenant (admin). See {@link OperatorActions#cancel}.
     */
    public OperatorActions.ActionOutcome cancel(DSLContext ctx, String tenantId, long id) {
        return actions.cancel(ctx, tenantId, id);
    }

    /** pending or ready -> cancelled; a running or ended job is left alone (WRONG_STATUS). */
    public OperatorActions.ActionOutcome cancelWaiting(DSLContext ctx, String tenantId, long id) {
        return actions.cancelWaiting(ctx, tenantId, id);
    }

    /** dead or cancelled -> pending, attempts reset, due now. */
    public OperatorActions.ActionOutcome replay(DSLContext ctx, String tenantId, long id) {
        return actions.replay(ctx, tenantId, id);
    }

    /** dead -> cancelled (kept for the record). */
    public OperatorActions.ActionOutcome discard(DSLContext ctx, String tenantId, long id) {
        return actions.discard(ctx, tenantId, id);
    }

    // ----------------------------------------------------------------------------------------- retention

    public int deleteFinished(DSLContext ctx, Duration retention, Duration deadRetention, int batch) {
        return this.retention.deleteFinished(ctx, retention, deadRetention, batch);
    }
}

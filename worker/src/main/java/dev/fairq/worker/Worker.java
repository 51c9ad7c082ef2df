package dev.fairq.worker;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.Completion;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.LocalStarts;
import dev.fairq.schema.QueueClock;
import dev.fairq.schema.Waker;
import dev.fairq.schema.WorkerRoute;
import org.jooq.DSLContext;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;

/**
 * One worker process's engine. Five moving parts, each on its own thread so none waits for another:
 * <ul>
 *   <li>the claimer takes ready jobs in batches (one statement per batch) as handler threads free up,
 *       holding up to three claim round trips' worth of work beyond them (claimSize), and
 *       sleeps on LISTEN/NOTIFY, with polling as the fallback, when there is nothing to take;</li>
 *   <li>handler threads (a bounded pool) run jobs outside any transaction; a claimed job starts only while
 *       its lease has {@link WorkerConfig#startMargin()} left on this JVM's monotonic clock, so a job whose
 *       lease may have lapsed during a pause (GC, SIGSTOP, a migrated VM) is handed back, not run;</li>
 *   <li>the completer records outcomes in batches: whatever finished while the previous batch was being
 *       written goes in the next one (group commit), so there is no round trip per job and no added wait;</li>
 *   <li>maintenance extends the leases of all held jobs in one statement (a job whose lease is gone is
 *       stopped: its handler is interrupted and its outcome is not written), reaps expired leases, and
 *       checks for cancel requests the listener may have missed;</li>
 *   <li>the watchdog interrupts attempts that run past their time limit and abandons (and replaces) handler
 *       threads that ignore an interruption, up to {@link WorkerConfig#maxAbandonedThreads()}.</li>
 * </ul>
 * The listener thread turns notifications into wake-ups (fairq_ready) and cancellations (fairq_cancel, the
 * job id as payload). Every interval is measured on the store's {@link QueueClock}, so tests move time.
 *
 * <p>{@link #close()} is the graceful stop, bounded by {@link WorkerConfig#shutdownGrace()}: claim nothing
 * more, hand back claimed jobs that never started, let running ones finish until the grace minus its
 * reserve, leave those still running to their leases, record every outcome, unregister.
 */
public final class Worker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    static final String READY_CHANNEL = "fairq_ready";
    static final String CANCEL_CHANNEL = "fairq_cancel";
    /**
     * The longest time between two renewals of the worker's registry row, whatever the lease: the registry's readers
     * count a worker live while its heartbeat is under 30 s old (SchedulerConfig.DEFAULT_WORKER_LIVENESS), so it is
     * renewed at least three times within that: with heartbeats further apart, the row alone is renewed between them.
     */
    static final Duration REGISTRY_BEAT = Duration.ofSeconds(10);

    /** Opens a connection outside any pool (for LISTEN). */
    @FunctionalInterface
    public interface ConnectionFactory {
        Connection open() throws SQLException;
    }

    private final WorkerConfig config;
    private final HandlerRegistry handlers;
    private final JobStore store;
    private final DSLContext db;
    private final ConnectionFactory listenConnections;
    private final WorkerObserver observer;
    private final DoubleSupplier random;
    /** The queue's clock (the store's): intervals here are measured on it, never on System.nanoTime() inline. */
    private final QueueClock clock;

    /** Attempts whose lease this process holds: claimed and not yet recorded as finished, by job id. */
    private final Map<Long, Attempt> held = new ConcurrentHashMap<>();
    /** Attempts whose handler runs now (abandoned ones included until they return). */
    private final Set<Attempt> running = ConcurrentHashMap.newKeySet();
    /** Jobs claimed whose handler has not returned yet (running, or waiting for a thread). */
    private final AtomicInteger outstanding = new AtomicInteger();
    /** Threads reserved for an enqueue's statement in flight ({@link LocalStarts}), until it used or gave back the slot. */
    private final AtomicInteger slotsOut = new AtomicInteger();
    /**
     * Jobs an enqueue inserted running under this worker's lease, until their commit names them (or
     * {@link #AWAIT_COMMIT_MAX_NANOS}), oldest first.
     */
    private final Map<Long, Awaiting> awaitingCommit = new LinkedHashMap<>(); // guarded by itself
    /**
     * Commits that named a job before its enqueue's thread had registered it (an autocommit statement: its commit
     * and notification come before the statement's answer is read), by job id, when (queue clock): the job starts
     * as soon as it is registered. Guarded by awaitingCommit.
     */
    private final Map<Long, Long> committedEarly = new LinkedHashMap<>();
    private boolean localStartsClosed; // guarded by awaitingCommit
    private final LocalStarts localStarts = new Starts();
    /** One permit per handler that returned: wakes the claimer when it waits for room. */
    private final Semaphore slotFreed = new Semaphore(0);
    /**
     * For the prefetch depth: moving averages of a claim round trip (nanoseconds) and of a thread's finishing
     * rate (1 / a handler run's nanoseconds). A rate, not a time: under a mix of 5 ms and 200 ms jobs the mean
     * run time is dominated by the slow jobs while the threads free up at the quick ones' pace (./bench/run
     * costfair: utilisation 0.94 with the mean time).
     */
    private volatile double claimNanos;
    private volatile double handlerRate;
    /** When a handler last returned (queue clock nanoseconds); meaningful once handlerRate is known. */
    private volatile long lastFreedNanos;
    private final Semaphore wake = new Semaphore(0);
    /**
     * Claimed jobs waiting for a handler thread, in the scheduler's claim order (ready_rank, then id) rather
     * than in the order they were claimed: a job claimed just now at the front of that order (a newcomer's,
     * or one admitted by a grant) does not wait behind jobs prefetched earlier. Measured: such a job waited
     * up to 63 ms behind 52 prefetched ones under a flood (./bench/run fairness, b_flood_fair_slowest).
     */
    private final PriorityBlockingQueue<Runnable> work = new PriorityBlockingQueue<>(64,
            Comparator.comparingDouble((Runnable r) -> ((JobTask) r).attempt.job.readyRank())
                    .thenComparingLong(r -> ((JobTask) r).attempt.job.id()));
    private final ThreadPoolExecutor handlerPool;
    private final LinkedBlockingQueue<Finished> outcomes = new LinkedBlockingQueue<>();
    private final ScheduledThreadPoolExecutor maintenance;
    /** The claimer's "buffer ran dry" wake-up to the scheduler, sent off its thread (see {@link Waker}). */
    private final Waker waker;
    private final AtomicInteger handlerThreads = new AtomicInteger();
    /** Abandoned handler threads still running; of those, how many the pool grew by to replace them. */
    private final AtomicInteger abandonedAlive = new AtomicInteger();
    private int replacements; // guarded by poolLock
    private final Object poolLock = new Object();

    private volatile boolean claiming;
    /** Set when the stop begins: claimed jobs that have not started are handed back instead. */
    private volatile boolean stopping;
    private volatile boolean stopped;
    /** Counted down when the first {@link #close} has finished: a second one waits for it. */
    private final java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
    /** During a stop, the queue clock's instant after which the completer gives up retrying. */
    private volatile long stopDeadlineNanos = Long.MAX_VALUE;
    private volatile Connection listenConnection;
    /**
     * The LISTEN connection is up: only then does this worker take jobs in their enqueue, so that their commit's
     * notification reaches it (while it is down they go through the ready buffer, as before).
     */
    private volatile boolean listening;
    /** Tenants of held jobs found paused by the last periodic check: their jobs not yet started are handed back. */
    private volatile Set<String> pausedTenants = Set.of();
    private Thread claimer;
    private Thread completer;
    private Thread listener;
    private Thread watchdog;
    /** What this process can run (its queues, its handlers' types, its reservations), registered at start. */
    private volatile WorkerRoute route;

    /**
     * An attempt's outcome (null: hand it back) waiting to be recorded; {@code nanos} is its handler's run time,
     * reported to the observer once the outcome is recorded (-1: not reported, the attempt never ran to an end).
     */
    private record Finished(Attempt attempt, JobOutcome outcome, long nanos) {
        Finished(Attempt attempt, JobOutcome outcome) {
            this(attempt, outcome, -1);
        }
    }

    public Worker(WorkerConfig config, HandlerRegistry handlers, JobStore store, DSLContext db,
                  ConnectionFactory listenConnections) {
        this(config, handlers, store, db, listenConnections, WorkerObserver.NONE, () -> ThreadLocalRandom.current().nextDouble());
    }

    public Worker(WorkerConfig config, HandlerRegistry handlers, JobStore store, DSLContext db,
                  ConnectionFactory listenConnections, WorkerObserver observer, DoubleSupplier random) {
        this.config = config;
        this.handlers = handlers;
        this.store = store;
        this.db = db;
        this.listenConnections = listenConnections;
        this.observer = observer;
        this.random = random;
        this.clock = store.clock();
        this.handlerPool = new ThreadPoolExecutor(config.threads(), config.threads(), 0, TimeUnit.MILLISECONDS, work, r -> {
            Thread t = new Thread(r, "fairq-handler-" + handlerThreads.incrementAndGet());
            // an abandoned handler that never returns must not keep the JVM alive after the worker stopped
            t.setDaemon(true);
            return t;
        });
        // two threads: a slow reaper or heartbeat statement does not hold back the cancel check
        this.maintenance = new ScheduledThreadPoolExecutor(2, r -> new Thread(r, "fairq-worker-maintenance"));
        this.waker = new Waker("fairq-worker-waker", () -> store.leases().wakeScheduler(db));
    }

    public String id() {
        return config.workerId();
    }

    /** How many jobs this process holds the lease of right now. */
    public int heldCount() {
        return held.size();
    }

    /** Whether the last periodic check found this tenant paused (its claimed jobs are then not started). */
    boolean sawPaused(String tenantId) {
        return pausedTenants.contains(tenantId);
    }

    /** Handler threads that ignored an interruption and still run, abandoned (replaced up to the cap). */
    public int abandonedThreads() {
        return abandonedAlive.get();
    }

    /** True when the abandoned threads use up every replacement the configuration allows. */
    public boolean abandonedCapReached() {
        synchronized (poolLock) {
            return replacements >= config.maxAbandonedThreads() && abandonedAlive.get() > 0;
        }
    }

    /** Handler threads alive in the pool now (the configured ones plus replacements of abandoned ones). */
    int handlerPoolSize() {
        return handlerPool.getPoolSize();
    }

    public synchronized Worker start() {
        if (claimer != null) throw new IllegalStateException("already started");
        // handlers registered later are not served: the route says what the scheduler may send here
        route = WorkerRoute.of(config.queues(), handlers.types(), config.reserved());
        store.leases().registerWorker(db, config.workerId(), config.threads(), route);
        claiming = true;
        // a worker with reserved threads claims per queue only what fits its reservations: it takes no job in an enqueue
        if (config.reserved().isEmpty()) store.startLocally(localStarts);
        claimer = new Thread(this::claimLoop, "fairq-claimer");
        completer = new Thread(this::completeLoop, "fairq-completer");
        listener = new Thread(this::listenLoop, "fairq-listener");
        watchdog = new Thread(this::watchLoop, "fairq-watchdog");
        watchdog.setDaemon(true);
        completer.start();
        listener.start();
        watchdog.start();
        claimer.start();
        long hb = config.heartbeatInterval().toMillis();
        maintenance.scheduleWithFixedDelay(this::heartbeat, hb, hb, TimeUnit.MILLISECONDS);
        // the heartbeat also proves the worker alive in the registry, whose readers give it 30 s (the scheduler's
        // routing, GET /v1/admin/workers' live, the health check): a long lease's heartbeat (a third of
        // FAIRQ_LEASE_MS=240000 is 80 s) had left the worker counted dead most of the time between two. Between
        // such heartbeats the registry alone is renewed (the leases keep their own rhythm)
        long beat = REGISTRY_BEAT.toMillis();
        if (hb > beat) maintenance.scheduleWithFixedDelay(this::registryBeat, beat, beat, TimeUnit.MILLISECONDS);
        long reap = config.reapInterval().toMillis();
        maintenance.scheduleWithFixedDelay(this::reap, reap, reap, TimeUnit.MILLISECONDS);
        long check = config.cancelCheckInterval().toMillis();
        maintenance.scheduleWithFixedDelay(this::checkCancelRequests, check, check, TimeUnit.MILLISECONDS);
        log.info("worker {} started: {} threads, prefetch {}, lease {}, heartbeat {}, start margin {}, default "
                        + "time limit {}, shutdown grace {}; queues {}, reserved {}, types {}", config.workerId(),
                config.threads(), config.prefetch(), config.lease(), config.heartbeatInterval(), config.startMargin(),
                config.defaultTimeout(), config.shutdownGrace(), config.queues() == null ? "all" : config.queues(),
                config.reserved(), route.types());
        return this;
    }

    // -------------------------------------------------------------------------------------------- claiming

    private void claimLoop() {
        while (claiming) {
            if (!config.reserved().isEmpty()) {
                if (!claimWithReservations()) break;
                continue;
            }
            int busy = outstanding.get();
            // Back-pressure from the completer: jobs whose outcome is not recorded yet still hold a lease,
            // so claiming must not outrun recording (else leases pile up and every statement grows).
            int unrecorded = held.size() - busy;
            int want = claimSize(config.threads(), config.prefetch(),
                    jobsPerClaimRoundTrip(config.threads(), config.prefetch(), handlerRate, claimNanos),
                    busy + localStartsHeld(clock.nanoTime()), unrecorded);
            if (want == 0) {
                try {
                    slotFreed.tryAcquire(config.pollInterval().toMillis(), TimeUnit.MILLISECONDS);
                    slotFreed.drainPermits();
                } catch (InterruptedException e) {
                    break;
                }
                continue;
            }
            List<ClaimedJob> jobs;
            // Read before the statement is sent: the database starts the lease at its own now(), later than
            // this, so t0 + lease is a lower bound of the lease's end on this JVM's clock.
            long t0 = clock.nanoTime();
            try {
                jobs = store.leases().claim(db, config.workerId(), want, config.lease(), config.queues(), route.types());
            } catch (RuntimeException e) {
                log.warn("claim failed, retrying after the poll interval", e);
                if (!sleepUntilWoken()) break;
                continue;
            }
            long took = clock.nanoTime() - t0;
            claimNanos = claimNanos == 0 ? took : claimNanos * 0.8 + took * 0.2;
            observer.claimed(jobs.size(), took);
            if (log.isDebugEnabled()) log.debug("claimed {} of {} in {} us", jobs.size(), want, took / 1000);
            dispatch(jobs, t0);
            if (jobs.size() < want) {
                wakeScheduler(); // the buffer ran dry while threads are free: refill it now
                if (!sleepUntilWoken()) break;
            }
        }
    }

    /**
     * Everything claimed is dispatched, even when a stop began meanwhile: the stop then either runs it or hands
     * it back, so no claimed job is stranded until its lease runs out. {@code t0}: when the claim was sent.
     */
    private void dispatch(List<ClaimedJob> jobs, long t0) {
        outstanding.addAndGet(jobs.size());
        long received = clock.nanoTime();
        for (ClaimedJob job : jobs) {
            Attempt attempt = new Attempt(job, t0 + config.lease().toNanos());
            attempt.receivedNanos = received;
            JobTask task = new JobTask(attempt);
            attempt.task = task;
            Attempt previous = held.put(job.id(), attempt);
            if (previous != null) {
                // this process claimed the job again, so the reaper took the earlier attempt back
                leaseLost(previous, "the job was claimed again (attempt " + job.attempt() + ")");
            }
            handlerPool.execute(task);
        }
    }

    /**
     * One claim round of a worker with reserved threads ({@link WorkerConfig#reserved()}): each reserved queue
     * may fill its own threads, and any served queue the shared ones ({@link WorkerConfig#sharedThreads()}); a
     * queue's jobs beyond its reservation count as shared. Only what can start at once is claimed (no prefetch),
     * so a claimed job never waits for a thread another queue holds in reserve. Returns false to stop.
     */
    private boolean claimWithReservations() {
        Map<String, Integer> usage = new HashMap<>();
        int unsettled = 0;
        for (Attempt a : held.values()) {
            if (a.settled.get()) continue;
            usage.merge(a.job.queue(), 1, Integer::sum);
            unsettled++;
        }
        int unrecorded = held.size() - unsettled;
        int sharedUsed = 0;
        for (Map.Entry<String, Integer> u : usage.entrySet()) {
            sharedUsed += Math.max(0, u.getValue() - config.reserved().getOrDefault(u.getKey(), 0));
        }
        int sharedRoom = Math.max(0, config.sharedThreads() - sharedUsed);
        boolean room = false, cameShort = false;
        if (unrecorded <= 2 * config.threads()) { // back-pressure from the completer, as in the prefetching loop
            try {
                for (Map.Entry<String, Integer> r : config.reserved().entrySet()) {
                    int free = r.getValue() - usage.getOrDefault(r.getKey(), 0);
                    if (free <= 0) continue;
                    room = true;
                    cameShort |= claimAndDispatch(free, List.of(r.getKey())) < free;
                }
                if (sharedRoom > 0) {
                    room = true;
                    cameShort |= claimAndDispatch(sharedRoom, config.queues()) < sharedRoom;
                }
            } catch (RuntimeException e) {
                log.warn("claim failed, retrying after the poll interval", e);
                return sleepUntilWoken();
            }
        }
        if (!room) return awaitPermitOrPoll(slotFreed);
        if (cameShort) {
            wakeScheduler();
            return sleepUntilWoken();
        }
        return claiming;
    }

    /**
     * About how many jobs the threads finish during one claim round trip (Little's law: threads x claim time x
     * a thread's finishing rate per nanosecond), at most the prefetch. One until a job has finished: a fresh
     * worker that took the whole prefetch (128) on slow jobs held them while idle workers waited (an ordering key's
     * head 2 minutes behind 60 s jobs), and lost their attempts to the reaper if it died; no-ops finish within
     * the first claim's round trip, so a drain reaches its deep prefetch at the second claim.
     */
    static double jobsPerClaimRoundTrip(int threads, int prefetch, double handlerRate, double claimNanos) {
        if (handlerRate <= 0) return Math.min(prefetch, 1);
        if (claimNanos <= 0) return prefetch;
        return Math.min(prefetch, threads * claimNanos * handlerRate);
    }

    /**
     * How many jobs to claim now (0: wait for a thread to free up). The worker holds up to three round trips'
     * worth of jobs beyond its threads ({@code perClaim} each, capped by the prefetch) and claims again, in a
     * worthwhile batch, at the latest while two round trips' worth still wait for a thread: so no thread waits
     * for a claim, even one that takes twice its usual time (with 5 ms jobs and 8 threads, claiming only once every
     * held job had started drained 1,079-1,289 jobs/s of 1,600; holding two round trips' worth 1,241-1,405;
     * three 1,302-1,460; ./bench/run costfair's utilisation 0.90 -> 0.94-0.95 -> 0.95-0.96). Quick jobs get a deep
     * prefetch; slow jobs one held job at most, so a claimed-but-waiting job (one no other worker can start) waits
     * about three round trips, or one job's run when jobs are slow. At once when nothing is running; never more
     * than the completer can record ({@code unrecorded}: finished attempts whose outcome is not written yet).
     */
    static int claimSize(int threads, int prefetch, double perClaim, int busy, int unrecorded) {
        int limit = threads + (int) Math.min(prefetch, Math.ceil(3 * perClaim));
        int want = Math.min(limit - busy, 2 * limit - busy - unrecorded);
        if (want <= 0 || (busy > 0 && want < Math.max(1, Math.min(limit / 4, (int) Math.ceil(perClaim))))) return 0;
        return want;
    }

    /** Claims up to {@code n} jobs of {@code queues} and hands them to the threads; how many it got. */
    private int claimAndDispatch(int n, Collection<String> queues) {
        long t0 = clock.nanoTime();
        List<ClaimedJob> got = store.leases().claim(db, config.workerId(), n, config.lease(), queues, route.types());
        observer.claimed(got.size(), clock.nanoTime() - t0);
        dispatch(got, t0);
        return got.size();
    }

    /**
     * Wakes the claimer as a NOTIFY fairq_ready would: for a scheduler or an API in this process that just made jobs
     * ready ({@link Waker}'s local wake), so this worker does not wait for their NOTIFY, which queues on PostgreSQL's
     * notification lock behind other transactions' commits.
     */
    public void wakeClaimer() {
        wake.release();
    }

    /** Asks the scheduler to refill the buffer; returns at once (the waker sends it). */
    private void wakeScheduler() {
        waker.wake();
    }

    /** Waits for a notification or the poll interval; false when the claimer should stop. */
    private boolean sleepUntilWoken() {
        return awaitPermitOrPoll(wake);
    }

    /** Waits for a permit of {@code signal} (then drops any others) or the poll interval; false to stop. */
    private boolean awaitPermitOrPoll(Semaphore signal) {
        try {
            signal.tryAcquire(config.pollInterval().toMillis(), TimeUnit.MILLISECONDS);
            signal.drainPermits();
            return claiming;
        } catch (InterruptedException e) {
            return false;
        }
    }

    /**
     * LISTEN on the dedicated connection: fairq_ready wakes the claimer, fairq_cancel (payload: a job id)
     * stops that job if this process runs it. A cancel sent while the connection is down is found by the
     * periodic check ({@link #checkCancelRequests()}).
     */
    private void listenLoop() {
        while (!stopped) {
            try (Connection c = listenConnections.open()) {
                listenConnection = c;
                try (Statement s = c.createStatement()) {
                    s.execute("LISTEN " + READY_CHANNEL);
                    s.execute("LISTEN " + CANCEL_CHANNEL);
                }
                PGConnection pg = c.unwrap(PGConnection.class);
                wake.release(); // jobs may have been admitted while we were not listening
                listening = true; // from here a commit's 's:' reaches this worker: it may take jobs in their enqueue
                checkAwaitingCommit(0); // jobs started in their enqueue may have committed while we were not listening
                while (!stopped) {
                    // at least 2 ms: on this connection a 1 ms wait returns at once (ListenSocketFactory)
                    PGNotification[] ns = pg.getNotifications((int) Math.max(2, config.pollInterval().toMillis()));
                    if (ns == null) continue;
                    boolean ready = false;
                    for (PGNotification n : ns) {
                        if (CANCEL_CHANNEL.equals(n.getName())) cancelRequested(n.getParameter());
                        else if (n.getParameter() != null && n.getParameter().startsWith(STARTED_PREFIX)) startedInEnqueue(n.getParameter());
                        else ready = true;
                    }
                    if (ready) wake.release();
                }
            } catch (SQLException e) {
                if (stopped) break;
                log.warn("LISTEN connection lost, falling back to polling until it is back", e);
                try {
                    Thread.sleep(Math.min(5000, config.pollInterval().toMillis() * 4));
                } catch (InterruptedException ie) {
                    break;
                }
            } finally {
                listening = false;
                listenConnection = null;
            }
        }
    }

    /** 's:' + a job id on fairq_ready: an enqueue that inserted it running through a slot committed (Enqueue). */
    static final String STARTED_PREFIX = "s:";

    /** 's:' + job id + ':' + worker id; another worker's is ignored. */
    private void startedInEnqueue(String payload) {
        int colon = payload.indexOf(':', STARTED_PREFIX.length());
        long id;
        try {
            id = Long.parseLong(payload.substring(STARTED_PREFIX.length(), colon < 0 ? payload.length() : colon));
        } catch (NumberFormatException e) {
            log.warn("ignoring a {} notification that names no job: '{}'", READY_CHANNEL, payload);
            return;
        }
        if (colon >= 0 && payload.substring(colon + 1).equals(config.workerId())) localStarts.committed(id);
    }

    // ------------------------------------------------------------------------------ starts in the enqueue

    /** A job inserted running through a slot of this worker; {@code t0}: when the slot was taken, before the statement. */
    private record Awaiting(ClaimedJob job, long t0, String xact) {}

    /**
     * How long a job inserted running but not yet committed counts as holding a thread: an API commit follows its
     * statement within a millisecond, an application's within its transaction. Longer (a slow transaction, or one
     * rolled back, which nobody reports), the thread counts as free again, so a rollback costs no capacity; the job
     * still starts if its commit comes while its lease lasts (it then waits for the next free thread, at the front).
     */
    static final long SLOT_HOLD_NANOS = 100_000_000L;
    /** Bounds {@link #committedEarly}: far more than the threads, which bound the slots out. */
    private static final int COMMITTED_EARLY_MAX = 1_024;
    /**
     * How long, and how many, jobs inserted running here are remembered awaiting their commit. Past their lease too:
     * an application's transaction may commit after the lease ran out, and the job is then handed back (the start
     * check), the attempt not counted; forgotten, it was reaped with the attempt counted, dead without a run at
     * max_attempts 1. Rolled-back enqueues are never named: a heartbeat forgets those whose transaction ended
     * (checkAwaitingCommit). At the count no new job is taken in its enqueue (none awaited is dropped).
     */
    static final long AWAIT_COMMIT_MAX_NANOS = 3_600_000_000_000L;
    static final int AWAITING_COMMIT_MAX = 1_024;

    /** Whether an enqueue in this process may start a job on this worker now (it listens, it is not stopping). */
    public boolean takesStartsInEnqueue() {
        return listening && claiming && !stopping && config.reserved().isEmpty();
    }

    /** For tests: a stop has begun. */
    boolean isStopping() {
        return stopping;
    }

    /** For tests: threads held for starts in an enqueue now. */
    int threadsHeldForStartsInEnqueue() {
        return localStartsHeld(clock.nanoTime());
    }

    /** For tests: jobs inserted running here whose commit is awaited (rolled-back ones too, until a bound drops them). */
    int awaitingCommitCount() {
        synchronized (awaitingCommit) {
            return awaitingCommit.size();
        }
    }

    /** Room for a job inserted running here now ({@link #roomForStartInEnqueue}); under awaitingCommit's lock. */
    private boolean roomToStartHere(long now) {
        int dispatched = outstanding.get();
        return roomForStartInEnqueue(config.threads(), config.prefetch(), handlerRate, claimNanos,
                dispatched + localStartsHeld(now), held.size() - dispatched, now - lastFreedNanos);
    }

    /**
     * The longest a job inserted running here may expect to wait for a thread when every thread is busy: about a
     * claim's own round trip. Inserted ready instead, it would wait for the next claim (the claimer takes a
     * batch once several threads have freed up) and that claim's round trip, then for a thread all the same: under
     * the tenants bench's trickle-under-a-flood (8 threads of 5 ms jobs, 1,100 jobs/s), such jobs waited 20-58 ms
     * for their claim while a thread freed up every 0.6 ms.
     */
    static final long QUEUED_START_MAX_WAIT_NANOS = 2_000_000L;

    /**
     * Whether a job a grant admits in its enqueue may be inserted running under this worker's lease ({@code busy}:
     * jobs dispatched and not finished, plus starts in an enqueue in flight; {@code unrecorded}: finished attempts
     * not written yet). With a free thread, always. With none, only while threads free up quickly, on average
     * (the handlers' rate) and now (one returned within {@link #QUEUED_START_MAX_WAIT_NANOS}: a thread stuck in a
     * long job is not a quick one), and within the claimer's own limit ({@link #claimSize}): the job then waits in
     * the work queue in rank order, ahead of prefetched jobs ranked behind it, exactly as a prefetched job would,
     * without a claim.
     */
    static boolean roomForStartInEnqueue(int threads, int prefetch, double handlerRate, double claimNanos, int busy,
                                         int unrecorded, long sinceFreedNanos) {
        if (busy < threads) return true;
        if (handlerRate <= 0 || sinceFreedNanos > QUEUED_START_MAX_WAIT_NANOS
                || 1.0 / (threads * handlerRate) > QUEUED_START_MAX_WAIT_NANOS) return false;
        int limit = threads + (int) Math.min(prefetch,
                Math.ceil(3 * jobsPerClaimRoundTrip(threads, prefetch, handlerRate, claimNanos)));
        return busy < limit && busy + unrecorded < 2 * limit;
    }

    /** Threads held for starts in an enqueue: statements in flight, and young jobs awaiting their commit. */
    private int localStartsHeld(long now) {
        int n = slotsOut.get();
        synchronized (awaitingCommit) {
            for (Awaiting a : awaitingCommit.values()) if (now - a.t0() < SLOT_HOLD_NANOS) n++;
        }
        return n;
    }

    /**
     * The fallback to the commit's notification (the listener was down, or it is slow), at each heartbeat and when
     * the listener (re)connects: jobs awaiting their commit for at least {@code minAgeNanos} that the database shows
     * committed start now (those whose lease is too short to start them are handed back by the start check).
     */
    private void checkAwaitingCommit(long minAgeNanos) {
        long now = clock.nanoTime();
        List<Long> old = new ArrayList<>();
        Map<Long, String> xacts = new HashMap<>(); // several jobs may share one transaction
        synchronized (awaitingCommit) {
            awaitingCommit.values().removeIf(a -> now - a.t0() >= AWAIT_COMMIT_MAX_NANOS);
            for (Awaiting a : awaitingCommit.values()) {
                if (now - a.t0() < minAgeNanos) continue;
                old.add(a.job().id());
                if (a.xact() != null) xacts.put(a.job().id(), a.xact());
            }
        }
        if (old.isEmpty()) return;
        try {
            // rolled-back enqueues are never named: those whose transaction has ended (asked first, so that the next
            // statement's snapshot sees the rows of the committed ones) and that did not commit a running row here
            // are forgotten, else they stayed the hour, and at AWAITING_COMMIT_MAX no job was taken in its enqueue
            Set<String> ended = xacts.isEmpty() ? Set.of() : store.leases().endedTransactions(db, new ArrayList<>(new HashSet<>(xacts.values())));
            List<Long> committed = store.leases().committedStarts(db, config.workerId(), old);
            for (long id : committed) localStarts.committed(id);
            if (!ended.isEmpty()) {
                Set<Long> started = new HashSet<>(committed);
                synchronized (awaitingCommit) {
                    xacts.forEach((id, x) -> {
                        if (ended.contains(x) && !started.contains(id)) awaitingCommit.remove(id);
                    });
                }
            }
        } catch (RuntimeException e) {
            log.warn("could not check {} jobs started in their enqueue for their commit", old.size(), e);
        }
    }

    /** A job inserted running here after the stop closed the starts: back to ready, fenced (a no-op before its commit). */
    private void handBackStarted(ClaimedJob job) {
        try {
            store.release(db, config.workerId(), Map.of(job.id(), job.attempt()));
        } catch (RuntimeException e) {
            log.warn("could not hand back job {} started in its enqueue during the stop; it runs again once its lease lapses", job.id(), e);
        }
    }

    /** How long a stop waits for the commits of jobs inserted running here before it hands back what it holds. */
    static final long STOP_AWAITS_COMMITS_NANOS = 2_000_000_000L;

    /**
     * Hands a job started in its enqueue to the threads, and asks the scheduler to renew the tenant's grant now: a
     * claim that came short used to ask it (the buffer ran dry), and a start without a claim must too, or the
     * tenant's next job finds no grant until the next timed tick (half the latency benchmark's jobs, 50 a second,
     * went through the scheduler instead).
     */
    private void startNow(ClaimedJob job, long t0) {
        dispatch(List.of(job), t0);
        wakeScheduler();
    }

    private final class Starts implements LocalStarts {
        @Override
        public Slot reserve(String queue, String type) {
            if (!claiming || stopping || !listening || !route.serves(queue, type)) return null;
            long t0 = clock.nanoTime(); // before the statement: t0 + lease is a lower bound of the lease's end
            synchronized (awaitingCommit) {
                // full: no slot, rather than forget the oldest awaited job, whose commit would then start nothing (left
                // running under a lease nobody renews until the reaper took it back, the attempt counted). The job is
                // inserted ready instead; a heartbeat frees the entries of enqueues that rolled back
                if (localStartsClosed || awaitingCommit.size() + slotsOut.get() >= AWAITING_COMMIT_MAX
                        || !roomToStartHere(t0)) return null;
                slotsOut.incrementAndGet();
            }
            return new Slot() {
                private boolean done;

                @Override public String workerId() { return config.workerId(); }

                @Override public long leaseMillis() { return config.lease().toMillis(); }

                @Override
                public void claimed(ClaimedJob job, String transaction) {
                    synchronized (awaitingCommit) {
                        if (done) return;
                        done = true;
                        slotsOut.decrementAndGet();
                        if (!localStartsClosed) {
                            if (committedEarly.remove(job.id()) != null) startNow(job, t0);
                            else awaitingCommit.put(job.id(), new Awaiting(job, t0, transaction)); // room kept by reserve()
                            return;
                        }
                    }
                    handBackStarted(job); // the worker stopped while the statement ran
                }

                @Override
                public void release() {
                    synchronized (awaitingCommit) {
                        if (done) return;
                        done = true;
                        slotsOut.decrementAndGet();
                    }
                    slotFreed.release(); // a claimer waiting for room may claim now
                }
            };
        }

        @Override
        public void committed(long jobId) {
            Awaiting late;
            synchronized (awaitingCommit) {
                if (localStartsClosed) return; // the stop handed back what it held
                Awaiting a = awaitingCommit.remove(jobId);
                if (a != null) {
                    if (!tooLateToStart(a.t0())) {
                        startNow(a.job(), a.t0());
                        return;
                    }
                    late = a;
                } else {
                    // not registered yet (or its slot lapsed): remembered for a moment, at most COMMITTED_EARLY_MAX ids
                    long now = clock.nanoTime();
                    committedEarly.values().removeIf(at -> now - at > SLOT_HOLD_NANOS);
                    if (committedEarly.size() >= COMMITTED_EARLY_MAX) committedEarly.remove(committedEarly.keySet().iterator().next());
                    committedEarly.put(jobId, now);
                    return;
                }
            }
            // committed with less than the start margin of its lease left on this worker's clock (the start check would
            // hand it back): handed back here, never dispatched, fenced on its start in the enqueue, so a claim of it
            // at attempt 1 again since a hand-back (V23, or this one's notification heard twice) is left alone
            log.info("job {} committed too late in its lease to start here; handing it back", jobId);
            observer.handedBack(late.job());
            try {
                store.leases().releaseStartedInEnqueue(db, config.workerId(), jobId);
            } catch (RuntimeException e) {
                log.warn("could not hand back job {} started in its enqueue; it runs again once its lease lapses", jobId, e);
            }
        }
    }

    /** Whether a job inserted running at {@code t0} has less than the start margin of its lease left on this clock. */
    private boolean tooLateToStart(long t0) {
        return config.lease().toNanos() - (clock.nanoTime() - t0) < config.startMargin().toNanos();
    }

    private void cancelRequested(String payload) {
        long id;
        try {
            id = Long.parseLong(payload.trim());
        } catch (NumberFormatException e) {
            log.warn("ignoring a {} notification that names no job: '{}'", CANCEL_CHANNEL, payload);
            return;
        }
        Attempt a = held.get(id);
        if (a == null && awaitingCommitOf(id)) { // only a committed row can be cancelled: start it, so the cancel finds it
            localStarts.committed(id);
            a = held.get(id);
        }
        if (a != null) stop(a, CancelReason.REQUESTED);
    }

    private boolean awaitingCommitOf(long id) {
        synchronized (awaitingCommit) {
            return awaitingCommit.containsKey(id);
        }
    }

    // -------------------------------------------------------------------------------------------- running

    private final class JobTask implements Runnable {
        final Attempt attempt;

        JobTask(Attempt attempt) {
            this.attempt = attempt;
        }

        @Override
        public void run() {
            ClaimedJob job = attempt.job;
            MDC.put("tenant", job.tenantId());
            MDC.put("job_id", Long.toString(job.id()));
            try {
                if (mayStart(attempt)) runAttempt(attempt);
            } finally {
                MDC.remove("tenant");
                MDC.remove("job_id");
            }
        }
    }

    /**
     * The start check: a stopped attempt ends as its reason says, a stopping worker hands the job back, and
     * a lease with less than the start margin left on this JVM's clock (the process was paused) is handed
     * back rather than run: the reaper may already have given the job to another attempt.
     */
    private boolean mayStart(Attempt a) {
        if (stopping) {
            endUnstarted(a, null, "the worker is stopping");
            return false;
        }
        long left = a.leaseLeftNanos(clock.nanoTime());
        if (left < config.startMargin().toNanos()) {
            log.warn("job {} attempt {} not started: {} ms of its lease left on this worker's clock, under the start "
                            + "margin of {} ms (was the process paused?); handing it back", a.job.id(), a.job.attempt(),
                    left / 1_000_000, config.startMargin().toMillis());
            observer.handedBack(a.job);
            endUnstarted(a, null, "lease margin");
            return false;
        }
        if (pausedTenants.contains(a.job.tenantId())) { // claimed before the pause: a paused tenant starts nothing
            endUnstarted(a, null, "its tenant is paused");
            return false;
        }
        if (!a.begin(Thread.currentThread())) {
            endUnstarted(a, a.cancelReason(), null);
            return false;
        }
        return true;
    }

    /**
     * Settles an attempt that never ran: cancelled before it started (reason REQUESTED) ends cancelled, a lost
     * lease drops it, anything else is handed back (the attempt not counted).
     */
    private void endUnstarted(Attempt a, CancelReason reason, String why) {
        if (!a.settled.compareAndSet(false, true)) return;
        // queued before the slot is given back: a stop that sees nothing outstanding must find it queued
        if (reason == CancelReason.LEASE_LOST) {
            held.remove(a.job.id(), a);
        } else if (reason == CancelReason.REQUESTED) {
            outcomes.add(new Finished(a, new JobOutcome.Cancelled(a.job.id(), a.job.attempt(), "cancelled before it started")));
        } else {
            if (why != null && log.isDebugEnabled()) log.debug("handing back job {}: {}", a.job.id(), why);
            outcomes.add(new Finished(a, null));
        }
        outstanding.decrementAndGet();
        slotFreed.release();
    }

    private void runAttempt(Attempt a) {
        ClaimedJob job = a.job;
        var registration = handlers.find(job.type());
        Duration timeout = job.timeoutMs() != null ? Duration.ofMillis(job.timeoutMs())
                : registration.map(HandlerRegistry.Registration::timeout).orElse(null);
        if (timeout == null) timeout = config.defaultTimeout();
        long t0 = clock.nanoTime();
        a.timeout = timeout;
        a.startedNanos = t0;
        a.deadlineNanos = t0 + timeout.toNanos();
        running.add(a);
        Throwable failure = null;
        try {
            observer.started(job, t0 - a.receivedNanos);
            if (registration.isPresent()) {
                PayloadVersions.Read payload = registration.get().versions().read(job.type(), job.payloadVersion(),
                        job.payloadJson());
                registration.get().handler().handle(JobContext.of(job, config.workerId(), timeout, a::cancelReason,
                        payload.version(), payload.json(), store, db));
            }
        } catch (Throwable e) {
            failure = e;
        } finally {
            a.end();
            running.remove(a);
        }
        long ended = clock.nanoTime(), took = ended - t0;
        lastFreedNanos = ended; // before the rate: a known rate implies a known last free
        double rate = 1.0 / Math.max(took, 1_000);
        handlerRate = handlerRate == 0 ? rate : handlerRate * 0.8 + rate * 0.2;
        if (!a.settled.compareAndSet(false, true)) {
            abandonedReturned(a, failure);
            return;
        }
        try {
            JobOutcome outcome;
            try {
                outcome = registration.isPresent() ? judge(a, registration.get().retryPolicy(), failure)
                        : retryOrDead(job, RetryPolicy.DEFAULT, noHandler(job), null);
            } catch (RuntimeException e) {
                // a handler's exception whose getMessage throws, a retry policy whose delay overflows: the attempt
                // must still end, else it stayed held, its lease renewed by every heartbeat, running for good
                log.warn("job {} attempt {}: its outcome could not be decided; retried with the default backoff", job.id(), job.attempt(), e);
                outcome = retryOrDead(job, RetryPolicy.DEFAULT, "the attempt failed and its error could not be read ("
                        + e.getClass().getName() + " while reading " + failure.getClass().getName() + ")", null);
            }
            // the handler's own time, what shares by worker time charge (not the wait after a prefetching claim)
            if (outcome instanceof JobOutcome.Succeeded s) outcome = new JobOutcome.Succeeded(s.jobId(), s.attempt(), took / 1000);
            if (outcome != null) {
                outcomes.add(new Finished(a, outcome, took)); // reported to the observer once recorded
            } else {
                held.remove(job.id(), a);
            }
        } finally {
            outstanding.decrementAndGet();
            slotFreed.release();
        }
        if (failure instanceof VirtualMachineError vme) throw vme;
    }

    private String noHandler(ClaimedJob job) {
        String error = "no handler for type '" + job.type() + "' on this worker"; // last_error: no host or pid
        log.warn("{} ({})", error, config.workerId());
        return error;
    }

    /**
     * What an attempt's end records. A handler that returned normally succeeded, whatever happened around it
     * (its effect happened), unless the lease is gone: then the attempt that owns the job now decides and
     * nothing is written. A failure after a stop follows the stop's reason: a cancel ends the job cancelled,
     * a time limit is a transient failure, a lost lease or a stop past the grace writes nothing.
     */
    private JobOutcome judge(Attempt a, RetryPolicy policy, Throwable failure) {
        ClaimedJob job = a.job;
        CancelReason reason = a.cancelReason();
        if (reason == CancelReason.LEASE_LOST) {
            log.info("job {} attempt {} ended after its lease was lost; nothing is recorded", job.id(), job.attempt());
            observer.leaseLost(job);
            return null;
        }
        if (failure == null) return new JobOutcome.Succeeded(job.id(), job.attempt());
        if (reason == CancelReason.SHUTDOWN) return null;
        if (reason == CancelReason.REQUESTED) {
            log.info("job {} attempt {} cancelled while running", job.id(), job.attempt());
            return new JobOutcome.Cancelled(job.id(), job.attempt(), "cancelled while running; the attempt ended with: "
                    + errorText(failure));
        }
        if (reason == CancelReason.TIMED_OUT) return retryOrDead(job, policy, timedOut(a, false), null);
        if (failure instanceof PermanentJobException) {
            log.info("job {} failed permanently: {}", job.id(), failure.getMessage());
            return new JobOutcome.Failed(job.id(), job.attempt(), true, 0, errorText(failure));
        }
        if (failure instanceof RetryableJobException e) return retryOrDead(job, policy, errorText(e), e.retryAfter());
        if (failure instanceof SnoozeJobException z) return snooze(job, policy, z);
        return retryOrDead(job, policy, errorText(failure), null);
    }

    /**
     * A snooze: back to waiting for its delay without using an attempt, up to {@link WorkerConfig#maxSnoozes()}
     * per job; beyond that the attempt fails as transient (backoff, or dead when it was the last one).
     */
    private JobOutcome snooze(ClaimedJob job, RetryPolicy policy, SnoozeJobException z) {
        if (job.snoozes() >= config.maxSnoozes()) {
            return retryOrDead(job, policy, "snoozed " + job.snoozes() + " times, the most a job may be (FAIRQ_MAX_SNOOZES "
                    + config.maxSnoozes() + "): this snooze fails the attempt: " + z.getMessage(), null);
        }
        long delay = z.delay().toMillis();
        log.info("job {} attempt {} snoozed for {} ms ({} of {}): {}", job.id(), job.attempt(), delay,
                job.snoozes() + 1, config.maxSnoozes(), z.getMessage());
        return new JobOutcome.Snoozed(job.id(), job.attempt(), delay, "snoozed (" + (job.snoozes() + 1) + " of "
                + config.maxSnoozes() + "): " + z.getMessage());
    }

    private static String timedOut(Attempt a, boolean abandoned) {
        String text = "timed out after " + a.timeout.toMillis() + " ms";
        return abandoned ? text + "; the handler ignored the interruption and its thread was abandoned" : text;
    }

    private JobOutcome retryOrDead(ClaimedJob job, RetryPolicy policy, String error, Duration retryAfter) {
        if (job.attempt() >= job.maxAttempts()) {
            log.info("job {} dead after {} attempts: {}", job.id(), job.attempt(), error);
            return new JobOutcome.Failed(job.id(), job.attempt(), true, 0, error);
        }
        long delay = retryAfter != null ? retryAfterMillis(retryAfter) : policy.delayMillis(job.attempt(), random);
        log.info("job {} attempt {} failed, retry in {} ms: {}", job.id(), job.attempt(), delay, error);
        return new JobOutcome.Failed(job.id(), job.attempt(), false, delay, error);
    }

    /**
     * A handler's {@link RetryableJobException#retryAfter()} in milliseconds, within 0 to one year as a snooze's:
     * {@code Duration.toMillis} throws past Long.MAX_VALUE ms ({@code ChronoUnit.FOREVER}), so it is bounded before
     * the conversion. What is stored is bounded again, for every delay, by the completion (Completion.storableDelay).
     */
    static long retryAfterMillis(Duration retryAfter) {
        if (retryAfter.isNegative()) return 0;
        return retryAfter.compareTo(JobRequest.MAX_DELAY) > 0 ? JobRequest.MAX_DELAY_MS : retryAfter.toMillis();
    }

    /**
     * last_error: the exception's class and message, then its causes'. A handler's own verdict (PermanentJobException,
     * RetryableJobException) is its message alone: the class says only which verdict, which the job's status shows,
     * and the README's texts (an unknown payload_version, an http job's "HTTP 403 from ...") are the messages.
     */
    static String errorText(Throwable e) {
        StringBuilder sb = new StringBuilder();
        Throwable t = e;
        for (int depth = 0; t != null && depth < 4; depth++, t = t.getCause()) {
            if (depth > 0) sb.append(" <- caused by ");
            boolean verdict = depth == 0 && t.getMessage() != null
                    && (t instanceof PermanentJobException || t instanceof RetryableJobException);
            if (verdict) {
                sb.append(t.getMessage());
                continue;
            }
            sb.append(t.getClass().getName());
            if (t.getMessage() != null) sb.append(": ").append(t.getMessage());
        }
        return sb.length() <= Completion.MAX_ERROR_CHARS ? sb.toString() : sb.substring(0, Completion.MAX_ERROR_CHARS);
    }

    // -------------------------------------------------------------------------------------------- stopping attempts

    /**
     * Asks an attempt to stop. A running handler is interrupted (its outcome follows the reason: see
     * {@link #judge}); one that has not started is taken out of the queue and settled at once.
     */
    private void stop(Attempt a, CancelReason reason) {
        if (!a.cancel(reason, clock.nanoTime()) || a.settled.get()) return; // settled: its end is decided already
        if (a.begun()) {
            log.info("job {} attempt {}: {}; interrupting its handler", a.job.id(), a.job.attempt(), describe(reason));
            observer.stopped(a.job, reason);
        } else if (work.remove(a.task)) {
            log.info("job {} attempt {}: {} before it started", a.job.id(), a.job.attempt(), describe(reason));
            endUnstarted(a, reason, null);
        }
        // else: a handler thread has just taken the task; its start check sees the reason
    }

    private static String describe(CancelReason reason) {
        return switch (reason) {
            case REQUESTED -> "cancel requested";
            case LEASE_LOST -> "its lease is gone";
            case TIMED_OUT -> "time limit reached";
            case SHUTDOWN -> "the worker is stopping and the grace period is over";
        };
    }

    private void leaseLost(Attempt a, String why) {
        held.remove(a.job.id(), a);
        if (a.settled.get() && !a.abandoned) {
            // the handler already returned; its outcome, if queued, is dropped by the fence
            log.info("job {} attempt {}: lease gone ({}) before its outcome was recorded", a.job.id(), a.job.attempt(), why);
            return;
        }
        log.warn("job {} attempt {}: lease gone ({}); it must not run on here and its outcome will not be written",
                a.job.id(), a.job.attempt(), why);
        stop(a, CancelReason.LEASE_LOST);
    }

    /**
     * The watchdog: interrupts attempts past their time limit, and abandons a handler that has ignored an
     * interruption (any reason but a stop past the grace) for {@link WorkerConfig#abandonAfter()}.
     */
    private void watchLoop() {
        long abandonAfter = config.abandonAfter().toNanos();
        while (!stopped) {
            long now = clock.nanoTime();
            for (Attempt a : running) {
                CancelReason reason = a.cancelReason();
                if (reason == null && now - a.deadlineNanos >= 0) {
                    if (a.cancel(CancelReason.TIMED_OUT, now)) {
                        log.warn("job {} attempt {} ran past its time limit of {} ms; interrupting its handler",
                                a.job.id(), a.job.attempt(), a.timeout.toMillis());
                        observer.stopped(a.job, CancelReason.TIMED_OUT);
                    }
                } else if (reason != null && reason != CancelReason.SHUTDOWN && !a.settled.get()
                        && now - a.cancelledAtNanos() >= abandonAfter) {
                    abandon(a);
                }
            }
            try {
                Thread.sleep(config.watchInterval().toMillis());
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /**
     * Gives up on a handler that ignored the interruption: its end is recorded now (as its reason says), and
     * while fewer than {@link WorkerConfig#maxAbandonedThreads()} abandoned threads were replaced, the pool
     * grows by one so the worker keeps its concurrency; beyond that it runs short until they return.
     */
    private void abandon(Attempt a) {
        if (!a.settled.compareAndSet(false, true)) return;
        a.abandoned = true;
        abandonedAlive.incrementAndGet();
        ClaimedJob job = a.job;
        JobOutcome outcome = switch (a.cancelReason()) {
            case TIMED_OUT -> retryOrDead(job, handlers.find(job.type()).map(HandlerRegistry.Registration::retryPolicy)
                    .orElse(RetryPolicy.DEFAULT), timedOut(a, true), null);
            case REQUESTED -> new JobOutcome.Cancelled(job.id(), job.attempt(),
                    "cancelled while running; the handler ignored the interruption and its thread was abandoned");
            default -> null;
        };
        if (outcome != null) outcomes.add(new Finished(a, outcome));
        else held.remove(job.id(), a);
        boolean replace;
        synchronized (poolLock) {
            replace = replacements < config.maxAbandonedThreads();
            if (replace) {
                replacements++;
                resizePool();
            }
        }
        a.replaced = replace;
        if (replace) {
            outstanding.decrementAndGet();
            slotFreed.release();
        }
        log.error("job {} attempt {}: the handler on {} ignored the interruption ({}) for {} ms; its thread is abandoned "
                        + "({} abandoned threads running){}", job.id(), job.attempt(), a.threadName(),
                describe(a.cancelReason()), config.abandonAfter().toMillis(), abandonedAlive.get(),
                replace ? ", a new thread takes its place" : ", the pool runs one thread short until it returns (at most "
                        + config.maxAbandonedThreads() + " are replaced)");
        observer.abandoned(job);
    }

    /** An abandoned handler returned after all: its result is ignored, its replacement retires. */
    private void abandonedReturned(Attempt a, Throwable failure) {
        abandonedAlive.decrementAndGet();
        log.warn("job {} attempt {}: the abandoned handler returned after all ({}); its result is ignored", a.job.id(),
                a.job.attempt(), failure == null ? "normally" : errorText(failure));
        if (a.replaced) {
            synchronized (poolLock) {
                replacements--;
                resizePool();
            }
        } else {
            outstanding.decrementAndGet();
            slotFreed.release();
        }
    }

    /** The pool's size is the configured threads plus the replacements (guarded by poolLock). */
    private void resizePool() {
        int size = config.threads() + replacements;
        if (size >= handlerPool.getMaximumPoolSize()) {
            handlerPool.setMaximumPoolSize(size);
            handlerPool.setCorePoolSize(size);
        } else {
            handlerPool.setCorePoolSize(size); // idle extra threads end; a busy one ends after its job
            handlerPool.setMaximumPoolSize(size);
        }
    }

    // -------------------------------------------------------------------------------------------- completing

    private void completeLoop() {
        List<Finished> batch = new ArrayList<>();
        while (true) {
            try {
                Finished first = outcomes.poll(100, TimeUnit.MILLISECONDS);
                if (first == null) {
                    if (stopped && outcomes.isEmpty()) return;
                    continue;
                }
                batch.add(first);
                outcomes.drainTo(batch, config.completionBatch() - 1); // bounded: one statement's work stays small
                record(batch);
                batch.clear();
            } catch (InterruptedException e) {
                if (!batch.isEmpty()) record(batch);
                return;
            }
        }
    }

    /**
     * Writes a batch of outcomes and hand-backs, retrying while the database is unreachable (the leases are
     * still ours), until the stop's deadline when the worker is stopping.
     *
     * <p>A batch the database refuses for its data (see {@link #refusal}) is never retried as it is: it would fail
     * again at every retry, and the worker would record nothing again while its leases stay alive (a NUL in an
     * error text and an out-of-range retry delay each did that). It is split in halves until the refused
     * outcome is alone; that one is recorded without its handler's text, and if the database refuses even that,
     * its job is left to its lease (the reaper counts the attempt, retries it or dead-letters it).
     */
    private void record(List<Finished> batch) {
        String refused = tryRecord(batch);
        if (refused == null) return;
        if (batch.size() > 1) {
            int half = batch.size() / 2;
            record(batch.subList(0, half));
            record(batch.subList(half, batch.size()));
            return;
        }
        Finished f = batch.get(0);
        JobOutcome plain = withoutText(f.outcome(), "the outcome could not be stored (" + refused + ")");
        if (plain != null && tryRecord(List.of(new Finished(f.attempt(), plain, f.nanos()))) == null) return;
        Attempt a = f.attempt();
        log.error("job {} attempt {}: the database refuses its outcome ({}); the job is left to its lease, and the "
                + "reaper will count the attempt", a.job.id(), a.job.attempt(), refused);
        held.remove(a.job.id(), a); // no heartbeat extends its lease any more
        slotFreed.release();
    }

    /**
     * The outcome with the handler's text replaced by {@code text}; null when there is no text to drop (a
     * success, a hand-back).
     */
    private static JobOutcome withoutText(JobOutcome o, String text) {
        if (o instanceof JobOutcome.Failed x) return new JobOutcome.Failed(x.jobId(), x.attempt(), x.dead(), x.retryDelayMs(), text);
        if (o instanceof JobOutcome.Snoozed x) return new JobOutcome.Snoozed(x.jobId(), x.attempt(), x.delayMs(), text);
        if (o instanceof JobOutcome.Cancelled x) return new JobOutcome.Cancelled(x.jobId(), x.attempt(), text);
        return null;
    }

    /**
     * The SQLSTATE and message when the database refused the statement for the data it was given: class 22 (data
     * exception), a NOT NULL or CHECK violation, class 54 (program limit exceeded), P0 (raised by a trigger). Null
     * for anything else (an unreachable database, a failover, a serialization failure, a unique violation a race
     * may cause): those pass, so they are retried as they are.
     */
    static String refusal(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s && s.getSQLState() != null) {
                String state = s.getSQLState();
                return state.startsWith("22") || state.equals("23502") || state.equals("23514") || state.startsWith("54")
                        || state.startsWith("P0")
                        ? "SQLSTATE " + state + ": " + s.getMessage() : null;
            }
        }
        return null;
    }

    /** One batch in one go, retried while that may help; null when recorded, or the refusal it met. */
    private String tryRecord(List<Finished> batch) {
        List<JobOutcome> list = new ArrayList<>();
        Map<Long, Integer> handBack = new LinkedHashMap<>();
        for (Finished f : batch) {
            if (f.outcome() != null) list.add(f.outcome());
            else handBack.put(f.attempt().job.id(), f.attempt().job.attempt());
        }
        long backoff = 100;
        while (true) {
            try {
                Set<Long> recorded = list.isEmpty() ? Set.of() : store.finish(db, config.workerId(), list);
                int handedBack = handBack.isEmpty() ? 0 : store.release(db, config.workerId(), handBack);
                if (handedBack < handBack.size()) {
                    log.info("{} of {} jobs handed back; the others were no longer this worker's", handedBack, handBack.size());
                }
                for (Finished f : batch) {
                    Attempt a = f.attempt();
                    held.remove(a.job.id(), a);
                    if (f.outcome() == null) continue;
                    // finished only once recorded: a success the fence dropped or the database refused had been
                    // counted in the metrics, and the attempt that ran the job again counted a second one
                    if (recorded.contains(a.job.id())) {
                        if (f.nanos() >= 0) observer.finished(a.job, f.outcome(), f.nanos());
                    } else {
                        log.warn("job {} attempt {}: lease lost before the outcome was recorded; another worker "
                                + "owns the job now and this result ({}) was dropped",
                                a.job.id(), a.job.attempt(), f.outcome().getClass().getSimpleName());
                        observer.leaseLost(a.job);
                    }
                }
                slotFreed.release(); // room again for a claimer held back by unrecorded outcomes
                // A recorded outcome frees a place under its tenant's max_running. With threads free here, ask the
                // scheduler to refill now: the claimer's own "buffer ran dry" wake went out before this commit,
                // so that tick still saw the tenant at its cap, and the next job waited for the idle tick (a
                // tenant with max_running 1 and 50 ms jobs ran 4 a second). Busy workers send nothing.
                if (!list.isEmpty() && outstanding.get() < config.threads()) wakeScheduler();
                return null;
            } catch (RuntimeException e) {
                String refused = refusal(e);
                if (refused != null) {
                    log.warn("the database refused a batch of {} outcomes", batch.size(), e);
                    return refused;
                }
                if (stopped && clock.nanoTime() - stopDeadlineNanos >= 0) {
                    log.error("recording {} outcomes failed and the stop's grace is over: they are left to their leases",
                            batch.size(), e);
                    return null;
                }
                log.warn("recording {} outcomes failed, retrying in {} ms", batch.size(), backoff, e);
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return null;
                }
                backoff = Math.min(5000, backoff * 2);
            }
        }
    }

    // -------------------------------------------------------------------------------------------- maintenance

    /** Renews this worker's registry row (liveness only), between heartbeats longer apart than {@link #REGISTRY_BEAT}. */
    private void registryBeat() {
        try {
            store.leases().registerWorker(db, config.workerId(), config.threads(), route);
        } catch (RuntimeException e) {
            log.warn("worker registry renewal failed", e);
        }
    }

    /**
     * Extends the leases of every held attempt in one statement (fenced on the attempt). An attempt missing
     * from the answer lost its lease: it is stopped (see {@link CancelReason#LEASE_LOST}).
     */
    void heartbeat() {
        checkAwaitingCommit(SLOT_HOLD_NANOS);
        try {
            Map<Long, Attempt> mine = new HashMap<>(held);
            Map<Long, Integer> attempts = new HashMap<>();
            mine.forEach((id, a) -> attempts.put(id, a.job.attempt()));
            long sentAt = clock.nanoTime(); // before the statement: a lower bound, like the claim's
            Set<Long> still = store.leases().heartbeat(db, config.workerId(), config.threads(), route, attempts, config.lease());
            long until = sentAt + config.lease().toNanos();
            for (Map.Entry<Long, Attempt> e : mine.entrySet()) {
                Attempt a = e.getValue();
                if (still.contains(e.getKey())) a.leaseRenewed(until);
                else if (held.get(e.getKey()) == a) leaseLost(a, "the heartbeat no longer found it");
            }
        } catch (RuntimeException e) {
            log.warn("heartbeat failed", e);
        }
    }

    private void reap() {
        try {
            // reported: a job whose worker died is retried or dead-lettered here, in no worker's outcome
            for (var r : store.reapExpiredJobs(db, config.reapBatch())) observer.reaped(r.tenantId(), r.status());
        } catch (RuntimeException e) {
            log.warn("reaper failed", e);
        }
    }

    /** The fallback to NOTIFY fairq_cancel: asks the database which held attempts someone cancelled (and which tenants are paused). */
    void checkCancelRequests() {
        try {
            if (held.isEmpty()) { // kept while paused: a job handed back may be claimed again before it is unadmitted
                if (!pausedTenants.isEmpty()) pausedTenants = store.leases().pausedTenants(db, pausedTenants);
                return;
            }
            Map<Long, Attempt> mine = new HashMap<>(held);
            Set<String> tenants = new HashSet<>();
            mine.values().forEach(a -> tenants.add(a.job.tenantId()));
            pausedTenants = store.leases().pausedTenants(db, tenants);
            Map<Long, Integer> attempts = new HashMap<>();
            mine.forEach((id, a) -> {
                if (a.cancelReason() == null) attempts.put(id, a.job.attempt());
            });
            if (attempts.isEmpty()) return;
            for (long id : store.leases().cancelRequested(db, config.workerId(), attempts)) {
                stop(mine.get(id), CancelReason.REQUESTED);
            }
        } catch (RuntimeException e) {
            log.warn("checking for cancel requests failed", e);
        }
    }

    // -------------------------------------------------------------------------------------------- stopping

    /**
     * Graceful stop within {@link WorkerConfig#shutdownGrace()}; see the class comment. Returns when every
     * outcome has been recorded (or the grace is over).
     */
    @Override
    public void close() {
        boolean first;
        synchronized (this) {
            if (claimer == null) return;
            first = !stopping;
            claiming = false;
            stopping = true;
        }
        if (!first) {
            // a second close (a shutdown hook's and the application's own) returns once the first has finished, as
            // promised above: returning at once, its caller closed the pool while the first still recorded outcomes
            try {
                closed.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return;
        }
        try {
            stopWithinGrace();
        } finally {
            closed.countDown();
        }
    }

    private void stopWithinGrace() {
        long begin = clock.nanoTime();
        long grace = config.shutdownGrace().toNanos();
        long runUntil = begin + grace - config.stopReserve().toNanos();
        stopDeadlineNanos = begin + grace;
        log.info("worker {} stopping: no new claims, {} jobs held, {} grace", config.workerId(), held.size(),
                config.shutdownGrace());
        claimer.interrupt();
        join(claimer, stopDeadlineNanos);

        Map<Long, Integer> back = new LinkedHashMap<>();
        // jobs inserted running here whose commit has not named them yet: their commits, a moment away (an API's,
        // a schedule's), are awaited up to STOP_AWAITS_COMMITS_NANOS of the grace, and what they start now is handed
        // back by the start check (stopping); then the rest are handed back here, fenced, so one committed but not
        // yet named goes back to ready, and one whose transaction is still open is left to its lease
        store.stopStartingLocally(localStarts);
        synchronized (awaitingCommit) {
            // in 10 ms waits: bounded in real time whatever the queue clock does (a settable one stands still)
            // only for jobs whose lease could still start them: older ones are mostly rolled back, never named
            long startable = config.lease().toNanos() - config.startMargin().toNanos();
            for (long w = 0; w < STOP_AWAITS_COMMITS_NANOS && clock.nanoTime() - runUntil < 0
                    && awaitingCommit.values().stream().anyMatch(a -> clock.nanoTime() - a.t0() < startable); w += 10_000_000L) {
                try {
                    awaitingCommit.wait(10);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            localStartsClosed = true;
            for (Awaiting a : awaitingCommit.values()) back.put(a.job().id(), a.job().attempt());
            awaitingCommit.clear();
        }
        List<Runnable> unstarted = new ArrayList<>();
        work.drainTo(unstarted);
        for (Runnable r : unstarted) {
            Attempt a = ((JobTask) r).attempt;
            if (!a.settled.compareAndSet(false, true)) continue;
            outstanding.decrementAndGet();
            if (a.cancelReason() == CancelReason.LEASE_LOST) continue;
            back.put(a.job.id(), a.job.attempt());
        }
        int handedBack = 0;
        if (!back.isEmpty()) {
            try {
                handedBack = store.release(db, config.workerId(), back);
            } catch (RuntimeException e) {
                log.warn("could not hand back {} claimed jobs; they run again once their leases lapse", back.size(), e);
            }
            for (Runnable r : unstarted) held.remove(((JobTask) r).attempt.job.id(), ((JobTask) r).attempt);
            log.info("handed back {} claimed jobs that had not started", handedBack);
        }

        handlerPool.shutdown();
        while (outstanding.get() > 0 && clock.nanoTime() - runUntil < 0) {
            try {
                slotFreed.tryAcquire(50, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        int leftToLeases = 0;
        for (Attempt a : running) {
            if (a.settled.get()) continue;
            held.remove(a.job.id(), a);
            if (a.cancel(CancelReason.SHUTDOWN, clock.nanoTime())) leftToLeases++;
        }
        if (leftToLeases > 0) {
            log.warn("{} jobs still running after {} ms of the {} grace: interrupted and left to their leases (they run "
                            + "again elsewhere once the lease of {} lapses)", leftToLeases,
                    (clock.nanoTime() - begin) / 1_000_000, config.shutdownGrace(), config.lease());
        }
        stopped = true;
        join(completer, stopDeadlineNanos);
        maintenance.shutdownNow();
        waker.close();
        try {
            // a heartbeat still in flight would re-register the worker after unregisterWorker below
            maintenance.awaitTermination(Math.max(1, (stopDeadlineNanos - clock.nanoTime()) / 1_000_000), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Connection c = listenConnection;
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing to unblock the listener; nothing to do if it is already broken
            }
        }
        join(listener, stopDeadlineNanos);
        watchdog.interrupt();
        try {
            store.leases().unregisterWorker(db, config.workerId());
        } catch (RuntimeException e) {
            log.warn("could not unregister worker", e);
        }
        log.info("worker {} stopped in {} ms: {} handed back, {} left to their leases, {} abandoned threads running",
                config.workerId(), (clock.nanoTime() - begin) / 1_000_000, handedBack, leftToLeases, abandonedAlive.get());
    }

    /** Joins until the queue clock's deadline, but at least briefly (a settable clock does not move by itself). */
    private void join(Thread t, long deadlineNanos) {
        try {
            t.join(Math.max(100, (deadlineNanos - clock.nanoTime()) / 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package dev.fairq.worker;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.Completion;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.QueueClock;
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
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.PriorityBlockingQueue;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;

/**
 * One worker process's engine. Four moving parts, each on its own thread so none waits for another:
 * <ul>
 *   <li>the claimer takes ready jobs in batches (one statement per batch) as handler threads free up,
 *       holding about one claim round trip's worth of work beyond them, and
 *       sleeps on LISTEN/NOTIFY, with polling as the fallback, when there is nothing to take;</li>
 *   <li>handler threads (a bounded pool) run jobs outside any transaction;</li>
 *   <li>the completer records outcomes in batches: whatever finished while the previous batch was being
 *       written goes in the next one (group commit), so there is no round trip per job and no added wait;</li>
 *   <li>maintenance extends the leases of all held jobs in one statement and reaps expired leases.</li>
 * </ul>
 * {@link #close()} is the graceful stop: claim nothing more, hand back claimed jobs that never started,
 * let running ones finish within the grace period, record their outcomes.
 */
public final class Worker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);

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

    /** Jobs whose lease this process holds: claimed and not yet recorded as finished. */
    private final Map<Long, ClaimedJob> held = new ConcurrentHashMap<>();
    /** Jobs claimed whose handler has not returned yet (running, or waiting for a thread). */
    private final AtomicInteger outstanding = new AtomicInteger();
    /** One permit per handler that returned: wakes the claimer when it waits for room. */
    private final Semaphore slotFreed = new Semaphore(0);
    /** Moving averages (nanoseconds) of a claim round trip and of a handler run, for the prefetch depth. */
    private volatile double claimNanos;
    private volatile double handlerNanos;
    private final Semaphore wake = new Semaphore(0);
    /**
     * Claimed jobs waiting for a handler thread, in the scheduler's claim order (ready_rank, then id) rather
     * than in the order they were claimed: a job claimed just now at the front of that order (a newcomer's,
     * or one admitted by a grant) does not wait behind jobs prefetched earlier. Measured: such a job waited
     * up to 63 ms behind 52 prefetched ones under a flood (./bench/run fairness, b_flood_fair_slowest).
     */
    private final PriorityBlockingQueue<Runnable> work = new PriorityBlockingQueue<>(64,
            Comparator.comparingDouble((Runnable r) -> ((JobTask) r).job.readyRank())
                    .thenComparingLong(r -> ((JobTask) r).job.id()));
    private final ThreadPoolExecutor handlerPool;
    private final LinkedBlockingQueue<Finished> outcomes = new LinkedBlockingQueue<>();
    private final ScheduledExecutorService maintenance;
    private final AtomicInteger handlerThreads = new AtomicInteger();

    private volatile boolean claiming;
    private volatile boolean stopped;
    private volatile Connection listenConnection;
    private Thread claimer;
    private Thread completer;
    private Thread listener;

    private record Finished(ClaimedJob job, JobOutcome outcome) {}

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
        this.handlerPool = new ThreadPoolExecutor(config.threads(), config.threads(), 0, TimeUnit.MILLISECONDS, work,
                r -> new Thread(r, "fairq-handler-" + handlerThreads.incrementAndGet()));
        this.maintenance = Executors.newSingleThreadScheduledExecutor(r -> new Thread(r, "fairq-worker-maintenance"));
    }

    public String id() {
        return config.workerId();
    }

    /** How many jobs this process holds the lease of right now. */
    public int heldCount() {
        return held.size();
    }

    public synchronized Worker start() {
        if (claimer != null) throw new IllegalStateException("already started");
        store.leases().registerWorker(db, config.workerId(), config.threads());
        claiming = true;
        claimer = new Thread(this::claimLoop, "fairq-claimer");
        completer = new Thread(this::completeLoop, "fairq-completer");
        listener = new Thread(this::listenLoop, "fairq-listener");
        completer.start();
        listener.start();
        claimer.start();
        long hb = config.heartbeatInterval().toMillis();
        maintenance.scheduleWithFixedDelay(this::heartbeat, hb, hb, TimeUnit.MILLISECONDS);
        long reap = config.reapInterval().toMillis();
        maintenance.scheduleWithFixedDelay(this::reap, reap, reap, TimeUnit.MILLISECONDS);
        log.info("worker {} started: {} threads, prefetch {}, lease {}", config.workerId(), config.threads(),
                config.prefetch(), config.lease());
        return this;
    }

    // -------------------------------------------------------------------------------------------- claiming

    private void claimLoop() {
        while (claiming) {
            int limit = config.threads() + prefetchDepth();
            int busy = outstanding.get();
            // Back-pressure from the completer: jobs whose outcome is not recorded yet still hold a lease,
            // so claiming must not outrun recording (else leases pile up and every statement grows).
            int unrecorded = held.size() - busy;
            int want = Math.min(limit - busy, 2 * limit - busy - unrecorded);
            // Claim when there is room for a worthwhile batch, or at once when nothing is running at all.
            if (want <= 0 || (busy > 0 && want < Math.max(1, limit / 4))) {
                try {
                    slotFreed.tryAcquire(config.pollInterval().toMillis(), TimeUnit.MILLISECONDS);
                    slotFreed.drainPermits();
                } catch (InterruptedException e) {
                    break;
                }
                continue;
            }
            List<ClaimedJob> jobs;
            long t0 = clock.nanoTime();
            try {
                jobs = store.claim(db, config.workerId(), want, config.lease());
            } catch (RuntimeException e) {
                log.warn("claim failed, retrying after the poll interval", e);
                if (!sleepUntilWoken()) break;
                continue;
            }
            long took = clock.nanoTime() - t0;
            claimNanos = claimNanos == 0 ? took : claimNanos * 0.8 + took * 0.2;
            observer.claimed(jobs.size(), took);
            if (log.isDebugEnabled()) log.debug("claimed {} of {} in {} us", jobs.size(), want, took / 1000);
            // Everything claimed is dispatched, even when a stop began meanwhile: the stop then either runs
            // it or hands it back, so no claimed job is stranded until its lease runs out.
            outstanding.addAndGet(jobs.size());
            for (ClaimedJob job : jobs) {
                held.put(job.id(), job);
                handlerPool.execute(new JobTask(job));
            }
            if (jobs.size() < want) {
                try {
                    store.leases().wakeScheduler(db); // the buffer ran dry while threads are free: refill it now
                } catch (RuntimeException e) {
                    log.debug("could not wake the scheduler", e);
                }
                if (!sleepUntilWoken()) break;
            }
        }
    }

    /**
     * How many jobs to hold beyond the handler threads: about what the threads finish during one claim round
     * trip (Little's law: threads x claim time / handler time), so threads never wait for a claim, capped by
     * {@link WorkerConfig#prefetch()}. Quick jobs get a deep prefetch, slow jobs almost none, which keeps a
     * claimed-but-waiting job (one no other worker can start) to about one round trip's worth of work.
     */
    private int prefetchDepth() {
        double h = handlerNanos, c = claimNanos;
        if (h <= 0 || c <= 0) return config.prefetch();
        double depth = Math.ceil(config.threads() * c / Math.max(h, 1_000));
        return (int) Math.min(config.prefetch(), depth);
    }

    /** Waits for a notification or the poll interval; false when the claimer should stop. */
    private boolean sleepUntilWoken() {
        try {
            wake.tryAcquire(config.pollInterval().toMillis(), TimeUnit.MILLISECONDS);
            wake.drainPermits();
            return claiming;
        } catch (InterruptedException e) {
            return false;
        }
    }

    private void listenLoop() {
        while (!stopped) {
            try (Connection c = listenConnections.open()) {
                listenConnection = c;
                try (Statement s = c.createStatement()) {
                    s.execute("LISTEN fairq_ready");
                }
                PGConnection pg = c.unwrap(PGConnection.class);
                wake.release(); // jobs may have been admitted while we were not listening
                while (!stopped) {
                    PGNotification[] ns = pg.getNotifications((int) config.pollInterval().toMillis());
                    if (ns != null && ns.length > 0) wake.release();
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
                listenConnection = null;
            }
        }
    }

    // -------------------------------------------------------------------------------------------- running

    private final class JobTask implements Runnable {
        final ClaimedJob job;

        JobTask(ClaimedJob job) {
            this.job = job;
        }

        @Override
        public void run() {
            MDC.put("tenant", job.tenantId());
            MDC.put("job_id", Long.toString(job.id()));
            long t0 = clock.nanoTime();
            try {
                observer.started(job);
                JobOutcome outcome = execute(job);
                outcomes.add(new Finished(job, outcome));
                observer.finished(job, outcome, clock.nanoTime() - t0);
            } finally {
                long took = clock.nanoTime() - t0;
                handlerNanos = handlerNanos == 0 ? took : handlerNanos * 0.8 + took * 0.2;
                outstanding.decrementAndGet();
                slotFreed.release();
                MDC.remove("tenant");
                MDC.remove("job_id");
            }
        }
    }

    private JobOutcome execute(ClaimedJob job) {
        var registration = handlers.find(job.type());
        if (registration.isEmpty()) {
            String error = "no handler for type '" + job.type() + "' on this worker"; // last_error: no host or pid
            log.warn(error);
            return retryOrDead(job, RetryPolicy.DEFAULT, error, null);
        }
        try {
            registration.get().handler().handle(JobContext.of(job, config.workerId()));
            return new JobOutcome.Succeeded(job.id(), job.attempt());
        } catch (PermanentJobException e) {
            log.info("job {} failed permanently: {}", job.id(), e.getMessage());
            return new JobOutcome.Failed(job.id(), job.attempt(), true, 0, errorText(e));
        } catch (RetryableJobException e) {
            return retryOrDead(job, registration.get().retryPolicy(), errorText(e), e.retryAfter());
        } catch (Exception | Error e) {
            if (e instanceof InterruptedException) Thread.currentThread().interrupt();
            if (e instanceof VirtualMachineError vme) throw vme;
            return retryOrDead(job, registration.get().retryPolicy(), errorText(e), null);
        }
    }

    private JobOutcome retryOrDead(ClaimedJob job, RetryPolicy policy, String error, Duration retryAfter) {
        if (job.attempt() >= job.maxAttempts()) {
            log.info("job {} dead after {} attempts: {}", job.id(), job.attempt(), error);
            return new JobOutcome.Failed(job.id(), job.attempt(), true, 0, error);
        }
        long delay = retryAfter != null ? retryAfter.toMillis() : policy.delayMillis(job.attempt(), random);
        log.info("job {} attempt {} failed, retry in {} ms: {}", job.id(), job.attempt(), delay, error);
        return new JobOutcome.Failed(job.id(), job.attempt(), false, delay, error);
    }

    static String errorText(Throwable e) {
        StringBuilder sb = new StringBuilder();
        Throwable t = e;
        for (int depth = 0; t != null && depth < 4; depth++, t = t.getCause()) {
            if (depth > 0) sb.append(" <- caused by ");
            sb.append(t.getClass().getName());
            if (t.getMessage() != null) sb.append(": ").append(t.getMessage());
        }
        return sb.length() <= Completion.MAX_ERROR_CHARS ? sb.toString() : sb.substring(0, Completion.MAX_ERROR_CHARS);
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

    /** Writes a batch of outcomes, retrying while the database is unreachable (the leases are still ours). */
    private void record(List<Finished> batch) {
        List<JobOutcome> list = batch.stream().map(Finished::outcome).toList();
        long backoff = 100;
        while (true) {
            try {
                Set<Long> recorded = store.finish(db, config.workerId(), list);
                for (Finished f : batch) {
                    held.remove(f.job().id());
                    if (!recorded.contains(f.job().id())) {
                        log.warn("job {} attempt {}: lease lost before the outcome was recorded; another worker "
                                + "owns the job now and this result ({}) was dropped",
                                f.job().id(), f.job().attempt(), f.outcome().getClass().getSimpleName());
                        observer.leaseLost(f.job());
                    }
                }
                slotFreed.release(); // room again for a claimer held back by unrecorded outcomes
                return;
            } catch (RuntimeException e) {
                log.warn("recording {} outcomes failed, retrying in {} ms", batch.size(), backoff, e);
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
                backoff = Math.min(5000, backoff * 2);
            }
        }
    }

    // -------------------------------------------------------------------------------------------- maintenance

    private void heartbeat() {
        try {
            Set<Long> mine = Set.copyOf(held.keySet());
            Set<Long> still = store.heartbeat(db, config.workerId(), config.threads(), mine, config.lease());
            for (Long id : mine) {
                if (!still.contains(id) && held.containsKey(id)) {
                    log.warn("job {}: lease could not be extended (reclaimed or finished meanwhile)", id);
                }
            }
        } catch (RuntimeException e) {
            log.warn("heartbeat failed", e);
        }
    }

    private void reap() {
        try {
            store.reapExpired(db, config.reapBatch());
        } catch (RuntimeException e) {
            log.warn("reaper failed", e);
        }
    }

    // -------------------------------------------------------------------------------------------- stopping

    /** Graceful stop; see the class comment. Returns when every outcome has been recorded. */
    @Override
    public void close() {
        synchronized (this) {
            if (stopped || claimer == null) return;
            claiming = false;
        }
        log.info("worker {} stopping: no new claims, {} jobs held", config.workerId(), held.size());
        claimer.interrupt();
        join(claimer);

        List<Runnable> unstarted = new ArrayList<>();
        work.drainTo(unstarted);
        List<Long> ids = new ArrayList<>();
        for (Runnable r : unstarted) ids.add(((JobTask) r).job.id());
        if (!ids.isEmpty()) {
            int released = store.release(db, config.workerId(), ids);
            ids.forEach(held::remove);
            log.info("released {} claimed jobs that had not started", released);
        }

        handlerPool.shutdown();
        boolean finished;
        try {
            finished = handlerPool.awaitTermination(config.shutdownGrace().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            finished = false;
        }
        if (!finished) {
            log.warn("{} jobs still running after the {} grace period; interrupting them. Their leases will "
                    + "expire and they will run again elsewhere", handlerPool.getActiveCount(), config.shutdownGrace());
            handlerPool.shutdownNow();
        }
        stopped = true;
        join(completer);
        maintenance.shutdownNow();
        try {
            // a heartbeat still in flight would re-register the worker after unregisterWorker below
            maintenance.awaitTermination(30, TimeUnit.SECONDS);
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
        join(listener);
        try {
            store.leases().unregisterWorker(db, config.workerId());
        } catch (RuntimeException e) {
            log.warn("could not unregister worker", e);
        }
        log.info("worker {} stopped", config.workerId());
    }

    private static void join(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

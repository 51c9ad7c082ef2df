package dev.fairq.worker;

import dev.fairq.schema.JobRequest;

import java.time.Duration;
import java.util.UUID;

/**
 * How a worker process runs. Build with {@link #builder()}: every setting has a named default below, with the
 * reason for its value. The defaults suit a web-hook style load; tests shorten the lease.
 *
 * @param threads             handler threads (the process's concurrency)
 * @param prefetch            the most jobs claimed beyond the threads; the worker holds up to three claim round
 *                            trips' worth of work ahead (deep for quick jobs, one job for slow ones), and no more
 *                            because a claimed job is a job no other worker can start
 * @param lease               how long a claim holds without a heartbeat
 * @param heartbeatInterval   how often the leases of held jobs are extended (well under the lease)
 * @param pollInterval        fallback claim poll when no notification arrives
 * @param reapInterval        how often this process returns expired leases of dead workers to pending
 * @param reapBatch           the most expired leases one reaper statement takes back
 * @param completionBatch     the most outcomes one completion statement records
 * @param shutdownGrace       on stop, the whole time the stop may take: running jobs get all of it but a
 *                            reserve ({@link #stopReserve()}) for recording outcomes and leaving
 * @param startMargin         a claimed job starts only while at least this much of its lease is left, measured
 *                            on the worker's monotonic clock from the claim or the last heartbeat; less means
 *                            the process was paused (GC, SIGSTOP, a migrated VM) and the job is handed back
 * @param defaultTimeout      an attempt's time limit when neither the job ({@code timeout_ms}) nor its type
 *                            sets one
 * @param abandonAfter        how long a handler may ignore the interruption (time limit, cancel, lost lease)
 *                            before its thread is abandoned and replaced
 * @param maxAbandonedThreads the most abandoned threads replaced at once; beyond it the pool runs short
 *                            rather than grow without bound
 * @param cancelCheckInterval how often the worker checks its running jobs for cancel requests (the fallback
 *                            to NOTIFY fairq_cancel, which tells it at once)
 * @param watchInterval       how often the watchdog compares running attempts with their time limits
 * @param queues              the queues this process serves; null: every queue (FAIRQ_WORKER_QUEUES)
 * @param reserved            threads kept for jobs of a queue (queue to threads; FAIRQ_WORKER_RESERVED): jobs of
 *                            other queues never take them. With reservations the worker claims only what it can
 *                            start at once (no prefetch), so a claimed bulk job never waits for a reserved thread
 * @param maxSnoozes          the most snoozes of one job; a snooze beyond it fails the attempt instead
 *                            (FAIRQ_MAX_SNOOZES)
 */
public record WorkerConfig(String workerId, int threads, int prefetch, Duration lease, Duration heartbeatInterval,
                           Duration pollInterval, Duration reapInterval, int reapBatch, int completionBatch,
                           Duration shutdownGrace, Duration startMargin, Duration defaultTimeout,
                           Duration abandonAfter, int maxAbandonedThreads, Duration cancelCheckInterval,
                           Duration watchInterval, java.util.Set<String> queues, java.util.Map<String, Integer> reserved,
                           int maxSnoozes) {

    public static final int DEFAULT_THREADS = 8;
    /** 128 no-op jobs are about one claim round trip's worth at full speed; slow jobs never reach it. */
    public static final int DEFAULT_PREFETCH = 128;
    /** 30 s: a GC pause or a slow network does not cost a lease, a dead worker's jobs return within 35 s. */
    public static final Duration DEFAULT_LEASE = Duration.ofSeconds(30);
    /** A third of the lease: two heartbeats can fail before the lease is at risk. */
    public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(10);
    /** Notifications wake the claimer; polling only covers a lost LISTEN connection. */
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(500);
    /** An expired lease is reaped within 5 s by any worker process. */
    public static final Duration DEFAULT_REAP_INTERVAL = Duration.ofSeconds(5);
    /** One reaper statement stays short even after a whole worker pool died. */
    public static final int DEFAULT_REAP_BATCH = 1000;
    /** One completion statement records at most this many outcomes (a few ms of database time). */
    public static final int DEFAULT_COMPLETION_BATCH = 1000;
    /** The whole stop takes at most 30 s, Kubernetes' default terminationGracePeriodSeconds. */
    public static final Duration DEFAULT_SHUTDOWN_GRACE = Duration.ofSeconds(30);
    /**
     * 30 min for types that declare no limit of their own: long enough for batch-style work, short enough
     * that a hung handler gives its thread and its ordering key back within the hour. The built-in types
     * declare theirs (http: its request limit plus 10 s).
     */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(30);
    /** A handler that honours interruption unwinds in milliseconds; 5 s more means it does not. */
    public static final Duration DEFAULT_ABANDON_AFTER = Duration.ofSeconds(5);
    /** A cancel reaches the worker within a second even when its notification was missed. */
    public static final Duration DEFAULT_CANCEL_CHECK_INTERVAL = Duration.ofSeconds(1);
    /** A time limit is enforced within 50 ms of running out (a loop over the running attempts, no I/O). */
    public static final Duration DEFAULT_WATCH_INTERVAL = Duration.ofMillis(50);
    /**
     * 100 snoozes: a job that waits for a partner's rate limit or a resource a hundred times is stuck rather
     * than waiting; past it each further snooze costs an attempt, so it ends (dead) instead of cycling forever.
     */
    public static final int DEFAULT_MAX_SNOOZES = 100;
    public static final int MAX_MAX_SNOOZES = 1_000_000;

    public WorkerConfig {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1");
        if (prefetch < 0) throw new IllegalArgumentException("prefetch must be >= 0");
        if (reapBatch < 1 || completionBatch < 1) throw new IllegalArgumentException("batches must be >= 1");
        if (!positive(lease) || !positive(heartbeatInterval) || heartbeatInterval.compareTo(lease) >= 0) {
            throw new IllegalArgumentException("the heartbeat interval (" + heartbeatInterval.toMillis()
                    + " ms) must be positive and shorter than the lease (" + lease.toMillis() + " ms)");
        }
        if (shutdownGrace.isNegative()) throw new IllegalArgumentException("the shutdown grace must not be negative");
        // a healthy worker's waiting jobs have at least lease - heartbeat left; they must clear the margin
        if (startMargin.isNegative() || startMargin.plus(heartbeatInterval).compareTo(lease) >= 0) {
            throw new IllegalArgumentException("the start margin (" + startMargin.toMillis() + " ms, default: the "
                    + "heartbeat interval) plus the heartbeat interval (" + heartbeatInterval.toMillis()
                    + " ms) must be shorter than the lease (" + lease.toMillis() + " ms), else a healthy worker's "
                    + "claimed jobs would be handed back; a heartbeat of a third of the lease is the default");
        }
        if (defaultTimeout.compareTo(JobRequest.MIN_TIMEOUT) < 0 || defaultTimeout.compareTo(JobRequest.MAX_TIMEOUT) > 0) {
            throw new IllegalArgumentException("the default time limit must be between 1 ms and 24 h, not " + defaultTimeout);
        }
        if (!positive(abandonAfter)) throw new IllegalArgumentException("abandonAfter must be positive");
        if (maxAbandonedThreads < 0) throw new IllegalArgumentException("maxAbandonedThreads must be >= 0");
        if (!positive(cancelCheckInterval) || !positive(watchInterval) || !positive(pollInterval) || !positive(reapInterval)) {
            throw new IllegalArgumentException("intervals must be positive");
        }
        queues = queues == null ? null : java.util.Set.copyOf(queues);
        reserved = reserved == null ? java.util.Map.of() : java.util.Map.copyOf(reserved);
        if (queues != null && queues.isEmpty()) throw new IllegalArgumentException("a worker serves at least one queue (null: all)");
        int sum = 0;
        for (var e : reserved.entrySet()) {
            if (e.getValue() < 1) throw new IllegalArgumentException("reserved threads of queue '" + e.getKey() + "' must be >= 1");
            if (queues != null && !queues.contains(e.getKey())) {
                throw new IllegalArgumentException("queue '" + e.getKey() + "' has reserved threads but is not among the queues served " + queues);
            }
            sum += e.getValue();
        }
        if (sum > threads) {
            throw new IllegalArgumentException("the reserved threads (" + sum + ") exceed the worker's threads (" + threads + ")");
        }
        if (maxSnoozes < 0 || maxSnoozes > MAX_MAX_SNOOZES) {
            throw new IllegalArgumentException("maxSnoozes must be between 0 and " + MAX_MAX_SNOOZES);
        }
    }

    /** Threads any served queue may use: the threads less every reservation. */
    public int sharedThreads() {
        return threads - reserved.values().stream().mapToInt(Integer::intValue).sum();
    }

    private static boolean positive(Duration d) {
        return d != null && !d.isNegative() && !d.isZero();
    }

    /**
     * The part of {@link #shutdownGrace()} kept for recording outcomes, handing back and unregistering after
     * the running jobs' time is up: a fifth of it, at most 3 s (those are a few statements).
     */
    public Duration stopReserve() {
        Duration fifth = shutdownGrace.dividedBy(5);
        return fifth.compareTo(Duration.ofSeconds(3)) < 0 ? fifth : Duration.ofSeconds(3);
    }

    public static WorkerConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Builder toBuilder() {
        return new Builder().workerId(workerId).threads(threads).prefetch(prefetch).lease(lease, heartbeatInterval)
                .pollInterval(pollInterval).reapInterval(reapInterval).reapBatch(reapBatch)
                .completionBatch(completionBatch).shutdownGrace(shutdownGrace)
                // the derived defaults stay derived, so a changed heartbeat or thread count moves them along
                .startMargin(startMargin.equals(heartbeatInterval) ? null : startMargin)
                .defaultTimeout(defaultTimeout).abandonAfter(abandonAfter)
                .maxAbandonedThreads(maxAbandonedThreads == threads ? -1 : maxAbandonedThreads)
                .cancelCheckInterval(cancelCheckInterval).watchInterval(watchInterval)
                .queues(queues).reserved(reserved).maxSnoozes(maxSnoozes);
    }

    public static final class Builder {
        private String workerId;
        private int threads = DEFAULT_THREADS;
        private int prefetch = DEFAULT_PREFETCH;
        private Duration lease = DEFAULT_LEASE;
        private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
        private Duration pollInterval = DEFAULT_POLL_INTERVAL;
        private Duration reapInterval = DEFAULT_REAP_INTERVAL;
        private int reapBatch = DEFAULT_REAP_BATCH;
        private int completionBatch = DEFAULT_COMPLETION_BATCH;
        private Duration shutdownGrace = DEFAULT_SHUTDOWN_GRACE;
        private Duration startMargin;
        private Duration defaultTimeout = DEFAULT_TIMEOUT;
        private Duration abandonAfter = DEFAULT_ABANDON_AFTER;
        private int maxAbandonedThreads = -1;
        private Duration cancelCheckInterval = DEFAULT_CANCEL_CHECK_INTERVAL;
        private Duration watchInterval = DEFAULT_WATCH_INTERVAL;
        private java.util.Set<String> queues;
        private java.util.Map<String, Integer> reserved = java.util.Map.of();
        private int maxSnoozes = DEFAULT_MAX_SNOOZES;

        private Builder() {}

        /** The process's identity; default {@link #defaultWorkerId()}. */
        public Builder workerId(String id) { this.workerId = id; return this; }
        public Builder threads(int n) { this.threads = n; return this; }
        public Builder prefetch(int n) { this.prefetch = n; return this; }
        public Builder lease(Duration lease, Duration heartbeat) { this.lease = lease; this.heartbeatInterval = heartbeat; return this; }
        public Builder pollInterval(Duration d) { this.pollInterval = d; return this; }
        public Builder reapInterval(Duration d) { this.reapInterval = d; return this; }
        public Builder reapBatch(int n) { this.reapBatch = n; return this; }
        public Builder completionBatch(int n) { this.completionBatch = n; return this; }
        public Builder shutdownGrace(Duration d) { this.shutdownGrace = d; return this; }
        /**
         * Default: one heartbeat interval. A healthy worker renews every lease each interval, so its jobs never
         * have less than lease - interval left (20 s by default) and are never held back; a job with less has
         * missed heartbeats (a pause) and could lapse before the next one.
         */
        public Builder startMargin(Duration d) { this.startMargin = d; return this; }
        public Builder defaultTimeout(Duration d) { this.defaultTimeout = d; return this; }
        public Builder abandonAfter(Duration d) { this.abandonAfter = d; return this; }
        /** Default: the number of threads, so the process never runs more than twice its threads. */
        public Builder maxAbandonedThreads(int n) { this.maxAbandonedThreads = n; return this; }
        public Builder cancelCheckInterval(Duration d) { this.cancelCheckInterval = d; return this; }
        public Builder watchInterval(Duration d) { this.watchInterval = d; return this; }
        /** The queues this process serves (null: every queue). */
        public Builder queues(java.util.Set<String> q) { this.queues = q; return this; }
        /** Threads kept for a queue's jobs (queue to threads); their sum is at most the threads. */
        public Builder reserved(java.util.Map<String, Integer> r) { this.reserved = r; return this; }
        public Builder maxSnoozes(int n) { this.maxSnoozes = n; return this; }

        public WorkerConfig build() {
            return new WorkerConfig(workerId != null ? workerId : defaultWorkerId(), threads, prefetch, lease,
                    heartbeatInterval, pollInterval, reapInterval, reapBatch, completionBatch, shutdownGrace,
                    startMargin != null ? startMargin : heartbeatInterval, defaultTimeout, abandonAfter,
                    maxAbandonedThreads >= 0 ? maxAbandonedThreads : threads, cancelCheckInterval, watchInterval,
                    queues, reserved, maxSnoozes);
        }
    }

    /** host:pid:random, so two processes never share an identity, even after a restart with the same pid. */
    public static String defaultWorkerId() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.net.UnknownHostException e) {
            host = "unknown";
        }
        return host + ":" + ProcessHandle.current().pid() + ":" + UUID.randomUUID().toString().substring(0, 8);
    }
}

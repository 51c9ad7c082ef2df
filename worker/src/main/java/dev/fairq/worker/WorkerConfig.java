package dev.fairq.worker;

import java.time.Duration;
import java.util.UUID;

/**
 * How a worker process runs. Build with {@link #builder()}: every setting has a named default below, with the
 * reason for its value. The defaults suit a web-hook style load; tests shorten the lease.
 *
 * @param threads           handler threads (the process's concurrency)
 * @param prefetch          the most jobs claimed beyond the threads; the worker holds about one claim round
 *                          trip's worth of work ahead (deep for quick jobs, about one job for slow ones),
 *                          because a claimed job is a job no other worker can start
 * @param lease             how long a claim holds without a heartbeat
 * @param heartbeatInterval how often the leases of running jobs are extended (well under the lease)
 * @param pollInterval      fallback claim poll when no notification arrives
 * @param reapInterval      how often this process returns expired leases of dead workers to pending
 * @param reapBatch         the most expired leases one reaper statement takes back
 * @param completionBatch   the most outcomes one completion statement records
 * @param shutdownGrace     on stop, how long running jobs may take to finish
 */
public record WorkerConfig(String workerId, int threads, int prefetch, Duration lease, Duration heartbeatInterval,
                           Duration pollInterval, Duration reapInterval, int reapBatch, int completionBatch,
                           Duration shutdownGrace) {

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
    /** Running jobs get 30 s to finish on SIGTERM (Kubernetes' default grace period is 30 s too). */
    public static final Duration DEFAULT_SHUTDOWN_GRACE = Duration.ofSeconds(30);

    public WorkerConfig {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1");
        if (prefetch < 0) throw new IllegalArgumentException("prefetch must be >= 0");
        if (reapBatch < 1 || completionBatch < 1) throw new IllegalArgumentException("batches must be >= 1");
        if (heartbeatInterval.compareTo(lease) >= 0) {
            throw new IllegalArgumentException("heartbeat interval must be shorter than the lease");
        }
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
                .completionBatch(completionBatch).shutdownGrace(shutdownGrace);
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

        public WorkerConfig build() {
            return new WorkerConfig(workerId != null ? workerId : defaultWorkerId(), threads, prefetch, lease,
                    heartbeatInterval, pollInterval, reapInterval, reapBatch, completionBatch, shutdownGrace);
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

package dev.fairq.worker;

import java.time.Duration;
import java.util.UUID;

/**
 * How a worker process runs. Defaults suit a web-hook style load; the tests shorten the lease.
 *
 * @param threads           handler threads (the process's concurrency)
 * @param prefetch          the most jobs claimed beyond the threads; the worker holds about one claim round
 *                          trip's worth of work ahead (deep for quick jobs, about one job for slow ones),
 *                          because a claimed job is a job no other worker can start
 * @param lease             how long a claim holds without a heartbeat
 * @param heartbeatInterval how often the leases of running jobs are extended (well under the lease)
 * @param pollInterval      fallback claim poll when no notification arrives
 * @param reapInterval      how often this process returns expired leases of dead workers to pending
 * @param shutdownGrace     on stop, how long running jobs may take to finish
 */
public record WorkerConfig(String workerId, int threads, int prefetch, Duration lease, Duration heartbeatInterval,
                           Duration pollInterval, Duration reapInterval, Duration shutdownGrace) {

    public static WorkerConfig defaults() {
        return new WorkerConfig(defaultWorkerId(), 8, 128, Duration.ofSeconds(30), Duration.ofSeconds(10),
                Duration.ofMillis(500), Duration.ofSeconds(5), Duration.ofSeconds(30));
    }

    public WorkerConfig {
        if (threads < 1) throw new IllegalArgumentException("threads must be >= 1");
        if (prefetch < 0) throw new IllegalArgumentException("prefetch must be >= 0");
        if (heartbeatInterval.compareTo(lease) >= 0) {
            throw new IllegalArgumentException("heartbeat interval must be shorter than the lease");
        }
    }

    public WorkerConfig withThreads(int n) {
        return new WorkerConfig(workerId, n, prefetch, lease, heartbeatInterval, pollInterval, reapInterval, shutdownGrace);
    }

    public WorkerConfig withPrefetch(int n) {
        return new WorkerConfig(workerId, threads, n, lease, heartbeatInterval, pollInterval, reapInterval, shutdownGrace);
    }

    public WorkerConfig withLease(Duration lease, Duration heartbeat) {
        return new WorkerConfig(workerId, threads, prefetch, lease, heartbeat, pollInterval, reapInterval, shutdownGrace);
    }

    public WorkerConfig withReapInterval(Duration d) {
        return new WorkerConfig(workerId, threads, prefetch, lease, heartbeatInterval, pollInterval, d, shutdownGrace);
    }

    public WorkerConfig withPollInterval(Duration d) {
        return new WorkerConfig(workerId, threads, prefetch, lease, heartbeatInterval, d, reapInterval, shutdownGrace);
    }

    public WorkerConfig withShutdownGrace(Duration d) {
        return new WorkerConfig(workerId, threads, prefetch, lease, heartbeatInterval, pollInterval, reapInterval, d);
    }

    public WorkerConfig withWorkerId(String id) {
        return new WorkerConfig(id, threads, prefetch, lease, heartbeatInterval, pollInterval, reapInterval, shutdownGrace);
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

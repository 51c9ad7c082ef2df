package dev.fairq.scheduler;

import java.util.Arrays;

/**
 * The durations of the scheduler's recent ticks (wall time, whatever clock the queue runs on): the last
 * {@link #WINDOW} of them for percentiles, and running totals. For the tenant-scale benchmark's tick_p99_ms
 * and the fairq_scheduler_tick_seconds metric.
 */
public final class TickStats {
    /** Percentiles over the last 4,096 ticks: a few seconds of a busy scheduler, minutes of an idle one. */
    static final int WINDOW = 4096;

    private final long[] nanos = new long[WINDOW];
    private long count;
    private long totalNanos;
    private long maxNanos;

    synchronized void record(long atNanos, long durationNanos) {
        nanos[(int) (count % WINDOW)] = durationNanos;
        count++;
        totalNanos += durationNanos;
        maxNanos = Math.max(maxNanos, durationNanos);
    }

    /** Ticks so far, their total time, and percentiles of the recent ones (milliseconds). */
    public record Snapshot(long count, double totalSeconds, double p50Ms, double p99Ms, double maxMs) {}

    public synchronized Snapshot snapshot() {
        int n = (int) Math.min(count, WINDOW);
        if (n == 0) return new Snapshot(0, 0, 0, 0, 0);
        long[] recent = Arrays.copyOf(nanos, n);
        Arrays.sort(recent);
        return new Snapshot(count, totalNanos / 1e9, recent[(int) Math.floor(0.5 * (n - 1))] / 1e6,
                recent[(int) Math.floor(0.99 * (n - 1))] / 1e6, maxNanos / 1e6);
    }

    /** Starts a new window (a benchmark phase). */
    public synchronized void clear() {
        count = 0;
        totalNanos = 0;
        maxNanos = 0;
    }
}

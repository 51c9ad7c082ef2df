package dev.fairq.schema;

/**
 * The tenant's waiting jobs plus the {@code adding} of the request would pass {@code maxQueued}; the enqueue was refused
 * and nothing was written.
 */
public class QueueFullException extends RuntimeException {
    private final String tenantId;
    private final long queued;
    private final long maxQueued;
    private final long adding;

    public QueueFullException(String tenantId, long queued, long maxQueued) {
        this(tenantId, queued, maxQueued, 1);
    }

    public QueueFullException(String tenantId, long queued, long maxQueued, long adding) {
        super("tenant " + tenantId + " has " + queuedText(queued, maxQueued) + " queued and the request adds " + adding
                + ", its max_queued is " + maxQueued);
        this.tenantId = tenantId;
        this.queued = queued;
        this.maxQueued = maxQueued;
        this.adding = adding;
    }

    public String tenantId() { return tenantId; }
    public long queued() { return queued; }

    /**
     * The count with its noun ("1 job", "at least 2 jobs"): the count of pending jobs stops at max_queued (README: a soft limit), so at the limit it is
     * a lower bound ("at least 2" under a backlog of 4 after the limit was lowered to 2).
     */
    public String queuedText() { return queuedText(queued, maxQueued); }

    private static String queuedText(long queued, long maxQueued) {
        return (queued >= maxQueued ? "at least " : "") + queued + (queued == 1 ? " job" : " jobs");
    }
    public long maxQueued() { return maxQueued; }
    /** The jobs the refused request would have added. */
    public long adding() { return adding; }
}

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
        super("tenant " + tenantId + " has " + queued + " jobs queued and the request adds " + adding
                + ", its max_queued is " + maxQueued);
        this.tenantId = tenantId;
        this.queued = queued;
        this.maxQueued = maxQueued;
        this.adding = adding;
    }

    public String tenantId() { return tenantId; }
    public long queued() { return queued; }
    public long maxQueued() { return maxQueued; }
    /** The jobs the refused request would have added. */
    public long adding() { return adding; }
}

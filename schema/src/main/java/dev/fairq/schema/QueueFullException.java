package dev.fairq.schema;

/** The tenant already has {@code maxQueued} jobs waiting; the enqueue was refused and nothing was written. */
public class QueueFullException extends RuntimeException {
    private final String tenantId;
    private final long queued;
    private final long maxQueued;

    public QueueFullException(String tenantId, long queued, long maxQueued) {
        super("tenant " + tenantId + " has " + queued + " jobs queued, its max_queued is " + maxQueued);
        this.tenantId = tenantId;
        this.queued = queued;
        this.maxQueued = maxQueued;
    }

    public String tenantId() { return tenantId; }
    public long queued() { return queued; }
    public long maxQueued() { return maxQueued; }
}

package dev.fairq.scheduler;

/** The tenant has max_schedules schedules already; the new one was not created. */
public final class ScheduleLimitException extends RuntimeException {
    private final String tenantId;
    private final int maxSchedules;

    public ScheduleLimitException(String tenantId, int maxSchedules) {
        super("tenant " + tenantId + " has " + maxSchedules + " schedules, its max_schedules; delete one or ask an admin to raise the limit");
        this.tenantId = tenantId;
        this.maxSchedules = maxSchedules;
    }

    public String tenantId() { return tenantId; }
    public int maxSchedules() { return maxSchedules; }
}

package dev.fairq.scheduler;

/** The tenant has max_schedules schedules already; the new one was not created. */
public final class ScheduleLimitException extends RuntimeException {
    private final String tenantId;
    private final long schedules;
    private final int maxSchedules;

    /**
     * @param schedules what the tenant has: more than max_schedules after an admin lowered it or tenants.yml declared
     *                  more (the message had given the limit as the count)
     */
    public ScheduleLimitException(String tenantId, long schedules, int maxSchedules) {
        super("tenant " + tenantId + " has " + schedules + " schedules and its max_schedules is " + maxSchedules
                + "; delete one or ask an admin to raise the limit");
        this.tenantId = tenantId;
        this.schedules = schedules;
        this.maxSchedules = maxSchedules;
    }

    public String tenantId() { return tenantId; }
    public long schedules() { return schedules; }
    public int maxSchedules() { return maxSchedules; }
}

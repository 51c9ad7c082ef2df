package dev.fairq.schema;

import dev.fairq.schema.generated.tables.records.TenantsRecord;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** A tenant's limits as stored in the tenants table (the fields are {@link TenantLimit}'s). */
public record TenantLimits(String id, int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued,
                           boolean paused, List<String> webhookAllow, int maxSchedules, int minScheduleIntervalS,
                           double apiRatePerSecond, int apiBurst) {

    /** A tenant with the schedule and API limits at their defaults. */
    public TenantLimits(String id, int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued,
                        boolean paused, List<String> webhookAllow) {
        this(id, weight, ratePerSecond, burst, maxRunning, maxQueued, paused, webhookAllow,
                (Integer) TenantLimit.MAX_SCHEDULES.defaultValue(), (Integer) TenantLimit.MIN_SCHEDULE_INTERVAL_S.defaultValue(),
                (Double) TenantLimit.API_RATE_PER_SECOND.defaultValue(), (Integer) TenantLimit.API_BURST.defaultValue());
    }

    public static TenantLimits of(TenantsRecord r) {
        return new TenantLimits(r.getId(), r.getWeight(), r.getRatePerSecond(), r.getBurst(), r.getMaxRunning(),
                r.getMaxQueued(), r.getPaused(),
                r.getWebhookAllow() == null ? List.of() : List.of(r.getWebhookAllow()), r.getMaxSchedules(),
                r.getMinScheduleIntervalS(), r.getApiRatePerSecond(), r.getApiBurst());
    }

    /** A tenant with the values of {@code limits} (field -> value, as {@link TenantLimit#accept} returns them). */
    @SuppressWarnings("unchecked")
    public static TenantLimits of(String id, Map<String, Object> limits) {
        return new TenantLimits(id, (Integer) limits.get(TenantLimit.WEIGHT.field()),
                (Double) limits.get(TenantLimit.RATE_PER_SECOND.field()), (Integer) limits.get(TenantLimit.BURST.field()),
                (Integer) limits.get(TenantLimit.MAX_RUNNING.field()), (Integer) limits.get(TenantLimit.MAX_QUEUED.field()),
                (Boolean) limits.get(TenantLimit.PAUSED.field()),
                List.copyOf((List<String>) limits.get(TenantLimit.WEBHOOK_ALLOW.field())),
                (Integer) limits.get(TenantLimit.MAX_SCHEDULES.field()),
                (Integer) limits.get(TenantLimit.MIN_SCHEDULE_INTERVAL_S.field()),
                (Double) limits.get(TenantLimit.API_RATE_PER_SECOND.field()), (Integer) limits.get(TenantLimit.API_BURST.field()));
    }

    /** Just the limits, field -> value (what the audit log stores as old and new values). */
    public Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(TenantLimit.WEIGHT.field(), weight);
        m.put(TenantLimit.RATE_PER_SECOND.field(), ratePerSecond);
        m.put(TenantLimit.BURST.field(), burst);
        m.put(TenantLimit.MAX_RUNNING.field(), maxRunning);
        m.put(TenantLimit.MAX_QUEUED.field(), maxQueued);
        m.put(TenantLimit.PAUSED.field(), paused);
        m.put(TenantLimit.WEBHOOK_ALLOW.field(), webhookAllow);
        m.put(TenantLimit.MAX_SCHEDULES.field(), maxSchedules);
        m.put(TenantLimit.MIN_SCHEDULE_INTERVAL_S.field(), minScheduleIntervalS);
        m.put(TenantLimit.API_RATE_PER_SECOND.field(), apiRatePerSecond);
        m.put(TenantLimit.API_BURST.field(), apiBurst);
        return m;
    }
}

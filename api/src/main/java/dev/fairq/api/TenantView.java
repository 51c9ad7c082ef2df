package dev.fairq.api;

import dev.fairq.schema.TenantLimits;
import dev.fairq.schema.generated.tables.records.TenantsRecord;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/** A tenant and its limits as the admin API shows them. */
public record TenantView(String id, int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued,
                         boolean paused, List<String> webhookAllow, int maxSchedules, int minScheduleIntervalS,
                         Instant createdAt, Instant updatedAt) {
    static TenantView of(TenantsRecord r) {
        return new TenantView(r.getId(), r.getWeight(), r.getRatePerSecond(), r.getBurst(), r.getMaxRunning(),
                r.getMaxQueued(), r.getPaused(), r.getWebhookAllow() == null ? List.of() : List.of(r.getWebhookAllow()),
                r.getMaxSchedules(), r.getMinScheduleIntervalS(), JobView.utc(r.getCreatedAt()), JobView.utc(r.getUpdatedAt()));
    }

    /** Just the limits, snake_case: what the audit log stores as old and new values. */
    Map<String, Object> limits() {
        return new TenantLimits(id, weight, ratePerSecond, burst, maxRunning, maxQueued, paused, webhookAllow,
                maxSchedules, minScheduleIntervalS).toMap();
    }
}

package dev.fairq.schema;

import dev.fairq.schema.generated.tables.records.TenantsRecord;

import java.util.List;

/** A tenant's limits as stored in the tenants table. */
public record TenantLimits(String id, int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued,
                           boolean paused, List<String> webhookAllow) {

    public static TenantLimits of(TenantsRecord r) {
        return new TenantLimits(r.getId(), r.getWeight(), r.getRatePerSecond(), r.getBurst(), r.getMaxRunning(),
                r.getMaxQueued(), r.getPaused(),
                r.getWebhookAllow() == null ? List.of() : List.of(r.getWebhookAllow()));
    }
}

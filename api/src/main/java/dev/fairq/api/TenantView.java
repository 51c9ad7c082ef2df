package dev.fairq.api;

import dev.fairq.schema.generated.tables.records.TenantsRecord;
import io.swagger.v3.oas.annotations.media.Schema;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import dev.fairq.schema.TenantLimits;

/** A tenant and its limits as the admin API shows them (the limits are schema's TenantLimit, by field name). */
@Schema(name = "Tenant")
public record TenantView(String id, int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued,
                         boolean paused, List<String> webhookAllow, int maxSchedules, int minScheduleIntervalS,
                         double apiRatePerSecond, int apiBurst, Map<String, Integer> concurrencyLimits,
                         Map<String, Integer> keyWeights, Instant createdAt, Instant updatedAt) {
    static TenantView of(TenantsRecord r) {
        return new TenantView(r.getId(), r.getWeight(), r.getRatePerSecond(), r.getBurst(), r.getMaxRunning(),
                r.getMaxQueued(), r.getPaused(), r.getWebhookAllow() == null ? List.of() : List.of(r.getWebhookAllow()),
                r.getMaxSchedules(), r.getMinScheduleIntervalS(), r.getApiRatePerSecond(), r.getApiBurst(),
                TenantLimits.keyMap(r.getConcurrencyLimits()), TenantLimits.keyMap(r.getKeyWeights()),
                JobView.utc(r.getCreatedAt()), JobView.utc(r.getUpdatedAt()));
    }

    /** Just the limits (GET /v1/stats); the same fields as TenantLimit's, which LimitsViewTest checks. */
    @Schema(name = "TenantLimits")
    public record Limits(int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued, boolean paused,
                         List<String> webhookAllow, int maxSchedules, int minScheduleIntervalS, double apiRatePerSecond,
                         int apiBurst, Map<String, Integer> concurrencyLimits, Map<String, Integer> keyWeights) {}

    Limits limits() {
        return new Limits(weight, ratePerSecond, burst, maxRunning, maxQueued, paused, webhookAllow, maxSchedules,
                minScheduleIntervalS, apiRatePerSecond, apiBurst, concurrencyLimits, keyWeights);
    }
}

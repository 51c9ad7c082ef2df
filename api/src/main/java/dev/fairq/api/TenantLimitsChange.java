package dev.fairq.api;

import dev.fairq.schema.TenantLimit;
import io.swagger.v3.oas.annotations.media.Schema;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The limits of a PUT (the rest take the defaults) or a PATCH (the rest stay) on /v1/admin/tenants/{id}. Each
 * is checked by its {@link TenantLimit} (the one declaration of its range, shared with tenants.yml and the
 * tenants table's CHECK constraints); a limit given as null is refused. {@code id} is allowed for symmetry with
 * GET (a GET's answer can be sent back) when it is the path's tenant; naming another tenant is a 422 (the path
 * names the tenant, and a body that says otherwise is a mistake, not a rename). {@code created_at} and
 * {@code updated_at} are allowed and ignored for the same reason: a GET's answer carries them, and they are not limits.
 */
@Schema(name = "TenantLimitsChange", description = "Tenant limits; unknown fields are refused (422)")
public record TenantLimitsChange(
        @Schema(description = "optional: when given, the path's tenant id") String id,
        @Limit(TenantLimit.WEIGHT) Integer weight,
        @Limit(TenantLimit.RATE_PER_SECOND) Double ratePerSecond,
        @Limit(TenantLimit.BURST) Integer burst,
        @Limit(TenantLimit.MAX_RUNNING) Integer maxRunning,
        @Limit(TenantLimit.MAX_QUEUED) Integer maxQueued,
        @Limit(TenantLimit.PAUSED) Boolean paused,
        @Limit(TenantLimit.WEBHOOK_ALLOW) List<String> webhookAllow,
        @Limit(TenantLimit.MAX_SCHEDULES) Integer maxSchedules,
        @Limit(TenantLimit.MIN_SCHEDULE_INTERVAL_S) Integer minScheduleIntervalS,
        @Limit(TenantLimit.API_RATE_PER_SECOND) Double apiRatePerSecond,
        @Limit(TenantLimit.API_BURST) Integer apiBurst,
        @Limit(TenantLimit.CONCURRENCY_LIMITS) Map<String, Object> concurrencyLimits,
        @Limit(TenantLimit.KEY_WEIGHTS) Map<String, Object> keyWeights,
        @Schema(description = "ignored: read-only, allowed so that a GET's answer can be sent back") java.time.OffsetDateTime createdAt,
        @Schema(description = "ignored: read-only, allowed so that a GET's answer can be sent back") java.time.OffsetDateTime updatedAt)
        implements RequestBody {

    /** 422 when the body names a tenant other than the path's. */
    void checkId(String pathId) {
        if (id != null && !id.equals(pathId)) {
            throw ApiException.invalid("id", "names tenant '" + id + "' but the path names '" + pathId
                    + "'; the path names the tenant (leave id out)");
        }
    }

    /** The limits given, field -> value in their stored form (as {@link TenantLimit#accept} returns it). */
    Map<String, Object> given() {
        Map<String, Object> out = new LinkedHashMap<>();
        put(out, TenantLimit.WEIGHT, weight);
        put(out, TenantLimit.RATE_PER_SECOND, ratePerSecond);
        put(out, TenantLimit.BURST, burst);
        put(out, TenantLimit.MAX_RUNNING, maxRunning);
        put(out, TenantLimit.MAX_QUEUED, maxQueued);
        put(out, TenantLimit.PAUSED, paused);
        put(out, TenantLimit.WEBHOOK_ALLOW, webhookAllow);
        put(out, TenantLimit.MAX_SCHEDULES, maxSchedules);
        put(out, TenantLimit.MIN_SCHEDULE_INTERVAL_S, minScheduleIntervalS);
        put(out, TenantLimit.API_RATE_PER_SECOND, apiRatePerSecond);
        put(out, TenantLimit.API_BURST, apiBurst);
        put(out, TenantLimit.CONCURRENCY_LIMITS, concurrencyLimits);
        put(out, TenantLimit.KEY_WEIGHTS, keyWeights);
        return out;
    }

    private static void put(Map<String, Object> out, TenantLimit limit, Object value) {
        if (value != null) out.put(limit.field(), limit.accept(value));
    }
}

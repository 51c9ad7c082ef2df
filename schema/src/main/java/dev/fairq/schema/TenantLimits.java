package dev.fairq.schema;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.jooq.JSONB;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A tenant's limits as stored in the tenants table (the fields are {@link TenantLimit}'s).
 *
 * @param concurrencyLimits concurrency key to the most jobs of it admitted or running at once (absent: unlimited)
 * @param keyWeights        fairness key to its weight within the tenant's share (absent: 1)
 */
public record TenantLimits(String id, int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued,
                           boolean paused, List<String> webhookAllow, int maxSchedules, int minScheduleIntervalS,
                           double apiRatePerSecond, int apiBurst, Map<String, Integer> concurrencyLimits,
                           Map<String, Integer> keyWeights) {

    public TenantLimits {
        concurrencyLimits = concurrencyLimits == null ? Map.of() : Collections.unmodifiableMap(new TreeMap<>(concurrencyLimits));
        keyWeights = keyWeights == null ? Map.of() : Collections.unmodifiableMap(new TreeMap<>(keyWeights));
    }

    /**
     * A tenant with the job limits given and the rest (schedules, API, concurrency limits, key weights) at their
     * {@link TenantLimit} defaults.
     */
    public TenantLimits(String id, int weight, double ratePerSecond, int burst, int maxRunning, int maxQueued,
                        boolean paused, List<String> webhookAllow) {
        this(id, weight, ratePerSecond, burst, maxRunning, maxQueued, paused, webhookAllow,
                (Integer) TenantLimit.MAX_SCHEDULES.defaultValue(), (Integer) TenantLimit.MIN_SCHEDULE_INTERVAL_S.defaultValue(),
                (Double) TenantLimit.API_RATE_PER_SECOND.defaultValue(), (Integer) TenantLimit.API_BURST.defaultValue(),
                Map.of(), Map.of());
    }

    public static TenantLimits of(TenantsRecord r) {
        return new TenantLimits(r.getId(), r.getWeight(), r.getRatePerSecond(), r.getBurst(), r.getMaxRunning(),
                r.getMaxQueued(), r.getPaused(),
                r.getWebhookAllow() == null ? List.of() : List.of(r.getWebhookAllow()), r.getMaxSchedules(),
                r.getMinScheduleIntervalS(), r.getApiRatePerSecond(), r.getApiBurst(),
                keyMap(r.getConcurrencyLimits()), keyMap(r.getKeyWeights()));
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
                (Double) limits.get(TenantLimit.API_RATE_PER_SECOND.field()), (Integer) limits.get(TenantLimit.API_BURST.field()),
                (Map<String, Integer>) limits.getOrDefault(TenantLimit.CONCURRENCY_LIMITS.field(), Map.of()),
                (Map<String, Integer>) limits.getOrDefault(TenantLimit.KEY_WEIGHTS.field(), Map.of()));
    }

    /** Just the limits, field -> value (what the audit log stores as old and new values). */
    public Map<String, Object> toMap() {
        Map<String, Object> m = new LinkedHashMap<>();
        for (TenantLimit l : TenantLimit.values()) m.put(l.field(), l.valueIn(this));
        return m;
    }

    /** A stored key map (jsonb object of whole numbers). */
    public static Map<String, Integer> keyMap(JSONB json) {
        if (json == null) return Map.of();
        try {
            return Json.MAPPER.readValue(json.data(), new TypeReference<TreeMap<String, Integer>>() {});
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a key map the tenants table's CHECK should have refused", e);
        }
    }

    /** A key map as the jsonb text the tenants table stores. */
    public static String keyMapJson(Map<String, Integer> map) {
        try {
            return Json.MAPPER.writeValueAsString(map == null ? Map.of() : map);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}

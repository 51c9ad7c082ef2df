package dev.fairq.schema;

/** An ordering key is per tenant: jobs of one (tenant, key) start in enqueue order and never overlap. */
public record OrderingKey(String tenantId, String key) {
}

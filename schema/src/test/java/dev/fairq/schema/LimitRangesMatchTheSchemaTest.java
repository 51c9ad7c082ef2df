package dev.fairq.schema;

import org.jooq.exception.DataAccessException;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ranges declared once in {@link TenantLimit} and {@link JobRequest} are the ranges the tables enforce: each
 * bound is accepted by the database and one step past it is refused by a CHECK constraint. A migration that
 * changes a CHECK without the declaration (or the other way round) fails here.
 */
class LimitRangesMatchTheSchemaTest extends StoreTestSupport {

    @Test
    void wholeNumberTenantLimitsHaveTheDeclaredRangeInTheTable() {
        for (TenantLimit limit : TenantLimit.values()) {
            if (limit.kind() != TenantLimit.Kind.WHOLE) continue;
            assertTenantAccepts(limit, limit.min());
            assertTenantAccepts(limit, limit.max());
            assertTenantRefuses(limit, limit.min() - 1);
            if (limit.max() < Integer.MAX_VALUE) assertTenantRefuses(limit, limit.max() + 1);
            // the declaration agrees with itself
            assertEquals(limit.min(), ((Number) limit.accept(limit.min())).longValue());
            assertThrows(TenantLimit.InvalidLimitException.class, () -> limit.accept(limit.min() - 1));
        }
    }

    @Test
    void ratesArePositiveAndBoundedInTheTable() {
        for (TenantLimit rate : TenantLimit.values()) { // rate_per_second, api_rate_per_second
            if (rate.kind() != TenantLimit.Kind.POSITIVE_NUMBER) continue;
            assertTenantAccepts(rate, 0.001);
            assertTenantAccepts(rate, (double) rate.max());
            assertTenantRefuses(rate, 0.0);
            assertTenantRefuses(rate, rate.max() + 0.5);
            assertThrows(TenantLimit.InvalidLimitException.class, () -> rate.accept(0.0));
            assertThrows(TenantLimit.InvalidLimitException.class, () -> rate.accept(rate.max() + 0.5));
        }
    }

    @Test
    void jobFieldBoundsAreTheTablesBounds() {
        assertJob("priority", JobRequest.MIN_PRIORITY, true);
        assertJob("priority", JobRequest.MAX_PRIORITY, true);
        assertJob("priority", JobRequest.MIN_PRIORITY - 1, false);
        assertJob("priority", JobRequest.MAX_PRIORITY + 1, false);
        assertJob("max_attempts", JobRequest.MIN_MAX_ATTEMPTS, true);
        assertJob("max_attempts", JobRequest.MAX_MAX_ATTEMPTS, true);
        assertJob("max_attempts", JobRequest.MIN_MAX_ATTEMPTS - 1, false);
        assertJob("max_attempts", JobRequest.MAX_MAX_ATTEMPTS + 1, false);
        assertJob("timeout_ms", (int) JobRequest.MIN_TIMEOUT.toMillis(), true);
        assertJob("timeout_ms", (int) JobRequest.MAX_TIMEOUT.toMillis(), true);
        assertJob("timeout_ms", (int) JobRequest.MIN_TIMEOUT.toMillis() - 1, false);
        assertJob("timeout_ms", (int) JobRequest.MAX_TIMEOUT.toMillis() + 1, false);
        assertJob("payload_version", JobRequest.MIN_PAYLOAD_VERSION, true);
        assertJob("payload_version", JobRequest.MAX_PAYLOAD_VERSION, true);
        assertJob("payload_version", JobRequest.MIN_PAYLOAD_VERSION - 1, false);
        assertJob("payload_version", JobRequest.MAX_PAYLOAD_VERSION + 1, false);
        assertEquals("payload_version", job(T1).payloadVersion(0).buildUnchecked().validate().get(0).field());
        for (String key : List.of("job_key", "ordering_key", "concurrency_key", "fairness_key")) {
            assertJob(key, "k".repeat(JobRequest.MAX_KEY_LENGTH), true);
            assertJob(key, "k".repeat(JobRequest.MAX_KEY_LENGTH + 1), false);
            assertJob(key, "", false);
        }
        for (String name : List.of("queue", "type")) {
            assertJob(name, "q".repeat(JobRequest.MAX_NAME_LENGTH), true);
            assertJob(name, "q".repeat(JobRequest.MAX_NAME_LENGTH + 1), false);
        }
        // and the validation says the same as the table
        assertTrue(job(T1).priority(JobRequest.MAX_PRIORITY + 1).buildUnchecked().validate().size() == 1);
        assertTrue(job(T1).maxAttempts(JobRequest.MAX_MAX_ATTEMPTS).buildUnchecked().validate().isEmpty());
        assertTrue(job(T1).jobKey("k".repeat(JobRequest.MAX_KEY_LENGTH + 1)).buildUnchecked().validate().size() == 1);
        assertTrue(JobRequest.builder(T1, "t".repeat(JobRequest.MAX_NAME_LENGTH)).buildUnchecked().validate().isEmpty());
        assertTrue(job(T1).timeout(JobRequest.MAX_TIMEOUT).buildUnchecked().validate().isEmpty());
        assertEquals("timeout_ms", job(T1).timeout(JobRequest.MAX_TIMEOUT.plusMillis(1)).buildUnchecked().validate().get(0).field());
        assertEquals(1, job(T1).timeout(java.time.Duration.ZERO).buildUnchecked().validate().size());
        assertEquals(1, job(T1).timeout(java.time.Duration.ofNanos(1_500_000)).buildUnchecked().validate().size(),
                "whole milliseconds only");
    }

    @Test
    void keyMapLimitsHaveTheDeclaredRangesInTheTable() {
        for (TenantLimit limit : TenantLimit.values()) {
            if (limit.kind() != TenantLimit.Kind.KEY_MAP) continue;
            assertKeyMap(limit, "{\"k\": " + limit.min() + ", \"" + "k".repeat(TenantLimit.MAX_MAP_KEY_LENGTH) + "\": "
                    + limit.max() + "}", true);
            assertKeyMap(limit, "{}", true);
            assertKeyMap(limit, "{\"k\": " + (limit.min() - 1) + "}", false);
            assertKeyMap(limit, "{\"k\": " + (limit.max() + 1) + "}", false);
            assertKeyMap(limit, "{\"k\": 1.5}", false);
            assertKeyMap(limit, "{\"k\": \"2\"}", false);
            assertKeyMap(limit, "{\"\": 2}", false);
            assertKeyMap(limit, "{\"" + "k".repeat(TenantLimit.MAX_MAP_KEY_LENGTH + 1) + "\": 2}", false);
            assertKeyMap(limit, "[1]", false);
            StringBuilder many = new StringBuilder("{");
            for (int i = 0; i <= TenantLimit.MAX_MAP_ENTRIES; i++) many.append(i == 0 ? "" : ", ").append("\"k").append(i).append("\": 2");
            assertKeyMap(limit, many.append("}").toString(), false);
            // the declaration agrees with the table
            assertEquals(java.util.Map.of("k", (int) limit.max()), limit.accept(java.util.Map.of("k", limit.max())));
            TenantLimit.InvalidLimitException e = assertThrows(TenantLimit.InvalidLimitException.class,
                    () -> limit.accept(java.util.Map.of("k", limit.max() + 1)));
            assertEquals(limit.field() + ".k", e.field());
            assertThrows(TenantLimit.InvalidLimitException.class, () -> limit.accept(java.util.Map.of("", 2)));
            assertThrows(TenantLimit.InvalidLimitException.class, () -> limit.accept(List.of(1)));
        }
    }

    private void assertKeyMap(TenantLimit limit, String json, boolean accepted) {
        String sql = "INSERT INTO tenants (id, " + limit.field() + ") VALUES (?, ?::jsonb)";
        if (accepted) {
            dsl.execute(sql, "range-" + tenantSeq++, json);
        } else {
            DataAccessException e = assertThrows(DataAccessException.class, () -> dsl.execute(sql, "range-" + tenantSeq++, json),
                    limit.field() + " = " + json + " must be refused by the table");
            assertTrue(e.getMessage().contains("check constraint"), e.getMessage());
        }
    }

    private void assertTenantAccepts(TenantLimit limit, Object value) {
        insertTenant(limit, value);
    }

    private void assertTenantRefuses(TenantLimit limit, Object value) {
        DataAccessException e = assertThrows(DataAccessException.class, () -> insertTenant(limit, value),
                limit.field() + " = " + value + " must be refused by the table");
        assertTrue(e.getMessage().contains("check constraint"), e.getMessage());
    }

    private int tenantSeq;

    private void insertTenant(TenantLimit limit, Object value) {
        dsl.execute("INSERT INTO tenants (id, " + limit.field() + ") VALUES (?, ?)", "range-" + tenantSeq++, value);
    }

    private void assertJob(String column, Object value, boolean accepted) {
        String sql = column.equals("type") ? "INSERT INTO jobs (tenant_id, type) VALUES (?, ?)"
                : "INSERT INTO jobs (tenant_id, type, " + column + ") VALUES (?, 't', ?)";
        if (accepted) {
            dsl.execute(sql, T1, value);
        } else {
            DataAccessException e = assertThrows(DataAccessException.class, () -> dsl.execute(sql, T1, value),
                    column + " = " + value + " must be refused by the table");
            assertTrue(e.getMessage().contains("check constraint"), e.getMessage());
        }
    }
}

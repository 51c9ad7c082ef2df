package dev.fairq.schema;

import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Arrays;

import static dev.fairq.schema.generated.Tables.TENANTS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The API's reads map the tenant row from plain JDBC (TenantStore.record): every column as jOOQ maps it, with the
 * figures read beside it.
 */
class TenantStoreTest extends StoreTestSupport {

    @Test
    void aTenantRowReadWithJdbcIsTheRowJooqReads() {
        dsl.execute("""
                UPDATE tenants SET weight = 3, rate_per_second = 2.5, burst = 7, max_running = 11, max_queued = 13,
                       paused = true, webhook_allow = ARRAY['hooks.example.com', '10.0.0.0/8'], max_schedules = 17,
                       min_schedule_interval_s = 120, api_rate_per_second = 23.5, api_burst = 29,
                       concurrency_limits = '{"stripe-api": 5}', key_weights = '{"vip": 4}'
                WHERE id = ?""", T1);
        enqueue(job(T1));
        TenantsRecord viaJooq = new TenantStore().find(dsl, T1).orElseThrow();

        JobQueries.TenantFigures stats = new JobQueries().tenantFigures(dsl, T1, Duration.ofMinutes(5)).orElseThrow();
        assertSameRow(viaJooq, stats.tenant());
        assertEquals(1, stats.stats().pending());
        assertNotNull(stats.stats().oldestPendingAgeMs());
        assertSameRow(viaJooq, new JobQueries().waitingContext(dsl, T1).orElseThrow().tenant());
        DashboardStore.TenantHead head = new DashboardStore(clock).tenantHead(dsl, T1, Duration.ofHours(1),
                Duration.ofMinutes(5)).orElseThrow();
        assertSameRow(viaJooq, head.tenant());
        assertEquals(1, head.live().pending());
        assertEquals(DashboardStore.RollupTotals.NONE, head.totals());

        // a tenant with nothing waiting: no oldest pending age (null, not 0)
        assertNull(new JobQueries().tenantFigures(dsl, T2, Duration.ofMinutes(5)).orElseThrow().stats().oldestPendingAgeMs());
    }

    private static void assertSameRow(TenantsRecord expected, TenantsRecord actual) {
        assertEquals(TENANTS.fields().length, actual.size());
        for (int i = 0; i < expected.size(); i++) {
            Object e = expected.get(i), a = actual.get(i);
            String name = TENANTS.field(i).getName();
            if (e instanceof Object[] ea) assertEquals(Arrays.toString(ea), Arrays.toString((Object[]) a), name);
            else assertEquals(e, a, name);
        }
    }
}

package dev.fairq.schema;

import dev.fairq.schema.generated.tables.records.TenantsRecord;
import org.junit.jupiter.api.Test;

import java.time.OffsetDateTime;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The scheduler re-reads written tenants every 500 ms with a 60 s overlap. Registering many tenants at once
 * must not make every reload of that minute bring all of them back: only the ones the scheduler holds.
 */
class TenantChangesTest extends StoreTestSupport {
    final TenantStore tenants = new TenantStore();

    private OffsetDateTime databaseNow() {
        return dsl.resultQuery("SELECT now()").fetchOne(0, OffsetDateTime.class);
    }

    private static Set<String> ids(List<TenantsRecord> rows) {
        return Set.copyOf(rows.stream().map(TenantsRecord::getId).toList());
    }

    @Test
    void aFewWritesComeBackWhateverTheCacheHolds() {
        OffsetDateTime since = databaseNow();
        dsl.execute("UPDATE tenants SET weight = 5 WHERE id = ?", T2);
        TenantStore.Changes changes = tenants.changedSince(dsl, since, Set.of(T1));
        assertEquals(Set.of(T2), ids(changes.tenants()), "a small change set is read whole");
        assertEquals(5, changes.tenants().get(0).getWeight());
    }

    @Test
    void aMassRegistrationComesBackOnlyForTheCachedTenants() {
        OffsetDateTime since = databaseNow();
        dsl.execute("INSERT INTO tenants (id) SELECT 'idle-' || g FROM generate_series(1, 5000) g");
        dsl.execute("UPDATE tenants SET weight = 7 WHERE id = ?", T1);
        TenantStore.Changes changes = tenants.changedSince(dsl, since, Set.of(T1, T2, "idle-17"));
        assertEquals(Set.of(T1, "idle-17"), ids(changes.tenants()), "written and cached: T2 was not written");
        assertEquals(7, changes.tenants().stream().filter(t -> t.getId().equals(T1)).findFirst().orElseThrow().getWeight());
        assertTrue(!changes.readAt().isAfter(databaseNow()));
    }

    @Test
    void theFirstReadOfATermOnlyLearnsTheTime() {
        TenantStore.Changes changes = tenants.changedSince(dsl, null, Set.of(T1));
        assertTrue(changes.tenants().isEmpty());
    }
}

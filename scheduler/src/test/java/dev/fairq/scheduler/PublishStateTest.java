package dev.fairq.scheduler;

import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The scheduler's per-tenant state is published at most {@link SchedulerService#PUBLISH_MAX_ROWS} rows at a time,
 * tenants never published first: with more tenants held than that, every one gets its row within a few
 * publishes, and a publish never writes every tenant's row at once.
 */
class PublishStateTest extends SimulatedSchedulerTest {
    @Test
    void moreTenantsThanOnePublishWritesAllGetTheirRowInTurn() {
        int n = SchedulerService.PUBLISH_MAX_ROWS + 500;
        db.dsl().execute("INSERT INTO tenants (id) SELECT 'p-' || g FROM generate_series(1, ?) g", n);
        SchedulerConfig config = SchedulerConfig.builder().fixedBuffer(5_000, 0).build();
        SimulatedScheduler s = new SimulatedScheduler(db, config);
        List<JobRequest> jobs = new ArrayList<>();
        for (int g = 1; g <= n; g++) jobs.addAll(SimulatedScheduler.jobs("p-" + g, 1));
        s.enqueue(jobs);
        s.tick();
        assertEquals(n, s.scheduler.cachedTenants());
        SchedulerService service = new SchedulerService(s.scheduler, s.store, config, null);

        service.publishState(db.dsl());
        assertEquals(SchedulerService.PUBLISH_MAX_ROWS, rows(), "one publish writes at most its cap");
        service.publishState(db.dsl());
        assertEquals(n, rows(), "the tenants left out come first the next time");
        assertEquals(n, db.count("SELECT count(DISTINCT tenant_id) FROM scheduler_tenant_state WHERE tenant_id LIKE 'p-%'"));
    }

    /**
     * A new term's first publish that fails leaves the next attempt a new term: the rows an earlier leader left for
     * tenants this one does not hold are still deleted then, rather than read by explain as live state.
     */
    @Test
    void aFailedFirstPublishOfATermIsRetriedAsTheTermsFirst() {
        db.dsl().execute("INSERT INTO tenants (id) VALUES ('held'), ('gone')");
        db.dsl().execute("INSERT INTO scheduler_tenant_state (tenant_id, tokens_available, pass, competing, updated_at) "
                + "VALUES ('gone', 1, 0, 1, now())");
        SchedulerConfig config = SchedulerConfig.builder().fixedBuffer(10, 0).build();
        SimulatedScheduler s = new SimulatedScheduler(db, config);
        s.enqueue(SimulatedScheduler.jobs("held", 1));
        s.tick();
        SchedulerService service = new SchedulerService(s.scheduler, s.store, config, null);

        assertThrows(RuntimeException.class, () -> db.dsl().transaction(tx -> {
            tx.dsl().execute("SET TRANSACTION READ ONLY");
            service.publishState(tx.dsl());
        }));
        service.publishState(db.dsl());
        assertEquals(List.of("held"), db.dsl().fetch("SELECT tenant_id FROM scheduler_tenant_state ORDER BY 1")
                .getValues(0, String.class), "the earlier term's row is gone, the held tenant's is there");
    }

    /**
     * Explain's fair_share position: a tenant with jobs waiting competes whether or not the last round read it. A
     * round reads only the tenants its picks go to, and the position had been taken among those: with one place
     * in the buffer the other waiting tenant was published without a position, competing with one tenant (0 when a
     * round read nobody), while explain said it waited for other tenants' turn.
     */
    @Test
    void tenantsWaitingBehindAFullBufferHaveAPositionAmongThoseWithWork() {
        db.dsl().execute("INSERT INTO tenants (id) VALUES ('a'), ('b')");
        SimulatedScheduler s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(1, 0).build());
        List<JobRequest> jobs = new ArrayList<>(SimulatedScheduler.jobs("a", 5));
        jobs.addAll(SimulatedScheduler.jobs("b", 5));
        s.enqueue(jobs);
        for (int i = 0; i < 3; i++) { // a buffer of one: each round reads only the tenant it admits from
            s.tick();
            s.completeReady();
        }
        s.tick();
        assertEquals(1, db.count("SELECT count(*) FROM jobs WHERE status = 'ready'"));
        s.scheduler.snapshot();
        for (String t : List.of("a", "b")) {
            var state = s.scheduler.stateOf(t).orElseThrow();
            assertEquals(2, state.competing(), t + " competes with the other");
            assertNotNull(state.position(), t + " has a place in the fair order");
        }
    }

    private long rows() {
        return db.count("SELECT count(*) FROM scheduler_tenant_state");
    }
}

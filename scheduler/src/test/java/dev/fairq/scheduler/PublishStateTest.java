package dev.fairq.scheduler;

import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

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

    private long rows() {
        return db.count("SELECT count(*) FROM scheduler_tenant_state");
    }
}

package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static dev.fairq.scheduler.SimulatedScheduler.jobs;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The spare tenant grant (V16__spare_tenant_grants.sql): a tenant whose grants are used faster than a tick renews them
 * holds a second one, so two enqueues between two ticks both start without a round; a quiet tenant still holds one;
 * the spare goes back after a second unused, and a tenant without room or tokens for two gets none.
 */
class SpareGrantsTest extends SimulatedSchedulerTest {
    private SimulatedScheduler scheduler() {
        return new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(8, 4).build());
    }

    private List<Integer> unusedSlots(SimulatedScheduler s, String tenant) {
        return s.dsl.fetchValues("SELECT slot::int FROM admission_grants WHERE tenant_id = ? AND used_at IS NULL ORDER BY slot",
                tenant).stream().map(v -> ((Number) v).intValue()).toList();
    }

    private long status(SimulatedScheduler s, String tenant, String status) {
        return s.count("SELECT count(*) FROM jobs WHERE tenant_id = ? AND status = ?::job_status", tenant, status);
    }

    /** Runs the tenant's first job the ordinary way, so it is active and quiet, and ticks once: it holds one grant. */
    private void activate(SimulatedScheduler s, String tenant) {
        s.enqueue(jobs(tenant, 1));
        assertEquals(List.of(tenant), s.tick().admittedTenants());
        List<ClaimedJob> claimed = s.store.claim(s.dsl, "w", 1, LEASE);
        s.store.finish(s.dsl, "w", List.of(new JobOutcome.Succeeded(claimed.get(0).id(), claimed.get(0).attempt())));
        s.tick();
        assertEquals(List.of(0), unusedSlots(s, tenant));
    }

    /** One enqueue taking the tenant's grant, its job run at once, {@code gap} later a tick. */
    private void useGrantThenTick(SimulatedScheduler s, String tenant, Duration gap) {
        s.enqueue(jobs(tenant, 1));
        s.completeReady();
        s.clock.advance(gap);
        s.tick();
    }

    @Test
    void aTenantUsingItsGrantsQuicklyHoldsASpareAndTwoEnqueuesBetweenTicksBothStart() {
        db.createTenant("hot");
        SimulatedScheduler s = scheduler();
        activate(s, "hot");

        useGrantThenTick(s, "hot", Duration.ofMillis(20)); // the first use seen: not yet a quick one
        assertEquals(List.of(0), unusedSlots(s, "hot"), "renewed; one use alone earns no spare");
        useGrantThenTick(s, "hot", Duration.ofMillis(20)); // the second, 20 ms after the first
        assertEquals(List.of(0, 1), unusedSlots(s, "hot"), "two uses 20 ms apart: a spare beside the renewed grant");

        s.enqueue(jobs("hot", 1));
        assertEquals(1, unusedSlots(s, "hot").size(), "an enqueue takes one grant, not both");
        s.enqueue(jobs("hot", 1)); // before any tick: the spare admits this one
        assertEquals(2, status(s, "hot", "ready"), "both jobs inserted ready, with no round between them");
        assertEquals(0, status(s, "hot", "pending"));
        assertEquals(List.of(), unusedSlots(s, "hot"));
        s.completeReady();
        s.clock.advance(Duration.ofMillis(20));
        s.tick();
        assertEquals(List.of(0, 1), unusedSlots(s, "hot"), "both renewed while it stays quick");

        s.clock.advance(Duration.ofMillis(1_100)); // quiet for more than a second
        s.tick();
        assertEquals(List.of(0), unusedSlots(s, "hot"), "the spare went back unused; the first grant stays (a minute)");
        s.enqueue(jobs("hot", 1));
        s.enqueue(jobs("hot", 1));
        assertEquals(1, status(s, "hot", "ready"), "one grant: the second job waits for a round");
        assertEquals(1, status(s, "hot", "pending"));
    }

    @Test
    void aTenantUsingItsGrantSecondsApartHoldsOne() {
        db.createTenant("slow");
        SimulatedScheduler s = scheduler();
        activate(s, "slow");
        for (int i = 0; i < 4; i++) {
            useGrantThenTick(s, "slow", Duration.ofMillis(500));
            assertEquals(List.of(0), unusedSlots(s, "slow"), "uses 500 ms apart: its grant is renewed in time, no spare");
        }
    }

    @Test
    void noSpareWithoutRoomUnderMaxRunningOrATokenForIt() {
        db.createTenant("capped", 1, 1_000_000, 1_000_000, 1);
        db.createTenant("poor", 1, 0.001, 3, 100); // three tokens, then practically none
        SimulatedScheduler s = scheduler();
        activate(s, "capped");
        activate(s, "poor"); // its first job and its grant: two of its three tokens
        for (int i = 0; i < 3; i++) {
            s.enqueue(jobs("capped", 1));
            s.enqueue(jobs("poor", 1));
            s.completeReady();
            s.clock.advance(Duration.ofMillis(20));
            s.tick();
            assertEquals(List.of(0), unusedSlots(s, "capped"), "max_running 1 holds one grant at most");
        }
        // poor's grant used took its second token (it was reserved), its renewal its third: no token for a spare,
        // and after that none for a renewal either
        assertEquals(3, s.count("SELECT count(*) FROM jobs WHERE tenant_id = 'poor'") - status(s, "poor", "pending"),
                "three tokens, three jobs admitted, whatever the grants");
        assertEquals(0, s.count("SELECT count(*) FROM admission_grants WHERE tenant_id = 'poor' AND slot = 1 AND used_at IS NULL"));
    }
}

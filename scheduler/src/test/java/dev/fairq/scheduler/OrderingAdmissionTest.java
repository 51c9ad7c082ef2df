package dev.fairq.scheduler;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.JobOutcome;
import dev.fairq.schema.JobRequest;
import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ordering keys at admission: however big the buffer, only a key's head is ever admitted, so the jobs of one
 * key become ready one at a time in id order; keyless jobs and other keys go as usual meanwhile.
 */
class OrderingAdmissionTest {
    static final Duration LEASE = Duration.ofMinutes(5);
    final TestDatabase db = TestDatabase.get();
    SimulatedScheduler s;
    OffsetDateTime due;

    @BeforeEach
    void reset() {
        db.reset();
        db.createTenant("t");
        s = new SimulatedScheduler(db, SchedulerConfig.builder().fixedBuffer(100, 100).build());
        due = OffsetDateTime.now(ZoneOffset.UTC).minusMinutes(10);
    }

    private JobRequest job(String key, int priority, long dueSecondsLater) {
        return JobRequest.builder("t", "noop").orderingKey(key).priority(priority)
                .runAt(due.plusSeconds(dueSecondsLater)).build();
    }

    private List<Long> ids(List<EnqueueResult> results) {
        return results.stream().map(r -> r.job().getId()).toList();
    }

    private Set<Long> readyIds() {
        return new HashSet<>(s.dsl.fetch("SELECT id FROM jobs WHERE status = 'ready'").getValues(0, Long.class));
    }

    private long activeOfKey(String key) {
        return s.count("SELECT count(*) FROM jobs WHERE ordering_key = ? AND status IN ('ready', 'running')", key);
    }

    @Test
    void oneKeyIsAdmittedOneJobAtATimeInIdOrder() {
        // Interleaved in one request: key k, keyless jobs, key other. Later jobs of k have higher priority and
        // earlier run_at: neither may move them ahead within the key.
        List<JobRequest> batch = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            batch.add(job("k", i * 10, 60 - i * 10));
            batch.add(job(null, 0, 0));
            if (i < 3) batch.add(job("other", 0, 0));
        }
        List<Long> all = ids(s.store.enqueueAll(s.dsl, batch));
        List<Long> k = new ArrayList<>(), other = new ArrayList<>(), keyless = new ArrayList<>();
        for (int i = 0; i < batch.size(); i++) {
            String key = batch.get(i).orderingKey();
            (key == null ? keyless : key.equals("k") ? k : other).add(all.get(i));
        }
        // A second request adds to the same key: it queues behind the first request's jobs.
        k.addAll(ids(s.store.enqueueAll(s.dsl, List.of(job("k", 100, -600), job("k", 0, 0)))));

        // The first round: k's head, other's head and every keyless job, even though the buffer had room for all.
        s.tick();
        Set<Long> expected = new HashSet<>(keyless);
        expected.add(k.get(0));
        expected.add(other.get(0));
        assertEquals(expected, readyIds());

        // Nothing finishes: however often the scheduler runs, k's second job is not admitted.
        List<ClaimedJob> claimed = s.store.claim(s.dsl, "w", 100, LEASE);
        for (int i = 0; i < 3; i++) {
            s.clock.advance(Duration.ofMillis(100));
            assertEquals(0, s.tick().admitted(), "a key's next job waits for its head");
        }

        // Run the key to the end: each round the running head finishes, then the next one is admitted.
        List<Long> admittedOfK = new ArrayList<>();
        List<Long> admittedOfOther = new ArrayList<>();
        admittedOfK.add(k.get(0));
        admittedOfOther.add(other.get(0));
        for (int round = 0; round < 20 && admittedOfK.size() < k.size(); round++) {
            s.store.finish(s.dsl, "w", claimed.stream()
                    .map(j -> new JobOutcome.Succeeded(j.id(), j.attempt())).toList());
            s.tick();
            assertTrue(activeOfKey("k") <= 1, "two jobs of one key were ready or running");
            assertTrue(activeOfKey("other") <= 1, "two jobs of one key were ready or running");
            claimed = s.store.claim(s.dsl, "w", 100, LEASE);
            for (ClaimedJob j : claimed) {
                if ("k".equals(j.orderingKey())) admittedOfK.add(j.id());
                if ("other".equals(j.orderingKey())) admittedOfOther.add(j.id());
            }
        }
        assertEquals(k, admittedOfK, "k's jobs were admitted in id (enqueue) order, one per round");
        assertEquals(other, admittedOfOther);
        assertTrue(k.equals(k.stream().sorted().toList()), "ids follow the request order");
    }

    @Test
    void aBlockedKeyHoldsUpNobodyElse() {
        List<Long> k = ids(s.store.enqueueAll(s.dsl, List.of(job("k", 0, 0), job("k", 0, 0), job("k", 0, 0))));
        s.tick();
        assertEquals(Set.of(k.get(0)), readyIds());
        List<ClaimedJob> head = s.store.claim(s.dsl, "w", 100, LEASE); // k's head runs and never finishes

        List<Long> later = ids(s.store.enqueueAll(s.dsl,
                List.of(job(null, 0, 0), job("m", 0, 0), job(null, 0, 0), job("m", 0, 0))));
        s.tick();
        assertEquals(Set.of(later.get(0), later.get(1), later.get(2)), readyIds(),
                "keyless jobs and the head of another key are admitted while k is blocked");
        assertEquals(1, head.size());
        assertEquals(2, s.count("SELECT count(*) FROM jobs WHERE ordering_key = 'k' AND status = 'pending'"));
    }
}

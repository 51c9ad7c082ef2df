package dev.fairq.schema;

import dev.fairq.schema.generated.enums.JobStatus;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * V16: a tenant may hold two grants (its first and a spare). An enqueue takes one, the older; two enqueues at once take
 * one each (neither waits on the other); the scheduler's statements name each grant by tenant and slot.
 */
class SpareGrantEnqueueTest extends StoreTestSupport {
    private static final String SPARE = Admission.grantId(T1, 1);

    private List<Integer> unusedSlots() {
        return dsl.fetchValues("SELECT slot::int FROM admission_grants WHERE tenant_id = ? AND used_at IS NULL ORDER BY slot", T1)
                .stream().map(v -> ((Number) v).intValue()).toList();
    }

    @Test
    void eachEnqueueTakesOneGrantTheOlderFirst() {
        assertEquals(Set.of(T1, SPARE), Set.copyOf(store.admission().grant(dsl, List.of(T1, SPARE))));
        dsl.execute("UPDATE admission_grants SET granted_at = granted_at - interval '1 second' WHERE slot = 1");
        assertEquals(Set.of(T1, SPARE), store.load(dsl, LEASE, true).grantAgeSeconds().keySet());

        long first = enqueue(job(T1));
        assertEquals(JobStatus.ready, status(first));
        assertEquals(List.of(0), unusedSlots(), "the spare was the older grant: it went first");
        assertEquals(Set.of(SPARE), store.load(dsl, LEASE, false).usedGrants());
        long second = enqueue(job(T1));
        assertEquals(JobStatus.ready, status(second));
        assertEquals(List.of(), unusedSlots());
        long third = enqueue(job(T1));
        assertEquals(JobStatus.pending, status(third), "two grants admit two jobs");

        Admission.QueueLoad load = store.load(dsl, LEASE, false);
        assertEquals(Set.of(T1, SPARE), load.usedGrants());
        // the grant pass renews the first slot in place and clears the spare
        assertEquals(List.of(T1), store.admission().grant(dsl, List.of(T1), load.usedGrants()));
        assertEquals(List.of(0), unusedSlots());
        assertEquals(1, dsl.fetchCount(dsl.selectFrom("admission_grants")));
        assertEquals(List.of(T1), store.admission().revokeGrants(dsl, List.of(T1, SPARE)), "only the grant there is");
        assertEquals(0, dsl.fetchCount(dsl.selectFrom("admission_grants")));
    }

    @Test
    void twoEnqueuesAtOnceTakeOneGrantEachAndNeitherWaits() throws Exception {
        store.admission().grant(dsl, List.of(T1, SPARE));
        CountDownLatch inserted = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        CompletableFuture<Long> open = CompletableFuture.supplyAsync(() -> dsl.transactionResult(cfg -> {
            long id = store.enqueue(DSL.using(cfg), job(T1).build()).job().getId();
            inserted.countDown();
            assertTrue(release.await(30, TimeUnit.SECONDS));
            return id;
        }));
        assertTrue(inserted.await(30, TimeUnit.SECONDS));
        // the other transaction holds one grant locked and uncommitted: this one takes the other, without waiting
        long mine = CompletableFuture.supplyAsync(() -> enqueue(job(T1))).get(10, TimeUnit.SECONDS);
        assertEquals(JobStatus.ready, status(mine));
        release.countDown();
        long theirs = open.get(30, TimeUnit.SECONDS);
        assertEquals(JobStatus.ready, status(theirs));
        assertEquals(List.of(), unusedSlots(), "both grants used, one by each");
        assertEquals(2, dsl.fetchCount(dsl.selectFrom("admission_grants").where("used_at IS NOT NULL")));
    }

    @Test
    void theApisStatementsAndTheKeyedOneTakeOneGrantEach() {
        store.admission().grant(dsl, List.of(T1, SPARE));
        EnqueueResult unflushed = store.enqueueAllUnflushed(dsl, List.of(job(T1).build())).get(0);
        assertEquals(JobStatus.ready, unflushed.job().getStatus());
        assertEquals(1, unusedSlots().size(), "the API's statement took one");
        EnqueueResult keyed = store.enqueueAllUnflushed(dsl, List.of(job(T1).fairnessKey("customer-1").build())).get(0);
        assertEquals(JobStatus.ready, keyed.job().getStatus(), "a request with a fairness key and no key grant takes the other");
        assertEquals(List.of(), unusedSlots());
        assertEquals(2, dsl.fetchCount(dsl.selectFrom("admission_grants").where("used_at IS NOT NULL")));
        assertEquals(JobStatus.pending, store.enqueue(dsl, job(T1).fairnessKey("customer-1").build()).job().getStatus());
    }

    @Test
    void aBatchTakesOneGrantOfItsTenant() {
        store.admission().grant(dsl, List.of(T1, SPARE));
        List<EnqueueResult> results = store.enqueueAll(dsl, List.of(job(T1).build(), job(T1).build(), job(T1).build()));
        assertEquals(List.of(JobStatus.ready, JobStatus.pending, JobStatus.pending),
                results.stream().map(r -> r.job().getStatus()).toList());
        assertEquals(1, unusedSlots().size(), "the batch used one grant and left the other");
        assertEquals(JobStatus.ready, status(enqueue(job(T1))), "the next enqueue takes the one left");
    }
}

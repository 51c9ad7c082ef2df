package dev.fairq.schema;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Explain's {@code competing_keys} (api/README.md): the tenant's fairness keys with admissible jobs waiting. A key
 * whose only jobs are delayed competes for nothing yet; it had been counted, so a tenant with one key waiting
 * was told its share was split among two.
 */
class ActiveFairnessKeysTest extends StoreTestSupport {

    @Test
    void aKeyWhoseJobsAreAllDelayedDoesNotCompete() {
        JobQueries queries = new JobQueries();
        enqueue(job(T1).fairnessKey("now"));
        enqueue(job(T1).fairnessKey("now"));
        enqueue(job(T1).fairnessKey("with-a-resource").concurrencyKey("stripe-api"));
        enqueue(job(T1)); // no key: one more competitor, but not a key
        enqueue(job(T1).fairnessKey("later").delay(Duration.ofHours(1)));
        enqueue(job(T1).fairnessKey("later").concurrencyKey("stripe-api").delay(Duration.ofMinutes(10)));
        enqueue(job(T2).fairnessKey("another-tenants"));

        assertEquals(2, queries.activeFairnessKeys(dsl, T1, 1_000), "'now' and 'with-a-resource'; 'later' is not due");
        assertEquals(1, queries.activeFairnessKeys(dsl, T1, 1), "still counted up to the cap");

        enqueue(job(T1).fairnessKey("later"));
        assertEquals(3, queries.activeFairnessKeys(dsl, T1, 1_000), "a due job of the key makes it compete");
    }

    /**
     * The cap counts keys, not lanes (a fairness key and concurrency key pair): it had been applied to the lanes
     * before they were told apart by key, so a tenant whose 600 customers each used two resources was told 500
     * keys compete (1,000 lanes), and with the cap at 4 here, 2 of 3.
     */
    @Test
    void aKeyWithSeveralLanesCountsOnceAndTheCapCountsKeys() {
        JobQueries queries = new JobQueries();
        for (String key : new String[]{"a", "b", "c"}) {
            enqueue(job(T1).fairnessKey(key).concurrencyKey("stripe-api"));
            enqueue(job(T1).fairnessKey(key).concurrencyKey("erp"));
        }
        // its first lane (by concurrency key) not due, its second due: it competes
        enqueue(job(T1).fairnessKey("d").concurrencyKey("a-first").delay(Duration.ofHours(1)));
        enqueue(job(T1).fairnessKey("d").concurrencyKey("z-last"));

        assertEquals(4, queries.activeFairnessKeys(dsl, T1, 1_000));
        assertEquals(4, queries.activeFairnessKeys(dsl, T1, 4), "four keys in eight lanes, under a cap of four");
        assertEquals(3, queries.activeFairnessKeys(dsl, T1, 3), "at most the cap");
    }
}

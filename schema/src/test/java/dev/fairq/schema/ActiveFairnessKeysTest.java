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
}

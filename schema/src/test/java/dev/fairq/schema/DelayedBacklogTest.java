package dev.fairq.schema;

import org.jooq.DSLContext;
import org.jooq.Record;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tenant that schedules a day of reminders ahead (delayed jobs, with and without a fairness key) and has a few
 * jobs due now: the scheduler's candidate read, its key grants and explain's key count must find the due jobs
 * without walking the delayed ones. They are in the same admission indexes, ordered by sort_key; a read that asks for
 * more due jobs than there are (or for a key with none) used to walk every delayed entry of the lane, at every
 * round. Measured as the index entries the statement's scans return in its transaction, which does not
 * depend on timing.
 */
class DelayedBacklogTest extends StoreTestSupport {
    static final int DELAYED = 20_000;
    final Set<Long> due = new HashSet<>();

    @BeforeEach
    void aDayOfDelayedJobsAndAFewDueNow() {
        dsl.execute("INSERT INTO jobs (tenant_id, type, run_at) SELECT ?, 'send-email', now() + interval '1 day' "
                + "FROM generate_series(1, ?)", T1, DELAYED);
        dsl.execute("INSERT INTO jobs (tenant_id, type, fairness_key, run_at) SELECT ?, 'send-email', 'later', "
                + "now() + interval '1 day' FROM generate_series(1, ?)", T1, DELAYED);
        dsl.execute("ANALYZE jobs");
        due.add(enqueue(job(T1)));
        due.add(enqueue(job(T1).fairnessKey("now")));
        // due now at the lowest priority: its sort_key is the bound itself, and it must still be read
        due.add(enqueue(job(T1).priority(JobRequest.MIN_PRIORITY)));
    }

    /** Index entries of the admission indexes returned to the statement, in one transaction rolled back after. */
    private <T> long entriesRead(Function<DSLContext, T> statement, java.util.function.Consumer<T> check) {
        long[] read = new long[1];
        try {
            dsl.transaction(c -> {
                DSLContext tx = c.dsl();
                long before = entriesReadSoFar(tx);
                check.accept(statement.apply(tx));
                read[0] = entriesReadSoFar(tx) - before;
                throw new RollBack();
            });
        } catch (RollBack expected) {
            // what the statement wrote (key grants, a job) goes; the count was read before
        }
        return read[0];
    }

    /**
     * The backend's count not yet flushed to the statistics (pg_stat_xact_user_tables' function, applied to the
     * indexes): it may hold earlier transactions' reads too, so a statement's is the difference around it, read in
     * its transaction, where nothing flushes.
     */
    private static long entriesReadSoFar(DSLContext tx) {
        return tx.fetchOne("SELECT sum(pg_stat_get_xact_tuples_returned(oid))::bigint FROM pg_class "
                + "WHERE relname IN ('jobs_admit_idx', 'jobs_admit_key_idx', 'jobs_lanes_idx')").get(0, Long.class);
    }

    private static final class RollBack extends RuntimeException {}

    @Test
    void theRoundReadsTheDueJobsOnly() {
        long read = entriesRead(tx -> Admission.CANDIDATES.bind().clock(clock).set("tenant_ids", new String[]{T1})
                .set("limits", new Integer[]{100}).set("keyed", new Boolean[]{true}).set("key_tenants", new String[0])
                .set("key_names", new String[0]).set("key_rooms", new Integer[0]).fetch(tx), rows -> {
            Set<Long> ids = new HashSet<>();
            for (Record r : rows) if (r.get(1) != null) ids.add(r.get(1, Long.class));
            assertEquals(due, ids, "the round's candidates are the three due jobs");
        });
        assertTrue(read < 100, "the candidate read walked the delayed jobs: " + read + " index entries for 3 due jobs");
    }

    @Test
    void aKeyWithOnlyDelayedJobsIsGrantedWithoutWalkingThem() {
        long read = entriesRead(tx -> Admission.GRANT_KEYS.bind().clock(clock).set("tenant_ids", new String[]{T1})
                .set("keys", new String[]{"later"}).set("slots", new Integer[]{0}).set("ranks", new Double[]{1.0})
                .set("most", new Integer[]{1}).fetch(tx),
                rows -> assertEquals(1, rows.size(), "none of the key's jobs is due, so it is granted"));
        assertTrue(read < 100, "the grant's probe walked the key's delayed jobs: " + read + " index entries");
    }

    @Test
    void explainCountsTheDueKeyWithoutWalkingTheDelayedOne() {
        JobQueries queries = new JobQueries();
        long read = entriesRead(tx -> queries.activeFairnessKeys(tx, T1, 1_000),
                n -> assertEquals(1L, n, "'now' competes; 'later' has nothing due"));
        assertTrue(read < 100, "explain's key count walked the delayed jobs: " + read + " index entries");
    }

    @Test
    void aKeyedEnqueueTakesItsKeysGrantWithoutWalkingTheDelayedJobs() {
        assertEquals(1, Admission.GRANT_KEYS.bind().clock(clock).set("tenant_ids", new String[]{T1})
                .set("keys", new String[]{"later"}).set("slots", new Integer[]{0}).set("ranks", new Double[]{1.0})
                .set("most", new Integer[]{1}).fetch(dsl).size());
        long read = entriesRead(tx -> store.enqueue(tx, job(T1).fairnessKey("later").build()),
                r -> assertEquals("ready", r.job().getStatus().getLiteral(), "admitted in its enqueue by the key's grant"));
        assertTrue(read < 100, "the enqueue's key probe walked the key's delayed jobs: " + read + " index entries");
    }

    /**
     * A keyed job written to wait keeps not_due through a cancel; replayed (due now, by an operator) it must still
     * reach its lane and be read, not stay out of jobs_lanes_idx: the scheduler's LOAD takes every pending not_due job whose
     * run_at has passed, whichever statement made it pending.
     */
    @Test
    void aDelayedKeyedJobCancelledThenReplayedJoinsItsLane() {
        long id = enqueue(job(T1).fairnessKey("replayed").concurrencyKey("api").delay(java.time.Duration.ofHours(2)));
        assertEquals(Boolean.TRUE, dsl.fetchValue("SELECT not_due FROM jobs WHERE id = ?", id));
        assertEquals(OperatorActions.ActionResult.DONE, store.cancel(dsl, T1, id).result());
        assertEquals(OperatorActions.ActionResult.DONE, store.replay(dsl, T1, id).result());
        assertEquals(java.util.List.of(T1), promoted(), "replayed, it is due now");
        Set<Long> all = new HashSet<>(due);
        all.add(id);
        candidateRead(all);
    }

    private long candidateRead(Set<Long> expected) {
        return entriesRead(tx -> Admission.CANDIDATES.bind().clock(clock).set("tenant_ids", new String[]{T1})
                .set("limits", new Integer[]{100}).set("keyed", new Boolean[]{true}).set("key_tenants", new String[0])
                .set("key_names", new String[0]).set("key_rooms", new Integer[0]).fetch(tx), rows -> {
            Set<Long> ids = new HashSet<>();
            for (Record r : rows) if (r.get(1) != null) ids.add(r.get(1, Long.class));
            assertEquals(expected, ids);
        });
    }

    /**
     * Customers each holding one reminder for tomorrow (one lane each): the round's lane probe found every one of
     * them, one probe a lane at every round (10,000 lanes: about 50 ms a round). Written to wait (enqueued for later,
     * or retried or snoozed with a delay: not_due), they join their lanes only when due (the scheduler's LOAD moves them).
     */
    @Test
    void lanesWhoseJobsAreAllDelayedCostTheRoundNothingUntilTheyAreDue() {
        java.util.List<JobRequest> reminders = new java.util.ArrayList<>();
        for (int i = 0; i < 5_000; i++) reminders.add(job(T1).fairnessKey("customer-" + i).delay(java.time.Duration.ofHours(20)).build());
        Set<Long> remindersIds = new HashSet<>();
        store.enqueueAll(dsl, reminders).forEach(r -> remindersIds.add(r.job().getId()));
        dsl.execute("ANALYZE jobs");

        long read = candidateRead(due);
        assertTrue(read < 100, "the lane probe walked the lanes of delayed jobs: " + read + " index entries for 3 due jobs");
        assertEquals(java.util.List.of(), promoted(), "nothing came due");
        JobQueries queries = new JobQueries();
        long keysRead = entriesRead(tx -> queries.activeFairnessKeys(tx, T1, 1_000),
                n -> assertEquals(1L, n, "only 'now' competes"));
        assertTrue(keysRead < 100, "explain's key count walked the lanes of delayed jobs: " + keysRead + " index entries");

        clock.advance(java.time.Duration.ofHours(21));
        assertEquals(java.util.List.of(T1), promoted(), "the reminders came due");
        Set<Long> all = new HashSet<>(due);
        all.addAll(remindersIds);
        // 5,000 lanes over a limit of 100: each lane is read up to its cap of 2, and here holds one job
        candidateRead(all);
        assertEquals(java.util.List.of(), promoted(), "each job comes due once");
    }

    /** The tenants whose keyed jobs the scheduler's LOAD moved into their lanes as they came due. */
    private java.util.List<String> promoted() {
        return store.load(dsl, java.time.Duration.ofMinutes(1)).promoted();
    }
}

package dev.fairq.schema;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The idempotency store's protocol against the real table, on a settable clock (no waiting for a lock to lapse). */
class SideEffectsStoreTest extends StoreTestSupport {
    private static final Duration LOCK = Duration.ofSeconds(10);

    private SideEffects effects() {
        return store.sideEffects();
    }

    @Test
    void aDoneKeyAnswersItsStoredResultToEveryLaterAttempt() {
        UUID token = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "charge:42", LOCK, 1L)).token();
        effects().complete(dsl, T1, "charge:42", token, "receipt-42");

        assertEquals(new SideEffects.Claim.Done("receipt-42"), effects().begin(dsl, T1, "charge:42", LOCK, 2L));
        clock.advance(Duration.ofDays(1)); // a done key never expires by its lock: only retention removes it
        assertEquals(new SideEffects.Claim.Done("receipt-42"), effects().begin(dsl, T1, "charge:42", LOCK, 3L));
        // keys are per tenant
        assertInstanceOf(SideEffects.Claim.Acquired.class, effects().begin(dsl, T2, "charge:42", LOCK, 4L));
    }

    @Test
    void aLivePendingKeyIsBusyForTheRestOfItsLock() {
        assertInstanceOf(SideEffects.Claim.Acquired.class, effects().begin(dsl, T1, "k", LOCK, 1L));
        clock.advance(Duration.ofSeconds(4));
        SideEffects.Claim.Busy second = assertInstanceOf(SideEffects.Claim.Busy.class, effects().begin(dsl, T1, "k", LOCK, 2L));
        long ms = second.lockedFor().toMillis();
        assertTrue(ms >= 5_999 && ms <= 6_001, "6 s of the lock left, not " + ms + " ms"); // rounded up from epoch seconds
    }

    /**
     * The holder died between taking the key and writing done: once its lock ran out the key is taken over under
     * a new token, and the old holder, should it wake up, can no longer write done (it fails loudly).
     */
    @Test
    void anExpiredPendingIsTakenOverAndTheStaleHolderCannotWriteDone() {
        UUID stale = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "k", LOCK, 1L)).token();
        clock.advance(LOCK.minusMillis(1));
        assertInstanceOf(SideEffects.Claim.Busy.class, effects().begin(dsl, T1, "k", LOCK, 2L), "not yet expired");
        clock.advance(Duration.ofMillis(1));
        UUID fresh = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "k", LOCK, 2L)).token();
        assertNotEquals(stale, fresh);

        SideEffects.LostKeyException lost = assertThrows(SideEffects.LostKeyException.class,
                () -> effects().complete(dsl, T1, "k", stale, "from the stale holder"));
        assertTrue(lost.getMessage().contains("another attempt took the key over"), lost.getMessage());
        assertFalse(effects().release(dsl, T1, "k", stale), "a stale holder cannot give the key up either");
        assertEquals("pending", effects().find(dsl, T1, "k").orElseThrow().status());

        effects().complete(dsl, T1, "k", fresh, "from the new holder");
        assertEquals(new SideEffects.Claim.Done("from the new holder"), effects().begin(dsl, T1, "k", LOCK, 3L));
        assertThrows(SideEffects.LostKeyException.class, () -> effects().complete(dsl, T1, "k", fresh, "twice"),
                "done is written once");
    }

    /** A holder whose lock ran out but was not taken over still writes done: its token is still the current one. */
    @Test
    void aLapsedLockNobodyTookOverStillCompletes() {
        UUID token = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "k", LOCK, 1L)).token();
        clock.advance(LOCK.multipliedBy(3));
        effects().complete(dsl, T1, "k", token, null);
        assertEquals(new SideEffects.Claim.Done(null), effects().begin(dsl, T1, "k", LOCK, 2L));
    }

    @Test
    void aReleasedKeyIsTakenAfreshByTheNextAttempt() {
        UUID token = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "k", LOCK, 1L)).token();
        assertTrue(effects().release(dsl, T1, "k", token));
        assertInstanceOf(SideEffects.Claim.Acquired.class, effects().begin(dsl, T1, "k", LOCK, 2L));
    }

    @Test
    void retentionDeletesKeysNotWrittenForItsTimeInBoundedBatches() {
        for (int i = 0; i < 5; i++) {
            UUID t = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "old-" + i, LOCK, 1L)).token();
            effects().complete(dsl, T1, "old-" + i, t, "r");
        }
        effects().begin(dsl, T1, "old-pending", LOCK, 1L); // its holder never came back
        clock.advance(Duration.ofDays(8));
        UUID t = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "new", LOCK, 1L)).token();
        effects().complete(dsl, T1, "new", t, "r");

        assertEquals(4, store.retention().deleteSideEffects(dsl, Duration.ofDays(7), 4), "one batch");
        assertEquals(2, store.retention().deleteSideEffects(dsl, Duration.ofDays(7), 4));
        assertEquals(0, store.retention().deleteSideEffects(dsl, Duration.ofDays(7), 4));
        assertEquals(1, db.count("SELECT count(*) FROM side_effects"));
        assertEquals("done", effects().find(dsl, T1, "new").orElseThrow().status());
    }

    /**
     * A dead job kept for replay finds the effects it wrote, however long ago: its key outlives the key retention
     * while the job is in the table (here its effect was written eight days before, the job kept 30 days), and goes
     * after the job does. Counted from the key's write alone, the replay ran the charge again.
     */
    @Test
    void aKeyStaysWhileTheJobThatWroteItIsKept() {
        long id = enqueue(job(T1).maxAttempts(1));
        int attempt = admitAndClaim("w1", id).attempt();
        UUID t = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "charge:7", LOCK, id)).token();
        effects().complete(dsl, T1, "charge:7", t, "receipt-7");
        store.finish(dsl, "w1", List.of(new JobOutcome.Failed(id, attempt, true, 0, "the mail server was down")));
        UUID other = ((SideEffects.Claim.Acquired) effects().begin(dsl, T1, "gone", LOCK, id + 1000)).token();
        effects().complete(dsl, T1, "gone", other, "r"); // its job is no longer in the table
        clock.advance(Duration.ofDays(8));

        assertEquals(1, store.retention().deleteSideEffects(dsl, Duration.ofDays(7), 100), "only the key of a job that is gone");
        assertEquals(new SideEffects.Claim.Done("receipt-7"), effects().begin(dsl, T1, "charge:7", LOCK, id),
                "the dead job, replayed now, finds its charge");
        assertEquals(1, store.retention().deleteFinished(dsl, Duration.ofDays(1), Duration.ofDays(7), 100));
        assertEquals(1, store.retention().deleteSideEffects(dsl, Duration.ofDays(7), 100), "the job gone, its key goes");
        assertEquals(0, db.count("SELECT count(*) FROM side_effects"));
    }

    @Test
    void keysAreOneTo255Characters() {
        assertThrows(IllegalArgumentException.class, () -> effects().begin(dsl, T1, "", LOCK, 1L));
        assertThrows(IllegalArgumentException.class, () -> effects().begin(dsl, T1, "k".repeat(256), LOCK, 1L));
        assertInstanceOf(SideEffects.Claim.Acquired.class, effects().begin(dsl, T1, "k".repeat(255), LOCK, 1L));
        // characters as the table counts them: 255 emoji are 510 UTF-16 units and one key
        String smile = "\ud83d\ude00";
        assertInstanceOf(SideEffects.Claim.Acquired.class, effects().begin(dsl, T1, smile.repeat(255), LOCK, 1L));
        assertThrows(IllegalArgumentException.class, () -> effects().begin(dsl, T1, smile.repeat(256), LOCK, 1L));
        // a NUL cannot be stored (it was a database error); a lone surrogate was stored as '?', two keys as one
        assertThrows(IllegalArgumentException.class, () -> effects().begin(dsl, T1, "a\u0000b", LOCK, 1L));
        assertThrows(IllegalArgumentException.class, () -> effects().begin(dsl, T1, "charge:\ud800", LOCK, 1L));
        assertThrows(IllegalArgumentException.class, () -> effects().begin(dsl, T1, "charge:\udc00", LOCK, 1L));
    }

    /** A lease of a million years was a database error (timestamp out of range); a year is the bound. */
    @Test
    void leasesArePositiveAndAtMostAYear() {
        for (Duration bad : List.of(Duration.ZERO, Duration.ofMillis(-1), SideEffects.MAX_LEASE.plusMillis(1),
                Duration.ofDays(365_000_000L), Duration.ofSeconds(Long.MAX_VALUE))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> effects().begin(dsl, T1, "k", bad, 1L), bad::toString);
            assertTrue(e.getMessage().contains("at most 366 days"), e.getMessage());
        }
        assertInstanceOf(SideEffects.Claim.Acquired.class, effects().begin(dsl, T1, "k", SideEffects.MAX_LEASE, 1L));
    }
}

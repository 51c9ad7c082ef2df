package dev.fairq.worker;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The claimer's decision, as numbers: how many jobs it holds beyond its threads, and when it claims again. */
class ClaimSizeTest {
    private static final double MS = 1_000_000;

    @Test
    void aRoundTripsWorthOfJobsIsWhatTheThreadsFinishDuringOneClaim() {
        assertEquals(2, Worker.jobsPerClaimRoundTrip(8, 128, 5 * MS, 1 * MS)); // 8 x 1 / 5 = 1.6
        assertEquals(1, Worker.jobsPerClaimRoundTrip(8, 128, 1_000 * MS, 1 * MS)); // slow jobs: at least one
        assertEquals(128, Worker.jobsPerClaimRoundTrip(8, 128, 0.01 * MS, 1 * MS)); // no-ops: the prefetch caps it
        assertEquals(128, Worker.jobsPerClaimRoundTrip(8, 128, 0, 0)); // nothing measured yet
    }

    @Test
    void withFiveMillisecondJobsTheWorkerClaimsAgainWhileTwoHeldJobsStillWaitForAThread() {
        int perClaim = Worker.jobsPerClaimRoundTrip(8, 128, 5 * MS, 1 * MS);
        // 8 running and 2 held: claim 2 more now, before the held ones have started and a thread idles
        assertEquals(2, Worker.claimSize(8, 128, perClaim, 10, 0));
        // 8 running and 3 held: one more is not a worthwhile batch yet
        assertEquals(0, Worker.claimSize(8, 128, perClaim, 11, 0));
        // full: 8 running and 4 held (two round trips' worth)
        assertEquals(0, Worker.claimSize(8, 128, perClaim, 12, 0));
        // idle: everything it may hold, at once
        assertEquals(12, Worker.claimSize(8, 128, perClaim, 0, 0));
    }

    @Test
    void slowJobsAreBarelyPrefetchedAndNoOpsKeepTheirBatches() {
        // 1 s jobs: one held beyond the threads, two at most
        assertEquals(0, Worker.claimSize(8, 128, 1, 10, 0));
        assertEquals(1, Worker.claimSize(8, 128, 1, 9, 0));
        // no-ops: 128 held beyond 8 threads, claimed in batches of a quarter of 136
        assertEquals(0, Worker.claimSize(8, 128, 128, 136 - 33, 0));
        assertEquals(34, Worker.claimSize(8, 128, 128, 136 - 34, 0));
    }

    @Test
    void claimingNeverOutrunsTheCompleterAndAZeroPrefetchClaimsOnlyFreeThreads() {
        // 20 finished attempts not recorded yet, out of a limit of 12: the claimer waits for the completer
        assertEquals(0, Worker.claimSize(8, 128, 2, 4, 20));
        assertEquals(4, Worker.claimSize(8, 128, 2, 4, 16));
        // prefetch 0: what the threads can start, as soon as one is free
        assertEquals(1, Worker.claimSize(8, 0, Worker.jobsPerClaimRoundTrip(8, 0, 5 * MS, 1 * MS), 7, 0));
        assertEquals(0, Worker.claimSize(8, 0, 0, 8, 0));
    }
}

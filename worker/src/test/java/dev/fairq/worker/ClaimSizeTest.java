package dev.fairq.worker;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The claimer's decision, as numbers: how many jobs it holds beyond its threads, and when it claims again. */
class ClaimSizeTest {
    private static final double MS = 1_000_000;

    @Test
    void aRoundTripsWorthOfJobsIsWhatTheThreadsFinishDuringOneClaim() {
        assertEquals(1.6, Worker.jobsPerClaimRoundTrip(8, 128, 1 / (5 * MS), 1 * MS), 1e-9); // 8 x 1 / 5
        assertEquals(128, Worker.jobsPerClaimRoundTrip(8, 128, 1 / (0.01 * MS), 1 * MS)); // no-ops: the prefetch caps it
        // nothing finished yet: one a round trip, so a fresh worker holds 3 beyond its threads, not the prefetch
        assertEquals(1, Worker.jobsPerClaimRoundTrip(8, 128, 0, 0));
        assertEquals(1, Worker.jobsPerClaimRoundTrip(8, 128, 0, 1 * MS));
        assertEquals(11, Worker.claimSize(8, 128, Worker.jobsPerClaimRoundTrip(8, 128, 0, 1 * MS), 0, 0));
        assertEquals(0, Worker.jobsPerClaimRoundTrip(8, 0, 0, 0)); // no prefetch at all: none
        // 97 of 100 runs 5 ms, 3 run 200 ms (costfair's mix by starts): the threads free up at about the quick
        // jobs' pace (1.55 a round trip), where the mean run time (10.9 ms) would say 0.74
        double mixRate = 0.97 / (5 * MS) + 0.03 / (200 * MS);
        assertEquals(1.55, Worker.jobsPerClaimRoundTrip(8, 128, mixRate, 1 * MS), 0.01);
    }

    @Test
    void withFiveMillisecondJobsTheWorkerClaimsAgainWhileThreeHeldJobsStillWaitForAThread() {
        double perClaim = Worker.jobsPerClaimRoundTrip(8, 128, 1 / (5 * MS), 1 * MS);
        // holds up to 8 + ceil(3 x 1.6) = 13; 8 running and 3 held: claim 2 more now, before a thread idles
        assertEquals(2, Worker.claimSize(8, 128, perClaim, 11, 0));
        // 8 running and 4 held: one more is not a worthwhile batch yet
        assertEquals(0, Worker.claimSize(8, 128, perClaim, 12, 0));
        assertEquals(0, Worker.claimSize(8, 128, perClaim, 13, 0));
        // idle: everything it may hold, at once
        assertEquals(13, Worker.claimSize(8, 128, perClaim, 0, 0));
    }

    @Test
    void slowJobsAreHeldOneAtMostAndNoOpsKeepTheirBatches() {
        double slow = Worker.jobsPerClaimRoundTrip(8, 128, 1 / (1_000 * MS), 1 * MS); // 1 s jobs: 0.008
        assertEquals(0, Worker.claimSize(8, 128, slow, 9, 0)); // 8 running, 1 held: full
        assertEquals(1, Worker.claimSize(8, 128, slow, 8, 0)); // the held one started: claim its successor
        // no-ops: 128 held beyond 8 threads, claimed in batches of a quarter of 136
        assertEquals(0, Worker.claimSize(8, 128, 128, 136 - 33, 0));
        assertEquals(34, Worker.claimSize(8, 128, 128, 136 - 34, 0));
    }

    @Test
    void claimingNeverOutrunsTheCompleterAndAZeroPrefetchClaimsOnlyFreeThreads() {
        // limit 8 + 6 = 14; 30 finished attempts not recorded yet: the claimer waits for the completer
        assertEquals(0, Worker.claimSize(8, 128, 2, 4, 30));
        assertEquals(4, Worker.claimSize(8, 128, 2, 4, 20));
        // prefetch 0: what the threads can start, as soon as one is free
        double none = Worker.jobsPerClaimRoundTrip(8, 0, 1 / (5 * MS), 1 * MS);
        assertEquals(1, Worker.claimSize(8, 0, none, 7, 0));
        assertEquals(0, Worker.claimSize(8, 0, none, 8, 0));
    }
}

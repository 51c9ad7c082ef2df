package dev.fairq.scheduler;

import dev.fairq.schema.SettableClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The token bucket alone, on a settable clock: no database, no real time. */
class TokenBucketTest {
    private final SettableClock clock = new SettableClock();

    /** A bucket at {@code rate} that started full at {@code burst} and had all of it taken: empty, on the clock's now. */
    private TokenBucket emptied(double rate, int burst) {
        TokenBucket bucket = new TokenBucket(rate, burst, clock::nanoTime);
        bucket.take(burst);
        assertEquals(0, bucket.available());
        return bucket;
    }

    @Test
    void startsFullAtBurst() {
        TokenBucket bucket = new TokenBucket(10, 5, clock::nanoTime);
        assertEquals(5, bucket.available());
        assertEquals(0, bucket.nanosUntilNextToken());
        bucket.take(5);
        assertEquals(0, bucket.available());
    }

    /** A reserved token leaves at once and keeps its place: bucket plus reserved never exceeds burst. */
    @Test
    void aReservedTokenCapsTheRefillUntilSettled() {
        TokenBucket bucket = new TokenBucket(10, 5, clock::nanoTime);
        bucket.reserve();
        assertEquals(4, bucket.available());
        clock.advance(Duration.ofHours(1));
        assertEquals(4, bucket.available(), "refills to burst minus the reserved token");

        bucket.settleReservation(true); // used: the token is spent, the place is free again
        assertEquals(4, bucket.available());
        clock.advance(Duration.ofMillis(100));
        assertEquals(5, bucket.available());

        bucket.reserve();
        bucket.take(4);
        bucket.settleReservation(false); // taken back unused: refunded
        assertEquals(1, bucket.available());
        bucket.settleReservation(false); // nothing reserved: nothing to settle
        assertEquals(1, bucket.available());
    }

    /** A new leader adopting a grant it did not make may overdraw: admissions wait until it is paid back. */
    @Test
    void adoptingAReservationMayOverdraw() {
        TokenBucket bucket = emptied(10, 1);
        bucket.reserve();
        assertEquals(0, bucket.available());
        clock.advance(Duration.ofMillis(100));
        assertEquals(0, bucket.available(), "a tenth of a second pays back the overdraft only");
        bucket.settleReservation(true);
        clock.advance(Duration.ofMillis(100));
        assertEquals(1, bucket.available());
    }

    @Test
    void refillsContinuouslyAtRate() {
        TokenBucket bucket = emptied(10, 5);

        clock.advance(Duration.ofMillis(99));
        assertEquals(0, bucket.available(), "0.99 of a token is not a token");
        clock.advance(Duration.ofMillis(1));
        assertEquals(1, bucket.available(), "10/s: one token after 100 ms");
        clock.advance(Duration.ofMillis(250));
        assertEquals(3, bucket.available(), "3.5 tokens after 350 ms: whole tokens only");
        bucket.take(3);
        assertEquals(0, bucket.available());
        clock.advance(Duration.ofMillis(50));
        assertEquals(1, bucket.available(), "the half token left over was kept, not rounded away");
    }

    @Test
    void neverHoldsMoreThanBurst() {
        TokenBucket bucket = new TokenBucket(10, 5, clock::nanoTime);
        clock.advance(Duration.ofHours(1));
        assertEquals(5, bucket.available());
        bucket.take(5);
        clock.advance(Duration.ofHours(1));
        assertEquals(5, bucket.available(), "idle time does not bank tokens beyond burst");
    }

    @Test
    void takingMoreThanAvailableIsRefused() {
        TokenBucket bucket = new TokenBucket(10, 5, clock::nanoTime);
        bucket.take(3);
        assertThrows(IllegalStateException.class, () -> bucket.take(3));
        assertEquals(2, bucket.available(), "a refused take takes nothing");
    }

    @Test
    void nanosUntilNextToken() {
        TokenBucket bucket = emptied(10, 5);
        assertEquals(100_000_000L, bucket.nanosUntilNextToken(), 1, "empty at 10/s: 100 ms to the next token");
        clock.advance(Duration.ofMillis(30));
        long wait = bucket.nanosUntilNextToken();
        assertEquals(70_000_000L, wait, 1, "30 ms earned 0.3 of a token");
        clock.advance(Duration.ofNanos(wait - 1_000));
        assertEquals(0, bucket.available(), "just before the promised time there is no token yet");
        clock.advance(Duration.ofNanos(1_000));
        assertEquals(1, bucket.available(), "at the promised time the token is there");
        assertEquals(0, bucket.nanosUntilNextToken());
    }

    @Test
    void reconfigureKeepsEarnedTokensUpToTheNewBurst() {
        TokenBucket bucket = emptied(10, 5);
        clock.advance(Duration.ofMillis(300));
        bucket.reconfigure(10, 2);
        assertEquals(2, bucket.available(), "3 earned, cut to the new burst of 2");

        bucket.reconfigure(10, 20);
        assertEquals(2, bucket.available(), "a bigger burst is room to earn into, not a gift");
        clock.advance(Duration.ofSeconds(1));
        assertEquals(12, bucket.available());
        clock.advance(Duration.ofSeconds(10));
        assertEquals(20, bucket.available(), "the new burst is the new cap");
    }

    @Test
    void reconfigureSettlesTheOldRateFirst() {
        TokenBucket bucket = emptied(10, 20);
        clock.advance(Duration.ofMillis(500));
        bucket.reconfigure(1, 20);
        assertEquals(5, bucket.available(), "the 500 ms before the change were earned at 10/s");
        assertEquals(1.0, bucket.ratePerSecond());
        bucket.take(5);
        clock.advance(Duration.ofMillis(999));
        assertEquals(0, bucket.available(), "from the change on: 1/s");
        clock.advance(Duration.ofMillis(1));
        assertEquals(1, bucket.available());
    }

    /**
     * The documented bound, as a property: a greedy taker (takes every whole token the moment it sees it) at
     * random moments over 60 simulated seconds is, over every window [a, b] of its take times, never given
     * more than {@code burst + rate * (b - a)}. Steps are random nanosecond counts, so fractional tokens are
     * exercised; occasional long gaps make the bucket hit its cap.
     */
    @ParameterizedTest
    @ValueSource(longs = {1, 2, 3, 42, 4711, 20240501})
    void greedyTakerNeverExceedsBurstPlusRateTimesWindow(long seed) {
        double rate = 10;
        int burst = 5;
        TokenBucket bucket = new TokenBucket(rate, burst, clock::nanoTime);
        long start = clock.nanoTime();
        long end = start + Duration.ofSeconds(60).toNanos();
        Random random = new Random(seed);

        List<long[]> takes = new ArrayList<>(); // (time, how many)
        while (clock.nanoTime() <= end) {
            int n = bucket.available();
            if (n > 0) {
                bucket.take(n);
                takes.add(new long[]{clock.nanoTime(), n});
            }
            long step = switch (random.nextInt(20)) {
                case 0 -> 0;                                                     // same instant again
                case 1 -> Duration.ofMillis(500 + random.nextInt(2500)).toNanos(); // a long gap: the cap matters
                default -> 1 + (long) (random.nextDouble() * 150_000_000L);     // up to 150 ms
            };
            clock.advance(Duration.ofNanos(step));
        }

        assertTrue(takes.size() > 100, "the simulation took tokens many times: " + takes.size());
        assertWindowBound(takes, burst, rate);
    }

    /**
     * Work conservation: a taker that comes at least every 400 ms never lets the bucket overflow, so over
     * 60 s it gets all of it: burst + rate * 60, less the fraction of a token not yet whole.
     */
    @ParameterizedTest
    @ValueSource(longs = {7, 8, 9})
    void frequentTakerGetsEveryToken(long seed) {
        TokenBucket bucket = new TokenBucket(10, 5, clock::nanoTime);
        long start = clock.nanoTime();
        long end = start + Duration.ofSeconds(60).toNanos();
        Random random = new Random(seed);
        long total = 0;
        while (true) {
            int n = bucket.available();
            bucket.take(n);
            total += n;
            if (clock.nanoTime() == end) break;
            clock.advance(Duration.ofNanos(Math.min(end - clock.nanoTime(), 1 + (long) (random.nextDouble() * 400_000_000L))));
        }
        assertTrue(total >= 5 + 10 * 60 - 1 && total <= 5 + 10 * 60, "took " + total + " of 605");
    }

    /** Every window [takes[i].time, takes[j].time]: sum of takes i..j <= burst + rate * (t_j - t_i). */
    static void assertWindowBound(List<long[]> takes, int burst, double rate) {
        for (int i = 0; i < takes.size(); i++) {
            long sum = 0;
            for (int j = i; j < takes.size(); j++) {
                sum += takes.get(j)[1];
                double seconds = (takes.get(j)[0] - takes.get(i)[0]) / 1e9;
                double bound = burst + rate * seconds;
                if (sum > bound + 1e-6) {
                    throw new AssertionError(String.format(
                            "%d taken in the %.6f s window from take %d to take %d; the bound is %.6f",
                            sum, seconds, i, j, bound));
                }
            }
        }
    }
}

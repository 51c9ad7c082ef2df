package dev.fairq.scheduler;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The selection behind a round's short list agrees with sorting, ties and infinities included. */
class ShortListTest {
    @Test
    void theKthSmallestIsWhatSortingPutsAtK() {
        Random random = new Random(42);
        for (int trial = 0; trial < 2_000; trial++) {
            int n = 1 + random.nextInt(300);
            double[] a = new double[n];
            // few distinct values: ties everywhere, as among tenants that were served equally
            int distinct = 1 + random.nextInt(trial % 2 == 0 ? 5 : 1_000);
            for (int i = 0; i < n; i++) {
                a[i] = random.nextInt(distinct) * 0.5;
                if (random.nextInt(50) == 0) a[i] = Double.POSITIVE_INFINITY;
            }
            double[] sorted = a.clone();
            Arrays.sort(sorted);
            int k = random.nextInt(n);
            assertEquals(sorted[k], Scheduler.kthSmallest(a.clone(), k), "trial " + trial + ", k " + k);
        }
    }
}

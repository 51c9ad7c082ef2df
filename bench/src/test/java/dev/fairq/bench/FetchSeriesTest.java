package dev.fairq.bench;

import org.junit.jupiter.api.Test;

import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The metrics phase's reading of its scrapes: a size is reported only from whole 200 answers. */
class FetchSeriesTest {
    private static TenantsBench.Fetcher answers(FairqServer.Fetch... fetches) {
        Iterator<FairqServer.Fetch> it = List.of(fetches).iterator();
        return it::next;
    }

    @Test
    void wholeAnswersGiveTheLargestSizeAndTheMedianTime() throws Exception {
        Map<String, Object> m = TenantsBench.fetchSeries("GET /metrics", answers(new FairqServer.Fetch(200, 400_000, 50, false),
                new FairqServer.Fetch(200, 414_020, 90, false), new FairqServer.Fetch(200, 410_000, 70, false)), 3, 150_000);
        assertEquals(414_020L, m.get("bytes"));
        assertEquals(70.0, m.get("ms"));
        assertEquals(3, m.get("requests"));
    }

    @Test
    void anErrorAnswerIsNotASize() {
        // a 500's small body used to be printed as metrics_bytes, under the 1,000,000 target
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> TenantsBench.fetchSeries("GET /metrics",
                answers(new FairqServer.Fetch(500, 57, 3, false)), 5, 150_000));
        assertTrue(e.getMessage().contains("500"), e.getMessage());
    }

    @Test
    void aScrapeWithNoAnswerWithinItsDeadlineHasNoSize() throws Exception {
        // the headers never came: 0 bytes read, which used to be printed as metrics_bytes 0
        Map<String, Object> m = TenantsBench.fetchSeries("GET /metrics", answers(new FairqServer.Fetch(0, 0, 120_000, true)), 5, 150_000);
        assertNull(m.get("bytes"));
        assertEquals(0L, m.get("bytes_at_least"));
        assertEquals(true, m.get("cut_short_at_120_s"));
        Map<String, Object> partial = TenantsBench.fetchSeries("GET /metrics",
                answers(new FairqServer.Fetch(200, 800_000, 120_000, true)), 5, 150_000);
        assertNull(partial.get("bytes"), "a body cut short is a lower bound, not the endpoint's size");
        assertEquals(800_000L, partial.get("bytes_at_least"));
    }
}

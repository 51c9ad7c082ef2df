package dev.fairq.api;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.testing.TestDatabase;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * fairq_claim_latency_seconds is measured on the database's clock from admitted_at to the claim (started_at), then on
 * this JVM's monotonic clock for the wait for a thread: never this JVM's wall clock against the database's
 * admitted_at. With the database's clock an hour ahead of the worker's host, the latency had come out negative and
 * was not observed at all (an hour behind, it would have been an hour).
 */
class ClaimLatencyMetricTest {
    @Test
    void claimLatencyIsAdmissionToClaimOnTheDatabasesClockPlusTheWaitForAThread() throws IOException {
        String tenant = "cl-" + UUID.randomUUID().toString().substring(0, 8);
        FairqMetrics metrics = new FairqMetrics(TestDatabase.get().dsl(), 3, () -> null);
        OffsetDateTime admitted = OffsetDateTime.now().plusHours(1); // the database's clock, an hour ahead of ours
        for (OffsetDateTime dbNow : new OffsetDateTime[] {admitted, admitted.minusHours(2)}) {
            ClaimedJob job = new ClaimedJob(1, tenant, "default", "noop", "{}", 1, 1, null, null, dbNow, dbNow, 0, null,
                    1, 0, dbNow.plus(Duration.ofMillis(5)));
            metrics.started(job, Duration.ofMillis(2).toNanos());
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrometheusTextFormatWriter.create().write(out, metrics.scrape());
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(2, value(text, "fairq_claim_latency_seconds_count{tenant=\"" + tenant + "\"}"), 0, text);
        assertEquals(0.014, value(text, "fairq_claim_latency_seconds_sum{tenant=\"" + tenant + "\"}"), 1e-6,
                "5 ms from admission to the claim and 2 ms for a thread, twice");
    }

    private static double value(String text, String series) {
        for (String line : text.split("\n")) {
            if (line.startsWith(series + " ")) return Double.parseDouble(line.substring(series.length() + 1).trim());
        }
        return Double.NaN;
    }
}

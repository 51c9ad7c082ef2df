package dev.fairq.api;

import dev.fairq.schema.ClaimedJob;
import dev.fairq.schema.JobOutcome;
import dev.fairq.testing.TestDatabase;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import org.jooq.DSLContext;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.OffsetDateTime;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * /metrics stays small however many tenants exist: only the K tenants with the most work (then the most recent
 * activity) have series of their own, the rest are summed into tenant="_other", sums over tenants stay totals,
 * and a tenant's counters start at 0 when its series appear. Against the test database, scraped as Prometheus
 * text.
 */
class BoundedMetricsTest {
    private static final Pattern TENANT = Pattern.compile("tenant=\"([^\"]+)\"");

    final TestDatabase db = TestDatabase.get();
    final DSLContext dsl = db.dsl();

    /** Jobs other test classes left waiting would take places among the K (their tenants and the rest stay). */
    @org.junit.jupiter.api.BeforeEach
    void noJobsWaiting() {
        dsl.execute("DELETE FROM jobs WHERE status IN ('pending', 'ready', 'running')");
    }

    private String scrape(FairqMetrics metrics) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrometheusTextFormatWriter.create().write(out, metrics.scrape());
        return out.toString(java.nio.charset.StandardCharsets.UTF_8);
    }

    private static Set<String> tenants(String text) {
        Set<String> out = new HashSet<>();
        Matcher m = TENANT.matcher(text);
        while (m.find()) out.add(m.group(1));
        return out;
    }

    /** Jobs waiting an hour (no worker starts them), inserted directly: a backlog of n. */
    private void backlog(String tenant, int n) {
        db.createTenant(tenant);
        dsl.execute("INSERT INTO jobs (tenant_id, type, run_at) SELECT ?, 'noop', now() + interval '1 hour' "
                + "FROM generate_series(1, ?)", tenant, n);
    }

    private static double value(String text, String series) {
        for (String line : text.split("\n")) {
            if (line.startsWith(series + " ")) return Double.parseDouble(line.substring(series.length() + 1).trim());
        }
        throw new AssertionError("no series " + series + " in\n" + text);
    }

    @Test
    void onlyTheTopTenantsHaveSeriesTheRestAreSummedAndNewSeriesStartAtZero() throws IOException {
        String run = UUID.randomUUID().toString().substring(0, 6);
        String big = "mb-" + run + "-big", mid = "mb-" + run + "-mid", small = "mb-" + run + "-small";
        backlog(big, 900);
        backlog(mid, 800);
        for (int i = 0; i < 30; i++) backlog("mb-" + run + "-tail-" + i, 1);
        backlog(small, 700);
        // one untracked tenant's job has waited an hour: never among the K by backlog, it must still show
        dsl.execute("UPDATE jobs SET created_at = now() - interval '1 hour' WHERE tenant_id = ?", "mb-" + run + "-tail-0");
        FairqMetrics metrics = new FairqMetrics(dsl, 3, () -> null);

        String text = scrape(metrics);
        double otherAge = value(text, "fairq_oldest_pending_age_seconds{tenant=\"" + FairqMetrics.OTHER + "\"}");
        assertTrue(otherAge >= 3600 && otherAge < 3700, "_other's oldest pending job is the untracked one of an hour: " + otherAge);
        assertTrue(value(text, "fairq_oldest_pending_age_seconds{tenant=\"" + big + "\"}") < 600);
        Set<String> labelled = tenants(text);
        assertEquals(Set.of(big, mid, small, FairqMetrics.OTHER), labelled, "K = 3 tenants of their own, the rest summed");
        long pendingAll = db.count("SELECT count(*) FROM jobs WHERE status = 'pending'");
        double sum = 0;
        for (String t : labelled) sum += value(text, "fairq_jobs{status=\"pending\",tenant=\"" + t + "\"}");
        assertEquals(pendingAll, sum, 0.5, "summed over tenants, the gauge is the total");
        assertEquals(900, value(text, "fairq_jobs{status=\"pending\",tenant=\"" + big + "\"}"), 0.5);
        // series of a tracked tenant exist from the start, at 0: rate() sees its first dead letter
        assertEquals(0, value(text, "fairq_job_dead_letters_total{tenant=\"" + big + "\"}"), 0);

        ClaimedJob job = new ClaimedJob(1, big, "default", "noop", "{}", 1, 1, null, null,
                OffsetDateTime.now(), OffsetDateTime.now(), 0, null);
        metrics.started(job);
        metrics.finished(job, new JobOutcome.Failed(1, 1, true, 0, "x"), 1_000_000);
        ClaimedJob other = new ClaimedJob(2, "mb-" + run + "-tail-0", "default", "noop", "{}", 1, 1, null, null,
                OffsetDateTime.now(), OffsetDateTime.now(), 0, null);
        metrics.started(other);
        text = scrape(metrics);
        assertEquals(1, value(text, "fairq_job_dead_letters_total{tenant=\"" + big + "\"}"), 0);
        assertTrue(value(text, "fairq_job_starts_total{tenant=\"" + FairqMetrics.OTHER + "\"}") >= 1,
                "an untracked tenant's start is counted in _other");

        // the biggest backlog drains: that tenant loses its series, the next one in line gets them, from 0
        dsl.execute("DELETE FROM jobs WHERE tenant_id = ?", big);
        backlog("mb-" + run + "-new", 600);
        text = scrape(metrics);
        labelled = tenants(text);
        assertFalse(labelled.contains("mb-" + run + "-tail-1"));
        assertTrue(labelled.contains("mb-" + run + "-new"));
        assertEquals(0, value(text, "fairq_job_dead_letters_total{tenant=\"mb-" + run + "-new\"}"), 0);
        assertTrue(labelled.size() <= 4, "never more than K + _other: " + labelled);
        dsl.execute("DELETE FROM jobs WHERE tenant_id LIKE ?", "mb-" + run + "-%");
    }

    /**
     * A scrape that drops a tenant's series waits for an event that had already chosen that tenant's label: had it
     * not, the event recorded after the drop and re-created the series outside the tracked set, where they stayed
     * until the set changed again (and its counts were missing from _other).
     */
    @Test
    void aDroppedTenantsSeriesAreNotRecreatedByAnEventThatChoseThemBefore() throws Exception {
        String run = UUID.randomUUID().toString().substring(0, 6);
        String a = "mb-" + run + "-a", b = "mb-" + run + "-b";
        backlog(a, 950);
        FairqMetrics metrics = new FairqMetrics(dsl, 1, () -> null);
        assertEquals(Set.of(a, FairqMetrics.OTHER), tenants(scrape(metrics)));

        CountDownLatch labelled = new CountDownLatch(1), release = new CountDownLatch(1);
        metrics.afterLabel = () -> {
            if (!Thread.currentThread().getName().equals("recorder")) return;
            labelled.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
        ClaimedJob job = new ClaimedJob(1, a, "default", "noop", "{}", 1, 1, null, null,
                OffsetDateTime.now(), OffsetDateTime.now(), 0, null);
        Thread recorder = new Thread(() -> metrics.finished(job, new JobOutcome.Failed(1, 1, true, 0, "x"), 1_000_000),
                "recorder");
        recorder.setDaemon(true); // a failed assertion below must not leave the JVM waiting for it
        recorder.start();
        assertTrue(labelled.await(60, TimeUnit.SECONDS), "the recorder chose its label");

        backlog(b, 2_000); // b outranks a: the next scrape drops a's series
        Thread scraper = new Thread(() -> {
            try {
                scrape(metrics);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }, "scraper");
        scraper.setDaemon(true);
        scraper.start();
        // the scrape either finished, dropping a's series under the recorder, or waits for the recorder to finish
        await().atMost(60, TimeUnit.SECONDS).until(() -> !scraper.isAlive() || waitsToChangeSeries(scraper));
        release.countDown();
        recorder.join(60_000);
        scraper.join(60_000);
        assertFalse(recorder.isAlive() || scraper.isAlive());

        String text = scrape(metrics);
        assertEquals(Set.of(b, FairqMetrics.OTHER), tenants(text), "only the tracked tenant and _other have series");
        assertEquals(0, value(text, "fairq_job_dead_letters_total{tenant=\"" + b + "\"}"), 0);
        dsl.execute("DELETE FROM jobs WHERE tenant_id LIKE ?", "mb-" + run + "-%");
    }

    private static ClaimedJob jobOf(String tenant, long id) {
        return new ClaimedJob(id, tenant, "default", "noop", "{}", 1, 1, null, null,
                OffsetDateTime.now(), OffsetDateTime.now(), 0, null);
    }

    /**
     * A tenant that had no series fails before any scrape: its series appear at 0 and its failure is counted one
     * scrape later, under its own label, so a real Prometheus server's rate() sees the tenant's first dead letter
     * (counted in _other, it never would; shown at once, the series' first sample would already hold it).
     */
    @Test
    void aNewTenantsFirstFailureShowsUnderItsOwnSeriesAfterAScrapeShowedThemAtZero() throws IOException {
        String run = UUID.randomUUID().toString().substring(0, 6);
        String fresh = "mb-" + run + "-fresh", crowded = "mb-" + run + "-crowded";
        FairqMetrics metrics = new FairqMetrics(dsl, 1, () -> null);
        String text = scrape(metrics);
        assertFalse(tenants(text).contains(fresh));
        double otherDeadBefore = value(text, "fairq_job_dead_letters_total{tenant=\"" + FairqMetrics.OTHER + "\"}");

        metrics.started(jobOf(fresh, 1));
        metrics.finished(jobOf(fresh, 1), new JobOutcome.Failed(1, 1, true, 0, "x"), 1_000_000);
        // K = 1 is taken now: another new tenant is counted in _other
        metrics.finished(jobOf(crowded, 2), new JobOutcome.Failed(2, 1, true, 0, "x"), 1_000_000);

        text = scrape(metrics);
        assertEquals(0, value(text, "fairq_job_dead_letters_total{tenant=\"" + fresh + "\"}"), 0, "first shown at 0");
        assertEquals(0, value(text, "fairq_job_starts_total{tenant=\"" + fresh + "\"}"), 0);
        assertEquals(otherDeadBefore + 1, value(text, "fairq_job_dead_letters_total{tenant=\"" + FairqMetrics.OTHER + "\"}"), 0,
                "only the tenant that found no room is in _other");
        assertFalse(tenants(text).contains(crowded));

        text = scrape(metrics);
        assertEquals(1, value(text, "fairq_job_dead_letters_total{tenant=\"" + fresh + "\"}"), 0, "then counted, as its own");
        assertEquals(1, value(text, "fairq_job_starts_total{tenant=\"" + fresh + "\"}"), 0);
        assertEquals(1, value(text, "fairq_job_duration_seconds_count{tenant=\"" + fresh + "\"}"), 0);
        assertEquals(otherDeadBefore + 1, value(text, "fairq_job_dead_letters_total{tenant=\"" + FairqMetrics.OTHER + "\"}"), 0);
    }

    /** A tenant whose series a scrape drops before any showed them: what it held back is counted in _other, not lost. */
    @Test
    void whatADroppedTenantHeldBackIsCountedInOther() throws IOException {
        String run = UUID.randomUUID().toString().substring(0, 6);
        String quiet = "mb-" + run + "-quiet", busy = "mb-" + run + "-busy";
        FairqMetrics metrics = new FairqMetrics(dsl, 1, () -> null);
        double otherDeadBefore = value(scrape(metrics), "fairq_job_dead_letters_total{tenant=\"" + FairqMetrics.OTHER + "\"}");
        metrics.finished(jobOf(quiet, 1), new JobOutcome.Failed(1, 1, true, 0, "x"), 1_000_000);
        backlog(busy, 2_000); // busy outranks quiet at the next scrape
        String text = scrape(metrics);
        assertEquals(Set.of(busy, FairqMetrics.OTHER), tenants(text));
        assertEquals(otherDeadBefore + 1, value(text, "fairq_job_dead_letters_total{tenant=\"" + FairqMetrics.OTHER + "\"}"), 0);
        dsl.execute("DELETE FROM jobs WHERE tenant_id LIKE ?", "mb-" + run + "-%");
    }

    private static double sumOverTenants(String text, String family) {
        double sum = 0;
        for (String line : text.split("\n")) {
            if (line.startsWith(family + "{tenant=\"")) sum += Double.parseDouble(line.substring(line.indexOf("} ") + 2).trim());
        }
        return sum;
    }

    /**
     * A tenant dropped from the K with counts no scrape has shown yet keeps its series for one more scrape, which
     * shows them: removed at once, they were in no series any scrape showed (a tenant that started 3 jobs before
     * the first scrape and was not chosen by it: the 3 were neither under its label nor in _other), so sums over
     * tenants lost them. Its later events go to _other, and the scrape after removes its series.
     */
    @Test
    void aDroppedTenantsLastCountsAreShownBeforeItsSeriesGo() throws IOException {
        String run = UUID.randomUUID().toString().substring(0, 6);
        String early = "mb-" + run + "-early", busy = "mb-" + run + "-busy";
        FairqMetrics metrics = new FairqMetrics(dsl, 1, () -> null);
        // before any scrape: the first event's tenant takes the one place, its events counted at once
        for (int i = 0; i < 3; i++) metrics.started(jobOf(early, i));
        backlog(busy, 2_000); // busy outranks early at the first scrape
        String text = scrape(metrics);
        assertEquals(3, sumOverTenants(text, "fairq_job_starts_total"), 0, "the 3 starts are in some series:\n" + text);
        assertEquals(3, value(text, "fairq_job_starts_total{tenant=\"" + early + "\"}"), 0);

        metrics.started(jobOf(early, 4)); // dropped: counted in _other
        text = scrape(metrics);
        assertEquals(Set.of(busy, FairqMetrics.OTHER), tenants(text), "the retired series are gone");
        assertEquals(1, value(text, "fairq_job_starts_total{tenant=\"" + FairqMetrics.OTHER + "\"}"), 0);

        // a tracked tenant's counts since the last scrape, when a scrape drops it, are shown the same way
        String late = "mb-" + run + "-late";
        dsl.execute("DELETE FROM jobs WHERE tenant_id = ?", busy);
        backlog(late, 10);
        text = scrape(metrics);
        assertEquals(Set.of(late, FairqMetrics.OTHER), tenants(text));
        metrics.finished(jobOf(late, 5), new JobOutcome.Failed(1, 1, true, 0, "x"), 1_000_000);
        text = scrape(metrics);
        assertEquals(1, value(text, "fairq_job_dead_letters_total{tenant=\"" + late + "\"}"), 0);
        metrics.finished(jobOf(late, 6), new JobOutcome.Failed(1, 1, true, 0, "x"), 1_000_000);
        String busier = "mb-" + run + "-busier";
        backlog(busier, 2_000);
        text = scrape(metrics);
        assertEquals(2, value(text, "fairq_job_dead_letters_total{tenant=\"" + late + "\"}"), 0, "its last dead letter shown");
        assertEquals(2, sumOverTenants(text, "fairq_job_dead_letters_total"), 0);
        text = scrape(metrics);
        assertEquals(Set.of(busier, FairqMetrics.OTHER), tenants(text));
        dsl.execute("DELETE FROM jobs WHERE tenant_id LIKE ?", "mb-" + run + "-%");
    }

    /** A job the reaper took back (its worker died) is a retry, or a dead letter on its last attempt. */
    @Test
    void aReapedJobCountsAsARetryOrADeadLetter() throws IOException {
        String tenant = "mb-" + UUID.randomUUID().toString().substring(0, 6) + "-reaped";
        FairqMetrics metrics = new FairqMetrics(dsl, 3, () -> null);
        scrape(metrics);
        metrics.reaped(tenant, "pending");
        metrics.reaped(tenant, "dead");
        metrics.reaped(tenant, "cancelled");
        String text = scrape(metrics);
        text = scrape(metrics);
        assertEquals(1, value(text, "fairq_job_retries_total{tenant=\"" + tenant + "\"}"), 0, text);
        assertEquals(1, value(text, "fairq_job_dead_letters_total{tenant=\"" + tenant + "\"}"), 0, text);
        assertEquals(0, value(text, "fairq_job_successes_total{tenant=\"" + tenant + "\"}"), 0, text);
    }

    @Test
    void everySkippedFireReasonStartsAtZero() throws IOException {
        String text = scrape(new FairqMetrics(dsl, 1, () -> null));
        for (String reason : dev.fairq.scheduler.ScheduleObserver.SKIP_REASONS) {
            assertEquals(0, value(text, "fairq_schedule_skipped_fires_total{reason=\"" + reason + "\"}"), 0, reason);
        }
    }

    /** Keys a job may carry (1-255 characters, no control character): quotes, backslashes, braces, unicode, long. */
    private static final List<String> ODD_KEYS = List.of("q\"uo\\te", "trail\\", "\\\"", "ünï 😀 {x=\"y\"} #",
            "line\u2028sep", "\\n", "é".repeat(255));

    /** One ready job for each odd key (as fairness and as concurrency key), of a type no worker runs. */
    private void oddKeys(String tenant) {
        db.createTenant(tenant);
        // running under a lease of an hour held by no worker: ready rows were claimed (and failed) by the shared
        // TestApp's worker when another test class had started it, and the scrape then had no key series at all
        for (String k : ODD_KEYS) {
            for (String column : List.of("fairness_key", "concurrency_key")) {
                dsl.execute("INSERT INTO jobs (tenant_id, type, status, attempts, started_at, locked_by, locked_until, "
                        + column + ") VALUES (?, 'mb-no-worker', 'running', 1, now(), 'mb-nobody', now() + interval '1 hour', ?)",
                        tenant, k);
            }
        }
    }

    /** fairq_key_jobs' key label values, unescaped as the text format says (backslash, quote, newline). */
    private static Set<String> keyLabels(String text) {
        Set<String> out = new HashSet<>();
        for (String line : text.split("\n")) {
            if (!line.startsWith("fairq_key_jobs{")) continue;
            int at = line.indexOf("key=\"") + 5;
            StringBuilder key = new StringBuilder();
            for (int i = at; line.charAt(i) != '"'; i++) {
                char c = line.charAt(i);
                if (c == '\\') {
                    char n = line.charAt(++i);
                    key.append(n == 'n' ? '\n' : n);
                } else {
                    key.append(c);
                }
            }
            out.add(key.toString());
        }
        return out;
    }

    @Test
    void oddKeysComeBackAsTheyWereAfterTheTextFormatsEscaping() throws IOException {
        String tenant = "mb-" + UUID.randomUUID().toString().substring(0, 6) + "-keys";
        oddKeys(tenant);
        String text = scrape(new FairqMetrics(dsl, 3, () -> null));
        assertEquals(Set.copyOf(ODD_KEYS), keyLabels(text), text);
        dsl.execute("DELETE FROM jobs WHERE tenant_id = ?", tenant);
    }

    /**
     * The whole scrape, odd keys and a tracked tenant's series included, passes {@code promtool check metrics}
     * (names, units, _total counters, HELP and TYPE, histogram buckets), as api/README says. Skipped, saying so,
     * where promtool is not installed (Debian: apt-get install prometheus).
     */
    @Test
    void aScrapePassesPromtool() throws Exception {
        String promtool = java.util.stream.Stream.of(System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator))
                .map(d -> java.nio.file.Path.of(d, "promtool")).filter(java.nio.file.Files::isExecutable)
                .map(java.nio.file.Path::toString).findFirst().orElse(null);
        org.junit.jupiter.api.Assumptions.assumeTrue(promtool != null,
                "SKIPPED: no promtool on the PATH (Debian: apt-get install prometheus)");
        String run = UUID.randomUUID().toString().substring(0, 6);
        String tenant = "mb-" + run + "-lint";
        oddKeys(tenant);
        dsl.execute("INSERT INTO jobs (tenant_id, type, run_at) VALUES (?, 'noop', now() + interval '1 hour')", tenant);
        FairqMetrics metrics = new FairqMetrics(dsl, 3, () -> null);
        ClaimedJob job = jobOf(tenant, 1);
        metrics.started(job);
        metrics.finished(job, new JobOutcome.Succeeded(1, 1), 2_000_000);
        scrape(metrics);
        String text = scrape(metrics);
        assertTrue(text.contains("fairq_job_duration_seconds_bucket{tenant=\"" + tenant + "\""), text);
        assertTrue(text.contains("fairq_key_jobs{"), text);
        Process p = new ProcessBuilder(promtool, "check", "metrics").redirectErrorStream(true).start();
        try (var in = p.getOutputStream()) {
            in.write(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }
        String said = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), "promtool check metrics:\n" + said + "\non:\n" + text);
        assertEquals("", said.strip(), "no lint problems:\n" + said);
        dsl.execute("DELETE FROM jobs WHERE tenant_id = ?", tenant);
    }

    private static boolean waitsToChangeSeries(Thread t) {
        if (t.getState() != Thread.State.WAITING) return false;
        for (StackTraceElement e : t.getStackTrace()) if (e.getMethodName().equals("chooseTracked")) return true;
        return false;
    }
}

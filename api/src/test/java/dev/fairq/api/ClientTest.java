package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.client.FairqClient;
import dev.fairq.client.FairqException;
import dev.fairq.client.Model;
import dev.fairq.client.NewJob;
import dev.fairq.client.RetryPolicy;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Java client against the running server: every call, every error type, and retries that honour Retry-After. */
class ClientTest extends AppTest {
    static FairqClient admin;

    @BeforeAll
    static void start() throws Exception {
        admin = app.client(TestApp.ADMIN_TOKEN);
    }

    private static JsonNode json(String text) {
        try {
            return TestApp.JSON.readTree(text);
        } catch (Exception e) {
            throw new IllegalArgumentException(e);
        }
    }

    /** The client reads every limit GET /v1/stats answers (it had left out the schedule and API rate limits). */
    @Test
    void theClientsLimitsHaveEveryFieldOfTheServersLimits() {
        assertEquals(java.util.Arrays.stream(TenantView.Limits.class.getRecordComponents()).map(c -> c.getName()).toList(),
                java.util.Arrays.stream(Model.Limits.class.getRecordComponents()).map(c -> c.getName()).toList());
    }

    /** The client reads every field of a schedule and of its fire. */
    @Test
    void theClientsScheduleHasEveryFieldOfTheServers() {
        for (Class<?>[] pair : new Class<?>[][]{{dev.fairq.scheduler.ScheduleInfo.class, Model.Schedule.class},
                {dev.fairq.scheduler.ScheduleInfo.Fire.class, Model.Fire.class}}) {
            assertEquals(java.util.Arrays.stream(pair[0].getRecordComponents()).map(c -> c.getName()).toList(),
                    java.util.Arrays.stream(pair[1].getRecordComponents()).map(c -> c.getName()).toList());
        }
    }

    /**
     * Schedules from Java, typed: create, read, list by page, pause, trigger, delete; an admin reads any tenant's. The client had no schedule calls: only send(...) and JSON trees.
     */
    @Test
    void aTenantManagesItsSchedulesAndAnAdminReadsThem() {
        String tenant = TestApp.uniqueTenant("cli-sched");
        FairqClient c = app.client(app.newTenantKey(tenant));
        Model.Schedule made = c.putSchedule("nightly", Map.of("cron", "30 2 * * *", "time_zone", "Europe/Berlin",
                "job", Map.of("type", "record", "payload", Map.of("report", "nightly"), "priority", 5)));
        assertEquals(tenant, made.tenant());
        assertEquals("Europe/Berlin", made.timeZone());
        assertEquals("record", made.job().get("type").asText());
        assertEquals(5, made.nextFires().size());
        // 02:30 in Berlin in December is 01:30 UTC
        assertEquals(1, made.nextFires().get(0).atZone(java.time.ZoneOffset.UTC).getHour());
        assertEquals(30, made.nextFires().get(0).atZone(java.time.ZoneOffset.UTC).getMinute());
        c.putSchedule("weekly", Map.of("cron", "@weekly", "time_zone", "UTC", "job", Map.of("type", "record")));

        Model.Schedules first = c.schedules(null, 1);
        assertEquals(List.of("nightly"), first.schedules().stream().map(Model.Schedule::name).toList());
        Model.Schedules second = c.schedules(first.next(), 1);
        assertEquals(List.of("weekly"), second.schedules().stream().map(Model.Schedule::name).toList());
        Model.Schedules past = c.schedules(second.next(), 1); // a full page may have a next that holds nothing
        assertEquals(List.of(), past.schedules());
        assertEquals(null, past.next());

        Model.Schedule paused = c.patchSchedule("nightly", Map.of("paused", true));
        assertTrue(paused.paused());
        assertEquals(List.of(), paused.nextFires(), "paused: no fires");

        Model.Submitted run = c.triggerSchedule("nightly"); // paused or not
        assertFalse(run.idempotentReplay());
        assertTrue(run.job().jobKey().startsWith("schedule:nightly:trigger-"), run.job().jobKey());
        assertEquals("nightly", c.get(run.job().id()).payload().get("report").asText());

        assertEquals("nightly", admin.adminSchedule(tenant, "nightly").name());
        assertEquals(List.of("nightly", "weekly"), admin.adminSchedules(tenant, null, null).schedules().stream()
                .map(Model.Schedule::name).toList());
        c.deleteSchedule("weekly");
        FairqException.NotFoundException gone = assertThrows(FairqException.NotFoundException.class, () -> c.schedule("weekly"));
        assertTrue(gone.getMessage().contains("weekly"), gone.getMessage());
        FairqException.ValidationException bad = assertThrows(FairqException.ValidationException.class,
                () -> c.putSchedule("bad", Map.of("cron", "61 * * * *", "time_zone", "UTC", "job", Map.of("type", "record"))));
        assertEquals("cron", bad.fieldErrors().get(0).field());
    }

    @Test
    void submitReplayConflictGetListCancelRetryExplainStats() {
        String tenant = TestApp.uniqueTenant("cli-jobs");
        FairqClient c = app.client(app.newTenantKey(tenant));

        Model.Submitted first = c.submit(NewJob.of("record", json("{\"x\": 1, \"y\": [2]}")).jobKey("k-1").delayMs(3_600_000L)
                .queue("emails").priority(5).maxAttempts(3));
        assertFalse(first.idempotentReplay());
        Model.Job job = first.job();
        assertEquals(tenant, job.tenant());
        assertEquals("emails", job.queue());
        assertEquals(5, job.priority());
        assertEquals(3, job.maxAttempts());
        assertEquals("pending", job.status());
        assertEquals(2, job.payload().get("y").get(0).asInt());

        Model.Submitted again = c.submit(NewJob.of("record", json("{\"y\": [2], \"x\": 1}")).jobKey("k-1").delayMs(3_600_000L)
                .queue("emails").priority(5).maxAttempts(3));
        assertTrue(again.idempotentReplay(), "the same request with the same job_key is a replay");
        assertEquals(job.id(), again.job().id());
        FairqException.ConflictException conflict = assertThrows(FairqException.ConflictException.class,
                () -> c.submit(NewJob.of("record", json("{}")).jobKey("k-1")));
        assertEquals("job_key", conflict.fieldErrors().get(0).field());

        assertEquals(job.id(), c.get(job.id()).id());
        assertThrows(FairqException.NotFoundException.class, () -> c.get(999_999_999L));

        List<Long> ids = new ArrayList<>(List.of(job.id()));
        for (int i = 0; i < 4; i++) ids.add(c.submit(NewJob.of("record", json("" + i)).delayMs(3_600_000L)).job().id());
        List<Long> listed = new ArrayList<>();
        for (Model.Job j : c.jobs(FairqClient.JobFilter.all().pageSize(2))) listed.add(j.id());
        java.util.Collections.reverse(ids);
        assertEquals(ids, listed, "every job, newest first, across three pages of two");
        assertEquals(1, c.listPage(FairqClient.JobFilter.status("pending").queue("emails"), null, null).jobs().size());

        // all five wait an hour: nothing moves them until the cancel and the retry below (a retried job runs at once)
        Model.Stats stats = c.stats();
        assertEquals(tenant, stats.tenant());
        assertEquals(5, stats.pending());
        assertEquals(1000, stats.limits().maxRunning());
        assertEquals(1000, stats.limits().maxSchedules());
        assertEquals(60, stats.limits().minScheduleIntervalS());

        assertEquals("scheduled", c.explain(job.id()).reason());
        assertNotNull(c.explain(job.id()).data().get("run_at"));
        assertEquals("cancelled", c.cancel(job.id()).status());
        assertEquals("cancelled", c.cancel(job.id()).status(), "a repeated cancel is harmless: 200, the job unchanged");
        assertEquals("pending", c.retry(job.id()).status());

    }

    @Test
    void aBatchComesBackInOrderWithItsReplays() {
        FairqClient c = app.client(app.newTenantKey(TestApp.uniqueTenant("cli-batch")));
        c.submit(NewJob.of("record", json("{}")).jobKey("b-1").delayMs(3_600_000L));
        List<Model.Submitted> out = c.submitBatch(List.of(
                NewJob.of("record", json("{}")).jobKey("b-1").delayMs(3_600_000L),
                NewJob.of("record", json("{\"n\": 2}")).delayMs(3_600_000L)));
        assertEquals(2, out.size());
        assertTrue(out.get(0).idempotentReplay());
        assertFalse(out.get(1).idempotentReplay());
        assertEquals(2, out.get(1).job().payload().get("n").asInt());
    }

    /**
     * The server keeps a payload's numbers as sent (api/README); the client read answers as doubles, so a job read
     * back had lost digits (0.12345678901234567890123 -> 0.12345678901234568, 1.50 -> 1.5), and resubmitting it
     * with its job_key was a 409 instead of a replay. The command line's --json printed the same lost digits.
     */
    @Test
    void aPayloadReadBackKeepsItsNumbersAndResubmittingItIsAReplay() throws Exception {
        FairqClient c = app.client(app.newTenantKey(TestApp.uniqueTenant("cli-num")));
        String exact = "{\"amount\":0.12345678901234567890123,\"price\":1.50,\"big\":123456789012345678901234567890}";
        JsonNode payload = dev.fairq.schema.Json.EXACT.readValue(exact);
        Model.Submitted s = c.submit(NewJob.of("record", payload).jobKey("exact").delayMs(3_600_000L));
        assertEquals(TestApp.JSON.readTree(exact).size(), s.job().payload().size());
        for (JsonNode read : List.of(s.job().payload(), c.get(s.job().id()).payload(),
                FairqClient.mapper().readTree(exact))) {
            assertEquals("0.12345678901234567890123", read.get("amount").toString());
            assertEquals("1.50", read.get("price").toString());
            assertEquals("123456789012345678901234567890", read.get("big").toString());
        }
        Model.Job back = c.get(s.job().id());
        Model.Submitted again = c.submit(NewJob.of("record", back.payload()).jobKey("exact").delayMs(3_600_000L));
        assertTrue(again.idempotentReplay(), "what was read back is the same request");
        assertEquals(s.job().id(), again.job().id());
    }

    @Test
    void errorsAreTypesWithTheServersFieldsAndNothingIsWritten() {
        String tenant = TestApp.uniqueTenant("cli-err");
        String key = app.newTenantKey(tenant);
        FairqClient c = app.client(key);
        List<Object> before = app.snapshot();

        FairqException.ValidationException one = assertThrows(FairqException.ValidationException.class,
                () -> c.submit(NewJob.of("record", json("{}")).priority(1000)));
        assertEquals(422, one.status());
        assertEquals(List.of(new Model.FieldError("priority", "must be between -100 and 100")), one.fieldErrors());
        FairqException.ValidationException batch = assertThrows(FairqException.ValidationException.class,
                () -> c.submitBatch(List.of(NewJob.of("record", json("{}")), NewJob.of("bad type!", json("{}")))));
        assertEquals("jobs[1].type", batch.fieldErrors().get(0).field());
        assertThrows(FairqException.PayloadTooLargeException.class,
                () -> c.submit(NewJob.of("record", json("\"" + "x".repeat(2000) + "\""))));
        assertThrows(FairqException.UnauthorizedException.class, () -> app.client("fqk_nobody").stats());
        assertThrows(FairqException.ForbiddenException.class, () -> c.tenants());
        assertThrows(FairqException.ForbiddenException.class, () -> admin.stats());
        assertEquals(before, app.snapshot());
    }

    /**
     * A full queue answers 429 with Retry-After and writes nothing, so the client may resubmit any job: it
     * waits what the server asked (the sleeper records the wait and meanwhile room is made) and tries again.
     */
    @Test
    void aFullQueueIsQueueFullExceptionAndRetriesWaitRetryAfter() {
        String tenant = TestApp.uniqueTenant("cli-full");
        String key = app.newTenantKey(tenant);
        admin.patchTenant(tenant, Map.of("max_queued", 1));
        FairqClient c = app.client(key);
        long waiting = c.submit(NewJob.of("record", json("{}")).delayMs(3_600_000L)).job().id();

        FairqException.QueueFullException full = assertThrows(FairqException.QueueFullException.class,
                () -> c.submit(NewJob.of("record", json("{}")).delayMs(3_600_000L)));
        assertEquals(Duration.ofSeconds(5), full.retryAfter());

        List<Duration> waits = new CopyOnWriteArrayList<>();
        FairqClient patient = FairqClient.builder("http://localhost:" + app.support.getLocalPort()).token(key)
                .retries(RetryPolicy.attempts(3).withSleeper(d -> {
                    waits.add(d);
                    c.cancel(waiting); // room for one more
                })).build();
        Model.Submitted s = patient.submit(NewJob.of("record", json("{}")).delayMs(3_600_000L));
        assertEquals(List.of(Duration.ofSeconds(5)), waits, "one wait, as long as Retry-After");
        assertEquals("pending", s.job().status());
        assertEquals(1, c.listPage(FairqClient.JobFilter.status("pending"), null, null).jobs().size());
    }

    /** The admin's job calls on any tenant's job: read, list, cancel (the client had no call for it), retry, discard. */
    @Test
    void anAdminReadsListsCancelsAndRetriesAnyTenantsJob() {
        String tenant = TestApp.uniqueTenant("cli-admjob");
        FairqClient c = app.client(app.newTenantKey(tenant));
        long id = c.submit(NewJob.of("record", json("{}")).delayMs(3_600_000L)).job().id();
        assertEquals(tenant, admin.adminJob(id).tenant());
        List<Long> listed = new ArrayList<>();
        for (Model.Job j : admin.adminJobs(FairqClient.JobFilter.all().tenant(tenant))) listed.add(j.id());
        assertEquals(List.of(id), listed);
        assertEquals("cancelled", admin.adminCancel(id).status());
        assertEquals("cancelled", c.get(id).status());
        assertEquals("pending", admin.adminRetry(id).status()); // due now: it runs
        assertThrows(FairqException.ConflictException.class, () -> admin.discard(id), "only a dead job can be discarded");
        assertThrows(FairqException.NotFoundException.class, () -> admin.adminCancel(999_999_999L));
    }

    @Test
    void anAdminManagesTenantsAndKeys() {
        String tenant = TestApp.uniqueTenant("cli-adm");
        Model.Tenant created = admin.putTenant(tenant, Map.of("weight", 3, "max_running", 5));
        assertEquals(3, created.weight());
        assertEquals(200, created.burst(), "defaults for the rest");
        Model.Tenant patched = admin.patchTenant(tenant, Map.of("rate_per_second", 2.5, "webhook_allow", List.of("Hooks.Example.com")));
        assertEquals(2.5, patched.ratePerSecond());
        assertEquals(5, patched.maxRunning(), "a patch keeps the others");
        assertEquals(List.of("hooks.example.com"), patched.webhookAllow());
        assertEquals(patched, admin.tenant(tenant));
        assertTrue(admin.tenants().stream().anyMatch(t -> t.id().equals(tenant)));
        FairqException.ValidationException bad = assertThrows(FairqException.ValidationException.class,
                () -> admin.patchTenant(tenant, Map.of("weight", 0)));
        assertEquals("weight", bad.fieldErrors().get(0).field());
        assertThrows(FairqException.NotFoundException.class, () -> admin.tenant(TestApp.uniqueTenant("none")));

        Model.NewKey k = admin.createKey(tenant);
        assertTrue(k.key().startsWith("fqk_"));
        assertEquals(tenant, app.client(k.key()).stats().tenant());
        assertEquals(List.of(k.keyId()), admin.keys(tenant).stream().map(Model.ApiKey::keyId).toList());
        admin.revokeKey(tenant, k.keyId());
        assertNotNull(admin.keys(tenant).get(0).revokedAt());
        assertThrows(FairqException.UnauthorizedException.class, () -> app.client(k.key()).stats());
    }

    /** What a proxy or a broken middlebox in front of fairq answers: a real HTTP server on a free port. */
    private interface Answerer {
        void answer(HttpExchange ex) throws Exception;
    }

    private static HttpServer proxy(Answerer answerer) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        s.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
        s.createContext("/", ex -> {
            try {
                answerer.answer(ex);
            } catch (Exception e) {
                throw new java.io.IOException(e);
            } finally {
                ex.close();
            }
        });
        s.start();
        return s;
    }

    private static void answer(HttpExchange ex, int status, String contentType, String body) throws java.io.IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().add("Content-Type", contentType);
        ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) ex.getResponseBody().write(bytes);
    }

    /**
     * The timeout bounds the whole call, not only the wait for the headers: behind a proxy that sent its headers and
     * then stalled, a call with a timeout of 1 s had waited until the proxy hung up (forever, if it never does).
     */
    @Test
    void theTimeoutBoundsAnAnswerThatStallsAfterItsHeaders() throws Exception {
        CountDownLatch hangUp = new CountDownLatch(1);
        HttpServer stalling = proxy(ex -> {
            ex.sendResponseHeaders(200, 100);
            ex.getResponseBody().write("{\"id\": ".getBytes(StandardCharsets.UTF_8));
            ex.getResponseBody().flush();
            hangUp.await(60, TimeUnit.SECONDS);
        });
        try {
            FairqClient c = FairqClient.builder("http://127.0.0.1:" + stalling.getAddress().getPort())
                    .token("t").timeout(Duration.ofSeconds(1)).build();
            FairqException.ConnectionException e = assertTimeoutPreemptively(Duration.ofSeconds(10),
                    () -> assertThrows(FairqException.ConnectionException.class, () -> c.get(1)));
            assertTrue(e.getMessage().endsWith(": timed out"), e.getMessage());
        } finally {
            hangUp.countDown();
            stalling.stop(0);
        }
    }

    /**
     * A success that is not fairq's JSON (a captive portal's sign-in page, an empty body) is an error: the typed
     * methods had answered a job with id 0 and every field null (or null itself), and submit called it a replay.
     * An HTML error page is a typed error whose message is its title.
     */
    @Test
    void anAnswerThatIsNotFairqsJsonIsAnErrorNeverAnEmptyJob() throws Exception {
        HttpServer portal = proxy(ex -> {
            switch (ex.getRequestURI().getPath()) {
                case "/portal/v1/jobs/1", "/portal/v1/jobs" -> answer(ex, 200, "text/html",
                        "<html><head><title>Sign in to the guest network</title></head><body>...</body></html>");
                case "/empty/v1/jobs/1", "/empty/v1/jobs" -> answer(ex, 200, "application/json", "");
                default -> answer(ex, 502, "text/html", "<html><head><title>502 Bad Gateway</title></head><body><hr>nginx</body></html>");
            }
        });
        try {
            String url = "http://127.0.0.1:" + portal.getAddress().getPort();
            FairqClient behindPortal = FairqClient.builder(url + "/portal").token("t").build();
            for (org.junit.jupiter.api.function.Executable call : List.<org.junit.jupiter.api.function.Executable>of(
                    () -> behindPortal.get(1), () -> behindPortal.submit(NewJob.of("record", json("{}"))))) {
                FairqException e = assertThrows(FairqException.class, call);
                assertEquals(200, e.status());
                assertTrue(e.getMessage().startsWith("unexpected answer from fairq (HTTP 200, not JSON): Sign in to the guest network"),
                        e.getMessage());
            }
            FairqClient empty = FairqClient.builder(url + "/empty").token("t").build();
            assertTrue(assertThrows(FairqException.class, () -> empty.get(1)).getMessage().startsWith("unexpected answer from fairq"));
            assertTrue(assertThrows(FairqException.class, () -> empty.submit(NewJob.of("record", json("{}"))))
                    .getMessage().startsWith("unexpected answer from fairq"));

            FairqException.ServerException gateway = assertThrows(FairqException.ServerException.class,
                    () -> FairqClient.builder(url + "/gateway").token("t").build().get(1));
            assertEquals(502, gateway.status());
            assertEquals("502 Bad Gateway", gateway.getMessage());
        } finally {
            portal.stop(0);
        }
    }

    /**
     * A key read from a file often ends in a newline. The client had thrown java.net.http's IllegalArgumentException,
     * whose message carried the whole key (into the caller's logs); now the key is stripped as the command line
     * strips it, and one that holds a control character is refused when the client is built, without echoing it.
     */
    @Test
    void aKeyWithATrailingNewlineWorksAndABrokenOneIsRefusedWithoutEchoingIt() {
        String tenant = TestApp.uniqueTenant("cli-tok");
        String key = app.newTenantKey(tenant);
        String url = "http://localhost:" + app.support.getLocalPort();
        assertEquals(tenant, FairqClient.builder(url).token(key + "\n").build().stats().tenant());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> FairqClient.builder(url).token(key.substring(0, 10) + "\n" + key.substring(10)).build());
        assertFalse(bad.getMessage().contains(key.substring(4, 10)), bad.getMessage());
    }

    /**
     * An empty id cannot be sent as a path segment: GET /v1/admin/tenants/ is the list of tenants, which tenant("")
     * had read as a tenant with a null id and every limit 0 (other calls got a 405 or a 400 about the URI). Ids with
     * '?', '#', spaces, dots or unicode are sent encoded, so they name no other endpoint either (and '/' or '%', encoded,
     * are Jetty's 400).
     */
    @Test
    void anEmptyIdIsRefusedAndOddIdsNameNoOtherEndpoint() {
        for (org.junit.jupiter.api.function.Executable call : List.<org.junit.jupiter.api.function.Executable>of(
                () -> admin.tenant(""), () -> admin.keys(""), () -> admin.putTenant("", Map.of()),
                () -> admin.patchTenant("", Map.of()), () -> admin.createKey(""), () -> admin.revokeKey("", "key_1"),
                () -> admin.revokeKey("acme", ""), () -> admin.revokeAdminToken(""))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
            assertTrue(e.getMessage().contains("empty"), e.getMessage());
        }
        for (String odd : List.of(".", "..", "a b", "a?b", "a#b", "é")) {
            FairqException.NotFoundException e = assertThrows(FairqException.NotFoundException.class, () -> admin.tenant(odd));
            assertEquals("no tenant " + odd, e.getMessage());
        }
        // Jetty refuses an encoded '/' or '%' in a path, in fairq's error body (api/README) whatever the method: a PUT's
        // or a DELETE's refusal had come with no body at all (Jetty writes one for GET, POST and HEAD only)
        for (org.junit.jupiter.api.function.Executable call : List.<org.junit.jupiter.api.function.Executable>of(
                () -> admin.tenant("a/b"), () -> admin.putTenant("a/b", Map.of()), () -> admin.revokeKey("acme", "a/b"),
                () -> admin.patchTenant("a/b", Map.of("weight", 2)), () -> admin.revokeAdminToken("a%b"))) {
            FairqException.BadRequestException e = assertThrows(FairqException.BadRequestException.class, call);
            assertTrue(e.getMessage().startsWith("HTTP 400 Bad Request: Ambiguous URI path "), e.getMessage());
        }
    }

    /**
     * A redirect (an http URL whose load balancer sends callers to https) is an error naming where to, never an
     * answer: it had been read as a success, so get() answered null and submit() a replay of no job. It is not
     * followed: a POST would not be sent again, and the key would go to whatever host the redirect names.
     */
    @Test
    void aRedirectIsAnErrorNamingItsTargetAndIsNotFollowed() throws Exception {
        java.util.concurrent.atomic.AtomicInteger requests = new java.util.concurrent.atomic.AtomicInteger();
        HttpServer balancer = proxy(ex -> {
            requests.incrementAndGet();
            ex.getResponseHeaders().add("Location", "https://fairq.example.com" + ex.getRequestURI());
            if (ex.getRequestURI().getPath().startsWith("/html")) answer(ex, 301, "text/html",
                    "<html><head><title>301 Moved Permanently</title></head><body>nginx</body></html>");
            else answer(ex, 308, "text/plain", "");
        });
        try {
            String url = "http://127.0.0.1:" + balancer.getAddress().getPort();
            FairqClient c = FairqClient.builder(url).token("t").build();
            FairqException get = assertThrows(FairqException.class, () -> c.get(1));
            assertEquals(308, get.status());
            assertEquals("redirected to https://fairq.example.com/v1/jobs/1 (not followed: give the client that URL)",
                    get.getMessage());
            FairqException post = assertThrows(FairqException.class, () -> c.submit(NewJob.of("record", json("{}"))));
            assertEquals(308, post.status());
            FairqException html = assertThrows(FairqException.class,
                    () -> FairqClient.builder(url + "/html").token("t").build().stats());
            assertEquals(301, html.status());
            assertTrue(html.getMessage().startsWith("redirected to https://fairq.example.com/html/v1/stats"), html.getMessage());
            assertEquals(3, requests.get(), "one request each: nothing followed");
        } finally {
            balancer.stop(0);
        }
    }

    /**
     * A proxy in front of fairq that passes the first submit on and loses its answer (hangs up): with a RetryPolicy a
     * keyed submit is sent again and answered with the job the first one made (a replay), one job in all; a submit
     * without job_key is not sent again (its job exists, the caller gets a ConnectionException), never two jobs.
     */
    @Test
    void anAnswerLostAfterTheSubmitMadeItsJobIsReplayedWithAKeyAndNeverDuplicatedWithout() throws Exception {
        String tenant = TestApp.uniqueTenant("cli-lost");
        String key = app.newTenantKey(tenant);
        java.net.http.HttpClient upstream = java.net.http.HttpClient.newHttpClient();
        java.util.concurrent.atomic.AtomicInteger posts = new java.util.concurrent.atomic.AtomicInteger();
        HttpServer lossy = proxy(ex -> {
            java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(
                            java.net.URI.create("http://localhost:" + app.support.getLocalPort() + ex.getRequestURI()))
                    .method(ex.getRequestMethod(), java.net.http.HttpRequest.BodyPublishers.ofByteArray(ex.getRequestBody().readAllBytes()));
            for (String h : List.of("Authorization", "Content-Type")) {
                if (ex.getRequestHeaders().getFirst(h) != null) b.header(h, ex.getRequestHeaders().getFirst(h));
            }
            java.net.http.HttpResponse<String> r = upstream.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
            if (ex.getRequestMethod().equals("POST") && posts.incrementAndGet() % 2 == 1) {
                throw new IllegalStateException("the answer is lost"); // the exchange is closed unanswered
            }
            answer(ex, r.statusCode(), "application/json", r.body());
        });
        try {
            List<Duration> waits = new CopyOnWriteArrayList<>();
            FairqClient c = FairqClient.builder("http://127.0.0.1:" + lossy.getAddress().getPort()).token(key)
                    .retries(RetryPolicy.attempts(3).withSleeper(waits::add)).build();
            Model.Submitted keyed = c.submit(NewJob.of("record", json("{}")).jobKey("lost-1").delayMs(3_600_000L));
            assertTrue(keyed.idempotentReplay(), "the second try found the job the first one made");
            assertEquals(List.of(Duration.ofMillis(500)), waits);
            waits.clear();
            assertThrows(FairqException.ConnectionException.class,
                    () -> c.submit(NewJob.of("record", json("{\"n\": 2}")).delayMs(3_600_000L)));
            assertEquals(List.of(), waits, "not sent again");
            assertEquals(3, posts.get());
            List<Model.Job> jobs = new ArrayList<>();
            app.client(key).jobs(FairqClient.JobFilter.all()).forEach(jobs::add);
            assertEquals(List.of(2, 0), jobs.stream().map(j -> j.payload().path("n").asInt()).toList(), "two jobs, each once");
            assertEquals(keyed.job().id(), jobs.get(1).id());
        } finally {
            lossy.stop(0);
        }
    }

    /**
     * Retry-After may also be an HTTP date (RFC 9110; a proxy's 503 or 429 may send one): the client waits until then.
     * It had read a date as no Retry-After, so a 503 was tried again after its own 0.5 s and a 429 after 1 s.
     */
    @Test
    void aRetryAfterGivenAsADateIsWaitedFor() throws Exception {
        java.time.Instant at = java.time.Instant.now().plusSeconds(30);
        String date = java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME.format(at.atZone(java.time.ZoneOffset.UTC));
        HttpServer busy = proxy(ex -> {
            ex.getResponseHeaders().add("Retry-After", date);
            answer(ex, ex.getRequestURI().getPath().startsWith("/full") ? 429 : 503, "text/plain", "busy");
        });
        try {
            String url = "http://127.0.0.1:" + busy.getAddress().getPort();
            List<Duration> waits = new CopyOnWriteArrayList<>();
            FairqClient c = FairqClient.builder(url).token("t").retries(RetryPolicy.attempts(2).withSleeper(waits::add)).build();
            assertThrows(FairqException.ServerException.class, c::stats);
            assertEquals(1, waits.size());
            assertTrue(waits.get(0).compareTo(Duration.ofSeconds(20)) > 0 && waits.get(0).compareTo(Duration.ofSeconds(31)) <= 0,
                    waits::toString);
            FairqException.QueueFullException full = assertThrows(FairqException.QueueFullException.class,
                    () -> FairqClient.builder(url + "/full").token("t").build().submit(NewJob.of("record", json("{}"))));
            assertTrue(full.retryAfter().compareTo(Duration.ofSeconds(20)) > 0, full.retryAfter()::toString);
        } finally {
            busy.stop(0);
        }
    }
}

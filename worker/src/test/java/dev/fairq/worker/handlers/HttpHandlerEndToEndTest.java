package dev.fairq.worker.handlers;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.AddressRanges;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.Json;
import dev.fairq.testing.TestDatabase;
import dev.fairq.worker.HandlerRegistry;
import dev.fairq.worker.RetryPolicy;
import dev.fairq.worker.TestPlatform;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The http job type through the whole platform: a real scheduler admits, a real worker claims and runs the
 * handler (allow lists read from tenants.webhook_allow), and a local receiver on 127.0.0.1 answers.
 */
class HttpHandlerEndToEndTest {
    private static final RetryPolicy FAST = new RetryPolicy(Duration.ofMillis(10), 2.0, Duration.ofMillis(50), 0.5);

    private final TestDatabase db = TestDatabase.get();
    private TestPlatform platform;
    private Receiver receiver;
    private HttpJobHandler http;

    @BeforeEach
    void setUp() throws Exception {
        db.reset();
        db.createTenant("acme");
        allow("acme", "127.0.0.1");
        platform = new TestPlatform(db);
        receiver = new Receiver();
    }

    @AfterEach
    void tearDown() throws Exception {
        platform.close();
        receiver.close();
        if (http != null) http.close();
    }

    private void allow(String tenant, String... hosts) {
        db.dsl().execute("UPDATE tenants SET webhook_allow = ?::text[] WHERE id = ?", hosts, tenant);
    }

    private void start(HttpJobHandler handler, int threads) {
        http = handler;
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", threads), new HandlerRegistry().register("http", handler, FAST));
    }

    private void start() {
        start(HttpJobHandler.forDatabase(db.dsl()), 2);
    }

    private long enqueue(String payload, int maxAttempts) {
        return platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "http").payload(payload)
                .maxAttempts(maxAttempts).build()).job().getId();
    }

    private static String post(String url) {
        return "{\"url\": \"" + url + "\", \"body\": {\"hello\": \"world\"}}";
    }

    private String status(long id) {
        Object s = db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id);
        return s == null ? null : s.toString();
    }

    private long attempts(long id) {
        return ((Number) db.dsl().fetchValue("SELECT attempts FROM jobs WHERE id = ?", id)).longValue();
    }

    private String lastError(long id) {
        Object e = db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", id);
        return e == null ? "" : e.toString();
    }

    private OffsetDateTime dbNow() {
        return db.dsl().resultQuery("SELECT clock_timestamp()").fetchOne(0, OffsetDateTime.class);
    }

    private void awaitStatus(long id, String expected) {
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(50)).until(() -> expected.equals(status(id)));
    }

    // ------------------------------------------------------------------------------------------ outcomes

    @Test
    void serviceUnavailableIsRetriedWithTheSameIdempotencyKeyAndAnIncreasingAttemptUntilItSucceeds() {
        AtomicInteger calls = new AtomicInteger();
        receiver.answer(r -> calls.incrementAndGet() <= 2 ? Receiver.Reply.of(503, "maintenance") : Receiver.Reply.of(200));
        start();
        long id = enqueue(post(receiver.url("/hook")), 5);

        awaitStatus(id, "succeeded");
        assertEquals(3, attempts(id));
        assertEquals(3, receiver.requests.size());
        assertEquals(List.of("fairq-acme-" + id, "fairq-acme-" + id, "fairq-acme-" + id),
                receiver.requests.stream().map(r -> r.header("Idempotency-Key")).toList(), "one key for every attempt");
        assertEquals(List.of("1", "2", "3"), receiver.requests.stream().map(r -> r.header("Fairq-Attempt")).toList());
        assertEquals(List.of(Long.toString(id)),
                receiver.requests.stream().map(r -> r.header("Fairq-Job-Id")).distinct().toList());
        assertTrue(receiver.requests.stream().allMatch(r -> r.body().equals("{\"hello\":\"world\"}")
                && r.method().equals("POST") && r.path().equals("/hook")));
    }

    @Test
    void aClientErrorDeadLettersAtOnce() {
        receiver.answer(r -> Receiver.Reply.of(400, "{\"error\": \"unknown customer 17\"}"));
        start();
        long id = enqueue(post(receiver.url("/hook")), 5);

        awaitStatus(id, "dead");
        assertEquals(1, attempts(id));
        assertEquals(1, receiver.requests.size());
        String error = lastError(id);
        assertTrue(error.contains("HTTP 400") && error.contains("unknown customer 17"), error);
    }

    @Test
    void tooManyRequestsWithRetryAfterSnoozesTheJobForThatDelayOnTheDatabaseClock() {
        AtomicReference<OffsetDateTime> firstArrival = new AtomicReference<>();
        AtomicReference<OffsetDateTime> secondArrival = new AtomicReference<>();
        receiver.answer(r -> {
            if (firstArrival.get() == null) {
                firstArrival.set(dbNow());
                return new Receiver.Reply(429, Map.of("Retry-After", "1"), "slow down");
            }
            secondArrival.compareAndSet(null, dbNow());
            return Receiver.Reply.of(200);
        });
        start();
        long id = enqueue(post(receiver.url("/hook")), 5);

        awaitStatus(id, "succeeded");
        assertEquals(1, attempts(id), "the snooze used no attempt");
        assertEquals(1, db.count("SELECT snoozes FROM jobs WHERE id = ?", id));
        // run_at was set by the snooze to (the database's now() when it was recorded) + 1 s, and it was
        // recorded after the receiver answered, so it lies at least 1 s past the first arrival; the policy's
        // own backoff (10-50 ms) could not have put it there.
        OffsetDateTime runAt = db.dsl().resultQuery("SELECT run_at FROM jobs WHERE id = ?", id)
                .fetchOne(0, OffsetDateTime.class);
        assertNotNull(firstArrival.get());
        Duration moved = Duration.between(firstArrival.get(), runAt);
        assertTrue(moved.compareTo(Duration.ofSeconds(1)) >= 0, "run_at moved by " + moved);
        assertTrue(moved.compareTo(Duration.ofSeconds(30)) < 0, "run_at moved by " + moved);
        assertTrue(!secondArrival.get().isBefore(runAt), "the retry did not run before run_at");
    }

    // ------------------------------------------------------------------------------------------ ordering

    @Test
    void jobsOfAnOrderingKeyArriveInEnqueueOrderOneAtATimeDespiteRetries() {
        Random random = new Random(42);
        receiver.answer(r -> {
            boolean fail;
            synchronized (random) {
                fail = random.nextDouble() < 0.25;
            }
            return fail && Integer.parseInt(r.header("Fairq-Attempt")) < 3 ? Receiver.Reply.of(503) : Receiver.Reply.of(200);
        });
        start(HttpJobHandler.forDatabase(db.dsl()), 4);

        List<JobRequest> jobs = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            String key = "k" + (i % 3);
            jobs.add(JobRequest.builder("acme", "http").orderingKey(key).payload("{\"url\": \"" + receiver.url("/o")
                    + "\", \"body\": {\"key\": \"" + key + "\", \"seq\": " + (i / 3) + "}}").build());
        }
        List<Long> ids = platform.store.enqueueAll(db.dsl(), jobs).stream().map(r -> r.job().getId()).toList();

        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100)).until(() -> ids.stream()
                .allMatch(id -> "succeeded".equals(status(id))));

        Map<String, List<Receiver.Request>> byKey = receiver.requests.stream()
                .sorted(Comparator.comparingLong(Receiver.Request::startNanos))
                .collect(Collectors.groupingBy(r -> body(r).path("key").asText(), Collectors.toList()));
        assertEquals(3, byKey.size());
        assertTrue(receiver.requests.stream().anyMatch(r -> r.status() == 503), "some requests were retried");
        List<Integer> expected = IntStream.range(0, 10).boxed().toList();
        byKey.forEach((key, requests) -> {
            List<Integer> delivered = requests.stream().filter(r -> r.status() == 200)
                    .map(r -> body(r).path("seq").asInt()).toList();
            assertEquals(expected, delivered, "deliveries of " + key + " in enqueue order");
            List<Integer> arrivals = requests.stream().map(r -> body(r).path("seq").asInt()).toList();
            for (int i = 1; i < arrivals.size(); i++) {
                assertTrue(arrivals.get(i) >= arrivals.get(i - 1), key + ": a later job went before an earlier one's retry: " + arrivals);
            }
            for (int i = 1; i < requests.size(); i++) {
                assertTrue(requests.get(i).startNanos() > requests.get(i - 1).endNanos(),
                        key + ": requests " + (i - 1) + " and " + i + " overlapped");
            }
        });
    }

    private static JsonNode body(Receiver.Request r) {
        try {
            return Json.MAPPER.readTree(r.body());
        } catch (Exception e) {
            throw new AssertionError("unreadable body " + r.body(), e);
        }
    }

    // ------------------------------------------------------------------------------------------ SSRF

    @Test
    void aNameTheTenantControlsCannotReachLoopbackThroughAnyHostEntry() {
        int port = receiver.port();
        allow("acme", "hooks.example.test:" + port, "*.example.test:" + port);
        // the tenant's DNS points its names at loopback, where the receiver listens
        HttpJobHandler.Resolver tenantDns = host -> host.endsWith(".example.test")
                ? new InetAddress[]{AddressRanges.literal("127.0.0.1")} : InetAddress.getAllByName(host);
        start(new HttpJobHandler(TenantAllowLists.fromDatabase(db.dsl()), tenantDns, Instant::now), 2);
        long literal = enqueue(post(receiver.url("/hook")), 5);
        long exact = enqueue(post("http://hooks.example.test:" + port + "/hook"), 5);
        long viaWildcard = enqueue(post("http://api.example.test:" + port + "/hook"), 5);

        for (long id : new long[]{literal, exact, viaWildcard}) {
            awaitStatus(id, "dead");
            assertEquals(1, attempts(id));
        }
        assertTrue(lastError(literal).contains("refused: 127.0.0.1:" + port + " is not on the webhook_allow list of tenant 'acme'"),
                lastError(literal));
        assertTrue(lastError(exact).contains("refused: hooks.example.test:" + port + ": address 127.0.0.1 (loopback"),
                lastError(exact));
        assertTrue(lastError(viaWildcard).contains("refused: api.example.test:" + port + ": address 127.0.0.1 (loopback"),
                lastError(viaWildcard));
        assertEquals(0, receiver.requests.size(), "the receiver got nothing");
    }

    @Test
    void aHostNotOnTheAllowListIsRefused() {
        allow("acme", "hooks.example.com");
        start();
        long id = enqueue(post("http://localhost:" + receiver.port() + "/hook"), 5);

        awaitStatus(id, "dead");
        assertEquals(1, attempts(id));
        assertTrue(lastError(id).contains("refused: localhost:" + receiver.port() + " is not on the webhook_allow list"),
                lastError(id));
        assertEquals(0, receiver.requests.size());
    }

    // ------------------------------------------------------------------------------------------ what last_error shows

    @Test
    void lastErrorNeverShowsAHeaderValueOrAUrlSecret() {
        receiver.answer(r -> Receiver.Reply.of(403, "signature " + r.header("X-Sig") + " rejected"));
        start();
        String url = "http://ops:hunter2@127.0.0.1:" + receiver.port() + "/hook?token=t0k3n";
        long invalid = enqueue("{\"url\": \"" + url + "\", \"headers\": {\"X-Sig\": \"sk_live_1\\r\\nX-B: 2\"}}", 5);
        long echoed = enqueue("{\"url\": \"" + url + "\", \"headers\": {\"X-Sig\": \"sk_live_2\"}}", 5);

        awaitStatus(invalid, "dead");
        awaitStatus(echoed, "dead");
        assertEquals("headers.X-Sig: has an invalid value (line breaks and other "
                + "control characters are not allowed)", lastError(invalid));
        assertEquals("HTTP 403 from POST http://REDACTED@127.0.0.1:"
                + receiver.port() + "/hook?token=REDACTED: signature REDACTED rejected", lastError(echoed));
        assertEquals(1, receiver.requests.size(), "only the valid one was sent");
    }

    /** A type no live worker serves is never claimed: it waits, parked, its attempts untouched (issue 11). */
    @Test
    void aTypeNoWorkerServesWaitsWithoutUsingAttempts() {
        start();
        long id = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "no-such-type").maxAttempts(1).build())
                .job().getId();
        await().atMost(Duration.ofSeconds(30)).until(() ->
                db.count("SELECT count(*) FROM jobs WHERE id = ? AND no_worker_since IS NOT NULL", id) == 1);
        assertEquals("pending", db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", id));
        assertEquals(0, attempts(id));
        assertEquals("", lastError(id), "no attempt, no error");
    }

    /**
     * Cancelling a job whose request is waiting for the receiver's answer: the worker interrupts the handler,
     * the handler aborts the exchange (the receiver sees the connection close) and the job ends cancelled.
     * The receiver here is a bare socket that never answers, so the close is seen as the end of its input.
     */
    @Test
    void cancellingARunningDeliveryAbortsTheRequest() throws Exception {
        java.util.concurrent.CountDownLatch received = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
        try (java.net.ServerSocket silent = new java.net.ServerSocket(0, 5, InetAddress.getByName("127.0.0.1"))) {
            Thread t = new Thread(() -> {
                try (java.net.Socket s = silent.accept()) {
                    java.io.InputStream in = s.getInputStream();
                    byte[] buffer = new byte[4096];
                    if (in.read(buffer) > 0) received.countDown();
                    while (in.read(buffer) >= 0) {
                        // the rest of the request; -1 once the client closes the connection
                    }
                    closed.countDown();
                } catch (java.io.IOException e) {
                    closed.countDown(); // a reset is a close too
                }
            }, "silent-receiver");
            t.setDaemon(true);
            t.start();
            start();
            long id = enqueue("{\"url\": \"http://127.0.0.1:" + silent.getLocalPort() + "/hook\", \"timeout_ms\": 120000}", 5);
            assertTrue(received.await(60, java.util.concurrent.TimeUnit.SECONDS), "the request arrived");

            assertEquals(dev.fairq.schema.OperatorActions.ActionResult.STOPPING,
                    platform.store.cancel(db.dsl(), "acme", id).result());

            awaitStatus(id, "cancelled");
            assertTrue(closed.await(30, java.util.concurrent.TimeUnit.SECONDS), "the worker closed the connection");
            assertTrue(lastError(id).startsWith("cancelled while running"), lastError(id));
            assertEquals(1, attempts(id));
        }
    }
}

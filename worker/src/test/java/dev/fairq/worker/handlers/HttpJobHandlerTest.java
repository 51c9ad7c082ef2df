package dev.fairq.worker.handlers;

import dev.fairq.schema.AddressRanges;
import dev.fairq.worker.JobContext;
import dev.fairq.worker.PermanentJobException;
import dev.fairq.worker.RetryableJobException;
import dev.fairq.worker.handlers.HttpJobHandler.Call;
import dev.fairq.worker.handlers.HttpJobHandler.Match;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The handler without a database: payload rules, allow-list rules, address checks, and outcomes against a local receiver. */
class HttpJobHandlerTest {
    private static final Instant NOW = Instant.parse("2030-01-01T00:00:00Z");

    private Receiver receiver;
    private final CountDownLatch release = new CountDownLatch(1);

    @BeforeEach
    void setUp() throws Exception {
        receiver = new Receiver();
    }

    @AfterEach
    void tearDown() {
        release.countDown();
        receiver.close();
    }

    static JobContext job(long id, int attempt, String payload) {
        return new JobContext(id, "acme", "default", "http", payload, attempt, 25, null, null, OffsetDateTime.now(), "w1");
    }

    private static HttpJobHandler handler(List<String> allow, HttpJobHandler.Resolver resolver) {
        return new HttpJobHandler(t -> allow, HttpJobHandler.defaultClient(), resolver, () -> NOW);
    }

    private static HttpJobHandler handler(List<String> allow) {
        return handler(allow, InetAddress::getAllByName);
    }

    private static HttpJobHandler.Resolver resolvesTo(String... literals) {
        return host -> {
            InetAddress[] out = new InetAddress[literals.length];
            for (int i = 0; i < literals.length; i++) out[i] = AddressRanges.literal(literals[i]);
            return out;
        };
    }

    private static String payload(String url) {
        return "{\"url\": \"" + url + "\"}";
    }

    // ------------------------------------------------------------------------------------------ payload

    @Test
    void payloadDefaults() throws Exception {
        Call c = Call.parse(payload("https://hooks.example.com/x?token=secret"));
        assertEquals("POST", c.method());
        assertEquals(Duration.ofMillis(10_000), c.timeout());
        assertNull(c.body());
        assertEquals(Map.of(), c.headers());
        assertEquals("https://hooks.example.com/x", c.safeUrl(), "no query in messages");
    }

    @Test
    void payloadFieldsAreParsed() throws Exception {
        Call c = Call.parse("""
                {"url": "http://h.example.com:8080/p", "method": "put", "headers": {"X-A": "b"},
                 "body": {"n": [1, 2]}, "timeout_ms": 300000}""");
        assertEquals("PUT", c.method());
        assertEquals(Map.of("X-A", "b"), c.headers());
        assertEquals("{\"n\":[1,2]}", c.body());
        assertTrue(c.jsonBody());
        assertEquals(Duration.ofMinutes(5), c.timeout());

        Call text = Call.parse("{\"url\": \"http://h.example.com\", \"body\": \"a=1&b=2\"}");
        assertEquals("a=1&b=2", text.body());
        assertTrue(!text.jsonBody());
    }

    @Test
    void invalidPayloadsArePermanentAndNameTheField() {
        Map<String, String> cases = Map.ofEntries(
                Map.entry("{}", "url:"),
                Map.entry("{\"url\": null}", "url:"),
                Map.entry("{\"url\": 5}", "url:"),
                Map.entry("{\"url\": \"\"}", "url:"),
                Map.entry("{\"url\": \"not a url\"}", "url:"),
                Map.entry("{\"url\": \"ftp://h.example.com/x\"}", "url: scheme"),
                Map.entry("{\"url\": \"file:///etc/passwd\"}", "url: scheme"),
                Map.entry("{\"url\": \"h.example.com/x\"}", "url: scheme"),
                Map.entry("{\"url\": \"http:///x\"}", "url: no host"),
                Map.entry("{\"url\": \"http://h.example.com\", \"method\": \"TRACE\"}", "method:"),
                Map.entry("{\"url\": \"http://h.example.com\", \"method\": 1}", "method:"),
                Map.entry("{\"url\": \"http://h.example.com\", \"headers\": [\"a\"]}", "headers:"),
                Map.entry("{\"url\": \"http://h.example.com\", \"headers\": {\"X-N\": 1}}", "headers.X-N:"),
                Map.entry("{\"url\": \"http://h.example.com\", \"timeout_ms\": 0}", "timeout_ms:"),
                Map.entry("{\"url\": \"http://h.example.com\", \"timeout_ms\": 300001}", "timeout_ms:"),
                Map.entry("{\"url\": \"http://h.example.com\", \"timeout_ms\": \"100\"}", "timeout_ms:"),
                Map.entry("{\"url\": \"http://h.example.com\", \"timeout_ms\": 1.5}", "timeout_ms:"),
                Map.entry("[1]", "payload:"),
                Map.entry("nope", "payload:"));
        cases.forEach((p, field) -> {
            PermanentJobException e = assertThrows(PermanentJobException.class, () -> Call.parse(p), p);
            assertTrue(e.getMessage().startsWith(field), p + " -> " + e.getMessage());
        });
    }

    @Test
    void aRestrictedHeaderIsAPermanentErrorNamingIt() {
        HttpJobHandler h = handler(List.of("127.0.0.1"));
        PermanentJobException e = assertThrows(PermanentJobException.class, () -> h.handle(job(1, 1,
                "{\"url\": \"" + receiver.url("/") + "\", \"headers\": {\"Host\": \"internal\"}}")));
        assertTrue(e.getMessage().startsWith("headers.Host:"), e.getMessage());
        assertEquals(0, receiver.requests.size());
    }

    @Test
    void aClientThatFollowsRedirectsIsRefused() {
        HttpClient follows = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build();
        assertThrows(IllegalArgumentException.class, () -> new HttpJobHandler(t -> List.of(), follows));
    }

    // ------------------------------------------------------------------------------------------ allow list

    @Test
    void allowListMatching() {
        List<String> allow = List.of("Hooks.Example.com", "*.partner.example", "127.0.0.1", "[::1]", " ");
        assertEquals(Match.EXACT, HttpJobHandler.match("hooks.example.com", allow));
        assertEquals(Match.NONE, HttpJobHandler.match("a.hooks.example.com", allow));
        assertEquals(Match.WILDCARD, HttpJobHandler.match("api.partner.example", allow));
        assertEquals(Match.WILDCARD, HttpJobHandler.match("a.b.partner.example", allow));
        assertEquals(Match.NONE, HttpJobHandler.match("partner.example", allow), "a wildcard is for subdomains");
        assertEquals(Match.NONE, HttpJobHandler.match("evilpartner.example", allow));
        assertEquals(Match.EXACT, HttpJobHandler.match("127.0.0.1", allow));
        assertEquals(Match.EXACT, HttpJobHandler.match("::1", allow));
        assertEquals(Match.EXACT, HttpJobHandler.match("0:0:0:0:0:0:0:1", allow), "IP literals compare as addresses");
        assertEquals(Match.NONE, HttpJobHandler.match("127.0.0.2", allow));
        assertEquals(Match.NONE, HttpJobHandler.match("example.com", allow));
        assertEquals(Match.NONE, HttpJobHandler.match("10.0.0.1", List.of("*.0.0.1")), "wildcards never match IPs");
        assertEquals(Match.NONE, HttpJobHandler.match("anything", List.of()));
    }

    @Test
    void aHostNotOnTheListIsRefusedWithoutEvenResolvingIt() {
        AtomicInteger lookups = new AtomicInteger();
        HttpJobHandler h = handler(List.of("hooks.example.com"), host -> {
            lookups.incrementAndGet();
            throw new UnknownHostException(host);
        });
        PermanentJobException e = assertThrows(PermanentJobException.class,
                () -> h.checkDestination("acme", URI.create("https://other.example.com/x")));
        assertTrue(e.getMessage().contains("'other.example.com' is not on the webhook_allow list of tenant 'acme'"),
                e.getMessage());
        assertEquals(0, lookups.get());
    }

    @Test
    void aWildcardHostResolvingToAnyPrivateAddressIsRefused() {
        HttpJobHandler h = handler(List.of("*.example.com"), resolvesTo("93.184.216.34", "10.0.0.7"));
        PermanentJobException e = assertThrows(PermanentJobException.class,
                () -> h.checkDestination("acme", URI.create("https://evil.example.com/")));
        assertTrue(e.getMessage().contains("10.0.0.7") && e.getMessage().contains("private"), e.getMessage());

        for (String bad : new String[]{"127.0.0.1", "169.254.169.254", "100.64.1.1", "fd00::1", "fe80::1", "::1"}) {
            HttpJobHandler one = handler(List.of("*.example.com"), resolvesTo(bad));
            assertThrows(PermanentJobException.class, () -> one.checkDestination("acme",
                    URI.create("https://evil.example.com/")), bad);
        }
    }

    @Test
    void anIpv4MappedAnswerIsJudgedByItsIpv4Address() throws Exception {
        byte[] mapped = new byte[16];
        mapped[10] = (byte) 0xff;
        mapped[11] = (byte) 0xff;
        mapped[12] = 127;
        mapped[15] = 1;
        InetAddress a = java.net.Inet6Address.getByAddress(null, mapped, -1);
        HttpJobHandler h = handler(List.of("*.example.com"), host -> new InetAddress[]{a});
        PermanentJobException e = assertThrows(PermanentJobException.class,
                () -> h.checkDestination("acme", URI.create("https://evil.example.com/")));
        assertTrue(e.getMessage().contains("loopback"), e.getMessage());
    }

    @Test
    void aWildcardHostResolvingToPublicAddressesIsAllowed() throws Exception {
        HttpJobHandler h = handler(List.of("*.example.com"), resolvesTo("93.184.216.34", "2606:2800:220:1::1"));
        assertEquals(2, h.checkDestination("acme", URI.create("https://api.example.com/")).length);
    }

    @Test
    void aPrivateAddressIsAllowedWhenTheListNamesTheHostOrTheAddressLiterally() throws Exception {
        handler(List.of("internal.corp"), resolvesTo("10.1.2.3"))
                .checkDestination("acme", URI.create("http://internal.corp/hook"));
        handler(List.of("INTERNAL.corp"), resolvesTo("10.1.2.3"))
                .checkDestination("acme", URI.create("http://Internal.Corp/hook"));
        handler(List.of("*.corp", "10.1.2.3"), resolvesTo("10.1.2.3"))
                .checkDestination("acme", URI.create("http://svc.corp/hook"));
        handler(List.of("127.0.0.1"), InetAddress::getAllByName)
                .checkDestination("acme", URI.create("http://127.0.0.1:9/hook"));
        handler(List.of("::1"), InetAddress::getAllByName)
                .checkDestination("acme", URI.create("http://[::1]:9/hook"));
        // the literal covers only that address
        HttpJobHandler h = handler(List.of("*.corp", "10.1.2.3"), resolvesTo("10.1.2.3", "10.1.2.4"));
        assertThrows(PermanentJobException.class, () -> h.checkDestination("acme", URI.create("http://svc.corp/")));
    }

    @Test
    void aDnsFailureIsTransient() {
        HttpJobHandler h = handler(List.of("*.example.com"), host -> {
            throw new UnknownHostException(host + ": temporary failure");
        });
        assertThrows(RetryableJobException.class, () -> h.checkDestination("acme", URI.create("https://a.example.com/")));
    }

    // ------------------------------------------------------------------------------------------ allow-list cache

    @Test
    void allowListsAreCachedPerTenantForTheTtl() {
        AtomicLong clock = new AtomicLong();
        Map<String, AtomicInteger> loads = new java.util.concurrent.ConcurrentHashMap<>();
        TenantAllowLists lists = new TenantAllowLists(t -> {
            loads.computeIfAbsent(t, k -> new AtomicInteger()).incrementAndGet();
            return List.of(t + ".example.com");
        }, Duration.ofSeconds(1), clock::get);
        for (int i = 0; i < 100; i++) {
            assertEquals(List.of("a.example.com"), lists.apply("a"));
            assertEquals(List.of("b.example.com"), lists.apply("b"));
        }
        assertEquals(1, loads.get("a").get());
        assertEquals(1, loads.get("b").get());
        clock.addAndGet(Duration.ofMillis(999).toNanos());
        lists.apply("a");
        assertEquals(1, loads.get("a").get());
        clock.addAndGet(Duration.ofMillis(1).toNanos());
        lists.apply("a");
        assertEquals(2, loads.get("a").get(), "reloaded after the TTL");
        assertEquals(1, loads.get("b").get());
    }

    // ------------------------------------------------------------------------------------------ Retry-After

    @Test
    void retryAfterInSecondsOrAsAnHttpDateCapped() {
        assertEquals(Duration.ofSeconds(1), HttpJobHandler.parseRetryAfter("1", NOW));
        assertEquals(Duration.ZERO, HttpJobHandler.parseRetryAfter("0", NOW));
        assertEquals(Duration.ofSeconds(120), HttpJobHandler.parseRetryAfter(" 120 ", NOW));
        assertEquals(Duration.ofHours(1), HttpJobHandler.parseRetryAfter("86400", NOW));
        assertEquals(Duration.ofHours(1), HttpJobHandler.parseRetryAfter("99999999999999999999", NOW));
        String in30s = DateTimeFormatter.RFC_1123_DATE_TIME.format(NOW.plusSeconds(30).atOffset(ZoneOffset.UTC));
        assertEquals(Duration.ofSeconds(30), HttpJobHandler.parseRetryAfter(in30s, NOW));
        assertEquals(Duration.ofHours(1), HttpJobHandler.parseRetryAfter("Wed, 01 Jan 2031 00:00:00 GMT", NOW));
        assertEquals(Duration.ZERO, HttpJobHandler.parseRetryAfter("Sat, 01 Jan 2000 00:00:00 GMT", NOW));
        assertNull(HttpJobHandler.parseRetryAfter("-5", NOW));
        assertNull(HttpJobHandler.parseRetryAfter("soon", NOW));
        assertNull(HttpJobHandler.parseRetryAfter("", NOW));
    }

    // ------------------------------------------------------------------------------------------ outcomes

    private final HttpJobHandler local = handler(List.of("127.0.0.1"));

    @Test
    void sendsTheBodyAndTheFairqHeadersWhichThePayloadCannotOverride() throws Exception {
        local.handle(job(42, 3, """
                {"url": "%s", "method": "PUT", "headers": {"X-Custom": "yes", "idempotency-key": "forged",
                 "Fairq-Attempt": "99", "FAIRQ-JOB-ID": "1"}, "body": {"order": 7}}""".formatted(receiver.url("/in?x=1"))));
        Receiver.Request r = receiver.requests.get(0);
        assertEquals("PUT", r.method());
        assertEquals("/in?x=1", r.path());
        assertEquals("{\"order\":7}", r.body());
        assertEquals("application/json", r.header("Content-Type"));
        assertEquals("yes", r.header("X-Custom"));
        assertEquals("fairq-acme-42", r.header("Idempotency-Key"));
        assertEquals(List.of("fairq-acme-42"), r.headers().get("Idempotency-Key"));
        assertEquals("42", r.header("Fairq-Job-Id"));
        assertEquals("3", r.header("Fairq-Attempt"));
        assertEquals(List.of("3"), r.headers().get("Fairq-Attempt"));
    }

    @Test
    void aStringBodyIsSentAsIs() throws Exception {
        local.handle(job(1, 1, "{\"url\": \"" + receiver.url("/") + "\", \"body\": \"a=1&b=2\", "
                + "\"headers\": {\"Content-Type\": \"application/x-www-form-urlencoded\"}}"));
        Receiver.Request r = receiver.requests.get(0);
        assertEquals("a=1&b=2", r.body());
        assertEquals("application/x-www-form-urlencoded", r.header("Content-Type"));
        assertEquals("POST", r.method());
    }

    @Test
    void aClientErrorIsPermanentWithTheStatusAndABodyExcerpt() {
        receiver.answer(r -> Receiver.Reply.of(422, "field customer_id is missing\n" + "x".repeat(10_000)));
        PermanentJobException e = assertThrows(PermanentJobException.class,
                () -> local.handle(job(1, 1, payload(receiver.url("/hook?token=secret")))));
        assertTrue(e.getMessage().startsWith("HTTP 422 from POST " + receiver.url("/hook") + ": field customer_id is missing"),
                e.getMessage());
        assertTrue(e.getMessage().length() < 600, "an excerpt, not the body");
        assertTrue(!e.getMessage().contains("secret"), "no query string in errors");
    }

    @Test
    void aRedirectIsNotFollowedAndIsPermanent() {
        receiver.answer(r -> r.path().equals("/elsewhere") ? Receiver.Reply.of(200)
                : new Receiver.Reply(302, Map.of("Location", receiver.url("/elsewhere")), ""));
        PermanentJobException e = assertThrows(PermanentJobException.class,
                () -> local.handle(job(1, 1, payload(receiver.url("/start")))));
        assertTrue(e.getMessage().startsWith("HTTP 302") && e.getMessage().contains("not followed"), e.getMessage());
        assertEquals(List.of("/start"), receiver.requests.stream().map(Receiver.Request::path).toList());
    }

    @Test
    void requestTimeoutTooManyRequestsAndServerErrorsAreTransient() {
        for (int status : new int[]{408, 429, 500, 502, 503, 504}) {
            receiver.answer(r -> Receiver.Reply.of(status, "busy"));
            RetryableJobException e = assertThrows(RetryableJobException.class,
                    () -> local.handle(job(1, 1, payload(receiver.url("/")))), "status " + status);
            assertTrue(e.getMessage().startsWith("HTTP " + status), e.getMessage());
            assertNull(e.retryAfter(), "no Retry-After: the type's backoff applies");
        }
    }

    @Test
    void retryAfterIsHonouredOn429And503Only() {
        String date = DateTimeFormatter.RFC_1123_DATE_TIME.format(NOW.plusSeconds(90).atOffset(ZoneOffset.UTC));
        receiver.answer(r -> new Receiver.Reply(503, Map.of("Retry-After", date), ""));
        assertEquals(Duration.ofSeconds(90), assertThrows(RetryableJobException.class,
                () -> local.handle(job(1, 1, payload(receiver.url("/"))))).retryAfter());
        receiver.answer(r -> new Receiver.Reply(429, Map.of("Retry-After", "7"), ""));
        assertEquals(Duration.ofSeconds(7), assertThrows(RetryableJobException.class,
                () -> local.handle(job(1, 1, payload(receiver.url("/"))))).retryAfter());
        receiver.answer(r -> new Receiver.Reply(429, Map.of("Retry-After", "604800"), ""));
        assertEquals(Duration.ofHours(1), assertThrows(RetryableJobException.class,
                () -> local.handle(job(1, 1, payload(receiver.url("/"))))).retryAfter());
        receiver.answer(r -> new Receiver.Reply(500, Map.of("Retry-After", "7"), ""));
        assertNull(assertThrows(RetryableJobException.class,
                () -> local.handle(job(1, 1, payload(receiver.url("/"))))).retryAfter());
    }

    @Test
    void aTimeoutIsTransient() {
        receiver.answer(r -> {
            try {
                release.await(); // hold the request open until the test ends
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return Receiver.Reply.of(200);
        });
        RetryableJobException e = assertThrows(RetryableJobException.class,
                () -> local.handle(job(1, 1, "{\"url\": \"" + receiver.url("/slow") + "\", \"timeout_ms\": 200}")));
        assertTrue(e.getMessage().contains("timed out after 200 ms"), e.getMessage());
    }

    @Test
    void aRefusedConnectionIsTransient() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            closedPort = s.getLocalPort();
        }
        RetryableJobException e = assertThrows(RetryableJobException.class,
                () -> local.handle(job(1, 1, payload("http://127.0.0.1:" + closedPort + "/"))));
        assertTrue(e.getMessage().contains("connection failed") || e.getMessage().contains("ConnectException"),
                e.getMessage());
    }

    @Test
    void aSuccessIgnoresALargeBody() throws Exception {
        receiver.answer(r -> Receiver.Reply.of(200, "y".repeat(1_000_000)));
        local.handle(job(1, 1, payload(receiver.url("/"))));
        assertEquals(1, receiver.requests.size());
    }
}

package dev.fairq.api;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.EdgeCasesMode;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.statistics.Statistics;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import dev.fairq.schema.JobRequest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Generated bodies, query strings and headers thrown at the running server (TestApp: real HTTP, real PostgreSQL).
 * For every request: no 5xx, an answer at all, and a refused request (4xx) changed nothing (TestApp#snapshot:
 * the test tenants' jobs, every key, audit row, admin token and tenant row). After each property the server is still healthy: its health checks
 * pass and a plain job is accepted and read back.
 *
 * <p>Requests go over a raw socket so that anything can be sent: header values with control characters or
 * bytes that are not UTF-8, malformed request targets, bodies that are not UTF-8. Tries are bounded (620 requests
 * in all, about 10 s on a quiet machine) so the test stays well under a minute on a loaded machine; each run draws new
 * samples, and a failure prints its seed (jqwik reruns it first the next time).
 */
class GeneratedInputPropertyTest {
    private static TestApp app;
    private static String key;
    private static String tenant;
    private static String limitsTenant;

    private static synchronized TestApp app() throws Exception {
        if (app == null) {
            app = TestApp.get();
            tenant = TestApp.uniqueTenant("gen");
            key = app.newTenantKey(tenant);
            limitsTenant = TestApp.uniqueTenant("genlim");
            assertEquals(201, app.admin("PUT", "/v1/admin/tenants/" + limitsTenant, "{}").status());
        }
        return app;
    }

    // ------------------------------------------------------------------------------------------ properties

    @Property(tries = 200, edgeCases = EdgeCasesMode.NONE)
    void jobSubmissionsNeverAnswer5xxAndARefusalStoresNothing(@ForAll("jobBodies") String body) throws Exception {
        send("POST", "/v1/jobs", body.getBytes(StandardCharsets.UTF_8), List.of());
    }

    @Property(tries = 60, edgeCases = EdgeCasesMode.NONE)
    void batchesNeverAnswer5xxAndARefusalStoresNothing(@ForAll("batchBodies") String body) throws Exception {
        send("POST", "/v1/jobs/batch", body.getBytes(StandardCharsets.UTF_8), List.of());
    }

    @Property(tries = 50, edgeCases = EdgeCasesMode.NONE)
    void bodiesThatAreNotUtf8OrNotJsonAreRefused(@ForAll("rawBodies") byte[] body) throws Exception {
        int status = send("POST", "/v1/jobs", body, List.of());
        assertTrue(status >= 400, "bytes that are not a JSON object were accepted: " + status);
    }

    @Property(tries = 150, edgeCases = EdgeCasesMode.NONE)
    void queryStringsNeverAnswer5xx(@ForAll("listPaths") String path, @ForAll("queries") String query) throws Exception {
        app();
        boolean admin = path.startsWith(ADMIN);
        send("GET", (admin ? path.substring(ADMIN.length()) : path) + "?" + query, admin ? TestApp.ADMIN_TOKEN : key, null, List.of());
    }

    @Property(tries = 100, edgeCases = EdgeCasesMode.NONE)
    void headersNeverAnswer5xx(@ForAll("headerLists") List<String> headers) throws Exception {
        send("POST", "/v1/jobs", "{\"type\": \"record\", \"payload\": {}}".getBytes(StandardCharsets.UTF_8), headers);
    }

    @Property(tries = 60, edgeCases = EdgeCasesMode.NONE)
    void tenantLimitChangesNeverAnswer5xxAndARefusalStoresNothing(@ForAll("limitBodies") String body) throws Exception {
        app();
        send("PATCH", "/v1/admin/tenants/" + limitsTenant, TestApp.ADMIN_TOKEN, body.getBytes(StandardCharsets.UTF_8), List.of());
    }

    @AfterProperty
    void theServerIsStillHealthy() throws Exception {
        TestApp a = app();
        assertEquals(200, a.adminPort("/healthcheck").status(), "health checks");
        TestApp.Res job = a.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {\"still\": \"fine\"}}");
        assertEquals(201, job.status(), job.toString());
        TestApp.Res read = a.call("GET", "/v1/jobs/" + job.body().get("id").asLong(), key, null);
        assertEquals("fine", read.body().get("payload").get("still").asText());
    }

    // ------------------------------------------------------------------------------------------ one request

    private int send(String method, String target, byte[] body, List<String> headers) throws Exception {
        app();
        return send(method, target, key, body, headers);
    }

    /** Sends one request; asserts an answer below 500 and, for a refusal, an unchanged database. */
    private int send(String method, String target, String token, byte[] body, List<String> headers) throws Exception {
        List<Object> before = app.snapshot(tenant, limitsTenant);
        int status = raw(method, target, token, body, headers);
        String what = method + " " + target + (body == null ? "" : " " + new String(body, StandardCharsets.UTF_8)) + " " + headers;
        assertTrue(status > 0, "no answer to " + what);
        assertTrue(status < 500, status + " for " + what);
        if (status >= 400) assertEquals(before, app.snapshot(tenant, limitsTenant), "a refused request (" + status + ") changed something: " + what);
        Statistics.collect(status); // jqwik prints the answers' spread: how many requests got as far as the database
        return status;
    }

    /** HTTP/1.1 over a plain socket: the final status code of the answer, or -1 when the connection closed without one. */
    private static int raw(String method, String target, String token, byte[] body, List<String> headers) throws IOException {
        ByteArrayOutputStream req = new ByteArrayOutputStream();
        latin1(req, method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
        latin1(req, "Authorization: Bearer " + token + "\r\n");
        boolean typed = headers.stream().anyMatch(h -> h.toLowerCase(Locale.ROOT).startsWith("content-type:"));
        if (body != null && !typed) latin1(req, "Content-Type: application/json\r\n");
        for (String h : headers) {
            req.write(h.getBytes(StandardCharsets.UTF_8));
            latin1(req, "\r\n");
        }
        latin1(req, "Content-Length: " + (body == null ? 0 : body.length) + "\r\n\r\n");
        if (body != null) req.write(body);
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", app.support.getLocalPort()), 10_000);
            s.setSoTimeout(60_000);
            OutputStream out = s.getOutputStream();
            out.write(req.toByteArray());
            out.flush();
            InputStream in = s.getInputStream();
            // to the end (the server closes): the answer is complete before the next request
            String answer = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
            int at = 0;
            while (answer.startsWith("HTTP/1.1 ", at) && answer.length() >= at + 12) {
                int status = Integer.parseInt(answer.substring(at + 9, at + 12));
                if (status >= 200) return status;
                int end = answer.indexOf("\r\n\r\n", at); // an interim answer (100 Continue): the final one follows
                if (end < 0) return -1;
                at = end + 4;
            }
            return -1;
        }
    }

    private static void latin1(ByteArrayOutputStream out, String s) {
        out.writeBytes(s.getBytes(StandardCharsets.ISO_8859_1));
    }

    // ------------------------------------------------------------------------------------------ generators

    private static final List<String> JOB_FIELDS = List.of("type", "queue", "payload", "priority", "run_at", "delay_ms",
            "job_key", "ordering_key", "max_attempts", "timeout_ms", "tenant", "tenant_id", "runat", "id", "status");

    /** Strings that have broken servers: control characters, NUL, surrogates, long runs, escapes, SQL and path bits. */
    static Arbitrary<String> nastyStrings() {
        return Arbitraries.oneOf(
                Arbitraries.strings().all().ofMaxLength(40),
                Arbitraries.strings().withCharRange('\u0000', '\u001f').withChars("\u007f\u0085\u2028\ud800\udfff\ufeff")
                        .ofMinLength(1).ofMaxLength(5),
                Arbitraries.strings().alpha().numeric().withChars("_.:-").ofMinLength(1).ofMaxLength(300),
                withNul(),
                Arbitraries.of("", " ", "record", "noop", "default", "schedule:x:2030-01-01T00:00:00Z", "' OR 1=1 --",
                        "%00", "..%2f..", "\u0000", "a\u0000b", "\\u0000", "0000-01-01T00:00:00Z", "+275760-09-13T00:00:00Z",
                        "2030-02-30T00:00:00Z", "2030-01-01T00:00:00+25:00", "-999999999-01-01T00:00:00Z", "1e400",
                        "\ud83d\ude00", "\ud800"));
    }

    /** A JSON text for a value: numbers that overflow every type, strings with anything, nested containers. */
    static Arbitrary<String> jsonValues(int depth) {
        Arbitrary<String> scalars = Arbitraries.oneOf(
                nastyStrings().map(GeneratedInputPropertyTest::quote),
                Arbitraries.longs().map(String::valueOf),
                Arbitraries.integers().between(-200, 1200).map(String::valueOf),
                Arbitraries.doubles().map(String::valueOf).filter(d -> !d.contains("N") && !d.contains("I")),
                Arbitraries.of("0", "-0", "1.5", "1e400", "-1e400", "1e-400", "123456789012345678901234567890",
                        "9223372036854775808", "-9223372036854775809", "2147483648", "true", "false", "null", "{}", "[]",
                        "0.1e1", "366e5", "31622400001"),
                dates());
        if (depth <= 0) return scalars;
        Arbitrary<String> array = jsonValues(depth - 1).list().ofMaxSize(4).map(l -> "[" + String.join(",", l) + "]");
        Arbitrary<String> object = Combinators.combine(nastyStrings(), jsonValues(depth - 1)).as((k, v) -> quote(k) + ":" + v)
                .list().ofMaxSize(4).map(l -> "{" + String.join(",", l) + "}");
        return Arbitraries.frequencyOf(Tuple.of(6, scalars), Tuple.of(1, array), Tuple.of(1, object));
    }

    /** RFC 3339-looking times, from years no database can hold to ordinary ones. */
    static Arbitrary<String> dates() {
        return Combinators.combine(Arbitraries.integers().between(-300_000, 300_000), Arbitraries.integers().between(0, 13),
                        Arbitraries.integers().between(0, 32), Arbitraries.of("Z", "+00:00", "-18:00", "+25:00", ""))
                .as((y, m, d, z) -> quote((y >= 0 && y <= 9999 ? String.format("%04d", y) : String.format("%+07d", y))
                        + String.format("-%02d-%02dT12:00:00", m, d) + z));
    }

    static String quote(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                default -> {
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                    else b.append(c);
                }
            }
        }
        return b.append('"').toString();
    }

    /** Text with a NUL somewhere: what PostgreSQL cannot store in text or jsonb. */
    static Arbitrary<String> withNul() {
        return Combinators.combine(Arbitraries.strings().alpha().ofMaxLength(6), Arbitraries.strings().alpha().ofMaxLength(6))
                .as((a, b) -> a + "\u0000" + b);
    }

    /** {@code "name": value}, or null (left out) with the given probability. */
    static Arbitrary<String> field(String name, Arbitrary<String> value, double absent) {
        return value.map(v -> quote(name) + ": " + v).injectNull(absent);
    }

    /** Keys: mostly valid (so that the request gets as far as the database), else anything, NUL included. */
    static Arbitrary<String> keys() {
        return Arbitraries.frequencyOf(
                Tuple.of(4, Arbitraries.strings().alpha().numeric().withChars("-_:/ ").ofMinLength(1).ofMaxLength(40)),
                Tuple.of(2, nastyStrings()), Tuple.of(1, withNul())).map(GeneratedInputPropertyTest::quote);
    }

    /** RFC 3339 times around now, some past the one-year bound either way. */
    static Arbitrary<String> nearNow() {
        return Arbitraries.longs().between(-400 * 24, 400 * 24)
                .map(h -> quote(OffsetDateTime.now(ZoneOffset.UTC).plusHours(h).toString()));
    }

    /**
     * A JSON object of job fields: each known field present or not, mostly with a value of its own kind (so that
     * most requests reach the database), sometimes anything; now and then an unknown or refused field.
     */
    static Arbitrary<String> jobObjects() {
        Arbitrary<String> names = Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.of("record", "noop", "fail", "default", "a.b:c-d_e", "emails")),
                Tuple.of(1, nastyStrings())).map(GeneratedInputPropertyTest::quote);
        Arbitrary<String> anything = jsonValues(1);
        List<Arbitrary<String>> fields = List.of(
                field("type", names, 0.05),
                field("payload", jsonValues(3), 0.05),
                field("queue", names, 0.6),
                field("priority", Arbitraries.oneOf(Arbitraries.integers().between(-120, 120).map(String::valueOf), anything), 0.6),
                field("run_at", Arbitraries.oneOf(nearNow(), dates(), anything), 0.7),
                field("delay_ms", Arbitraries.oneOf(Arbitraries.longs().between(-5, JobRequest.MAX_DELAY_MS + 5)
                        .map(String::valueOf), anything), 0.85),
                field("job_key", keys(), 0.5),
                field("ordering_key", keys(), 0.6),
                field("max_attempts", Arbitraries.oneOf(Arbitraries.integers().between(-1, 1001).map(String::valueOf), anything), 0.7),
                field("timeout_ms", Arbitraries.oneOf(Arbitraries.longs().between(-1, JobRequest.MAX_TIMEOUT_MS + 1)
                        .map(String::valueOf), anything), 0.7),
                Combinators.combine(Arbitraries.frequencyOf(Tuple.of(3, Arbitraries.of(JOB_FIELDS)), Tuple.of(1, nastyStrings())),
                        anything).as((k, v) -> quote(k) + ": " + v).injectNull(0.85));
        return Combinators.combine(fields).as(present ->
                "{" + present.stream().filter(java.util.Objects::nonNull).collect(java.util.stream.Collectors.joining(", ")) + "}");
    }

    /** Job objects, and some of them broken as text (cut short, a byte changed), which must be a 400. */
    @Provide
    Arbitrary<String> jobBodies() {
        Arbitrary<String> broken = Combinators.combine(jobObjects(), Arbitraries.integers().between(0, 1000),
                        Arbitraries.chars().all())
                .as((s, at, c) -> {
                    int i = Math.min(at, s.length());
                    return at % 2 == 0 ? s.substring(0, i) : s.substring(0, i) + c + s.substring(i);
                });
        return Arbitraries.frequencyOf(Tuple.of(5, jobObjects()), Tuple.of(1, broken), Tuple.of(1, jsonValues(1)));
    }

    /** A valid job but for its payload and keys, which may hold anything (a NUL among them). */
    static Arbitrary<String> simpleJobs() {
        return Combinators.combine(jsonValues(3), field("ordering_key", keys(), 0.5), field("job_key", keys(), 0.7))
                .as((payload, ok, jk) -> "{\"type\": \"record\", \"payload\": " + payload + (ok == null ? "" : ", " + ok)
                        + (jk == null ? "" : ", " + jk) + "}");
    }

    @Provide
    Arbitrary<String> batchBodies() {
        return Arbitraries.oneOf(
                Arbitraries.frequencyOf(Tuple.of(3, simpleJobs()), Tuple.of(1, jobObjects())).list().ofMinSize(1).ofMaxSize(5)
                        .map(l -> "{\"jobs\": [" + String.join(", ", l) + "]}"),
                jsonValues(2).map(v -> "{\"jobs\": " + v + "}"));
    }

    @Provide
    Arbitrary<byte[]> rawBodies() {
        return Arbitraries.oneOf(
                Arbitraries.bytes().array(byte[].class).ofMaxSize(64),
                Arbitraries.of(new byte[]{'{', '"', 't', (byte) 0xC3, (byte) 0x28, '"', ':', '1', '}'},
                        new byte[]{(byte) 0xEF, (byte) 0xBB, (byte) 0xBF, '{', '}'}, new byte[]{'{', 0, '}'},
                        "{\"type\": \"record\", \"payload\": {\"a\": \"\u0000\"}}".getBytes(StandardCharsets.UTF_8)));
    }

    /** Marks a path that takes the admin token. */
    private static final String ADMIN = "admin:";

    @Provide
    Arbitrary<String> listPaths() {
        return Arbitraries.frequencyOf(
                Tuple.of(4, Arbitraries.of("/v1/jobs")),
                Tuple.of(3, Arbitraries.of(ADMIN + "/v1/admin/jobs", ADMIN + "/v1/admin/audit", ADMIN + "/v1/admin/overview",
                        ADMIN + "/v1/admin/schedules", ADMIN + "/v1/admin/ordering-keys/blocked", ADMIN + "/v1/admin/tokens")),
                Tuple.of(2, Arbitraries.of("/v1/schedules", "/v1/stats", "/v1/dashboard", "/v1/jobs/1", "/v1/jobs/1/explain",
                        "/v1/jobs/99999999999999999999", "/v1/schedules/a%01", "/v1/jobs/%00")));
    }

    /**
     * Query strings: known and unknown names; values mostly the nasty strings percent-encoded as UTF-8 (NUL and other
     * control characters reach the resources), some raw bytes (not UTF-8: the container refuses those), some plain.
     */
    @Provide
    Arbitrary<String> queries() {
        Arbitrary<String> name = Arbitraries.frequencyOf(
                Tuple.of(8, Arbitraries.of("status", "queue", "type", "ordering_key", "limit", "after", "tenant", "search", "offset")),
                Tuple.of(1, Arbitraries.strings().alpha().withChars("%_0").ofMaxLength(8)));
        Arbitrary<String> utf8 = nastyStrings().map(v -> percent(v.getBytes(StandardCharsets.UTF_8)));
        Arbitrary<String> bytes = Arbitraries.bytes().array(byte[].class).ofMaxSize(12).map(GeneratedInputPropertyTest::percent);
        Arbitrary<String> plain = Arbitraries.oneOf(
                Arbitraries.strings().alpha().numeric().withChars("-_.~+").ofMaxLength(20),
                Arbitraries.of("-1", "0", "501", "9223372036854775808", "pending", "%", "%zz", "%0", "a%2", "%C0%80",
                        "%ED%A0%80", "%F4%90%80%80", "'", "\\", "%5C", "%25", "acme", "a_b%25"));
        Arbitrary<String> value = Arbitraries.frequencyOf(Tuple.of(4, utf8), Tuple.of(1, bytes), Tuple.of(2, plain));
        Arbitrary<String> param = Combinators.combine(name, value).as((n, v) -> n + "=" + v);
        return param.list().ofMinSize(1).ofMaxSize(4).map(l -> String.join("&", l));
    }

    private static String percent(byte[] bs) {
        StringBuilder b = new StringBuilder();
        for (byte x : bs) b.append(String.format("%%%02X", x & 0xff));
        return b.toString();
    }

    /** Extra header lines: known names with any value (control characters, bytes above 0x7f), and odd names. */
    @Provide
    Arbitrary<List<String>> headerLists() {
        Arbitrary<String> name = Arbitraries.frequencyOf(
                Tuple.of(6, Arbitraries.of("X-Fairq-Actor", "Idempotency-Key", "Accept", "Content-Type", "Authorization",
                        "Accept-Encoding", "Accept-Charset", "Expect", "X-Forwarded-For", "Cookie", "Range", "Origin",
                        "X-HTTP-Method-Override")),
                Tuple.of(1, Arbitraries.strings().alpha().withChars("-_:").ofMinLength(1).ofMaxLength(20)));
        Arbitrary<String> value = Arbitraries.oneOf(
                Arbitraries.strings().withCharRange('\u0000', '\u00ff').ofMaxLength(30),
                Arbitraries.strings().all().ofMaxLength(10),
                Arbitraries.of("application/json", "application/json; charset=utf-16", "text/plain", "*/*", "gzip",
                        "100-continue", "Bearer ", "Bearer \u0000", "bytes=0-1", "", "application/x-www-form-urlencoded"));
        return Combinators.combine(name, value).as((n, v) -> n + ": " + v).list().ofMaxSize(3);
    }

    private static final List<String> LIMIT_FIELDS = List.of("weight", "rate_per_second", "burst", "max_running",
            "max_queued", "paused", "webhook_allow", "max_schedules", "min_schedule_interval_s", "api_rate_per_second",
            "api_burst", "id", "unknown");

    @Provide
    Arbitrary<String> limitBodies() {
        Arbitrary<String> allow = Arbitraries.oneOf(
                        nastyStrings(),
                        Arbitraries.of("127.0.0.1", "127.0.0.1:8080", "localhost", "*.example.com", "[::1]:443", "10.0.0.0/8",
                                "0.0.0.0/0", "[::]/0", "hooks.example.com:0", "1.2.3.4:65536", "*.", "*", "[fd00::/8]:443"))
                .map(GeneratedInputPropertyTest::quote).list().ofMaxSize(3).map(l -> "[" + String.join(",", l) + "]");
        Arbitrary<String> value = Arbitraries.frequencyOf(Tuple.of(3, jsonValues(1)), Tuple.of(1, allow));
        Arbitrary<String> name = Arbitraries.of(LIMIT_FIELDS);
        return Combinators.combine(name, value).as((k, v) -> quote(k) + ": " + v).list().ofMaxSize(4)
                .map(l -> "{" + String.join(", ", l) + "}");
    }
}

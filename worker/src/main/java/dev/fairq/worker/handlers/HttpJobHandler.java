package dev.fairq.worker.handlers;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.Json;
import dev.fairq.worker.JobContext;
import dev.fairq.worker.JobHandler;
import dev.fairq.worker.PermanentJobException;
import dev.fairq.worker.RetryableJobException;
import org.jooq.DSLContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The built-in {@code http} job type: send a request to a URL the job's tenant may reach.
 *
 * <p>Payload: {@code {"url": "https://...", "method": "POST", "headers": {"X-A": "b"}, "body": ...,
 * "timeout_ms": 10000}}. Only {@code url} is required. {@code method} is one of GET, POST (the default), PUT,
 * PATCH, DELETE. {@code body} may be any JSON value, sent as JSON text (Content-Type application/json unless
 * the headers say otherwise), or a string, sent as-is (text/plain; charset=utf-8 unless the headers say
 * otherwise). {@code timeout_ms} (1..300000, default 10000) bounds the whole exchange: connect, response
 * headers and the part of the body that is read. Every request carries {@code Idempotency-Key} (the same on
 * every attempt of the job), {@code Fairq-Job-Id} and {@code Fairq-Attempt}; payload headers of those names
 * are dropped, so a payload cannot forge them.
 *
 * <p>Outcome: 2xx succeeds. 408, 429, 5xx, timeouts, connection failures and DNS failures are transient
 * (retried with the type's backoff; on 429 and 503 a {@code Retry-After} in seconds or as an HTTP date sets
 * the delay instead, capped at {@value #MAX_RETRY_AFTER_SECONDS} s). 3xx is permanent: redirects are never
 * followed, because the target was not checked against the allow list. Any other 4xx, an invalid payload and
 * a refused destination are permanent (dead at once); the error names the status or the payload field.
 *
 * <p>SSRF protection. The URL's host must be on the tenant's {@code webhook_allow} list, either exactly
 * (case-insensitive; IP literals compare as addresses) or through an entry {@code *.example.com}, which
 * matches any subdomain of example.com but not example.com itself and never an IP literal. The host is then
 * resolved and the request is refused if ANY of its addresses is not public unicast (loopback, private,
 * link-local, CGNAT, unique-local, multicast, any-local, reserved, and IPv6 forms embedding those, see
 * {@link AddressRanges}) — unless the allow list names the host itself exactly, or names that address as an
 * IP literal. A wildcard never opens a private address: an attacker who controls DNS under an allowed
 * {@code *.example.com} cannot point a name at the internal network.
 *
 * <p>DNS rebinding: what remains. The JDK HTTP client has no hook to connect to a given address, so it
 * resolves the host again when it connects, and in principle that second answer could differ from the one
 * checked here. The window is narrowed, not closed:
 * <ul>
 *   <li>the check resolves immediately before the send, through the same {@link InetAddress} API the client
 *       uses, so the client's lookup is normally served from the JVM's positive address cache (default 30 s
 *       when no security manager is installed, whatever TTL the DNS answer carried). A rebinding server
 *       answering with TTL 0 therefore cannot switch addresses between check and connect; only an entry
 *       that expires in the milliseconds between the two, or a JVM run with {@code networkaddress.cache.ttl=0}
 *       (a warning is logged at startup then), leaves the gap open;</li>
 *   <li>every address of the answer is checked, not only the first the client will use;</li>
 *   <li>the default client uses no proxy (a proxy would resolve the name itself, unchecked) and follows no
 *       redirect. A client passed in must not follow redirects either (the constructor refuses one that
 *       does).</li>
 * </ul>
 * Closing the gap entirely needs an egress proxy that enforces the same rule on the address it connects to,
 * or network policy that keeps workers off private ranges; deployments that care should have both.
 *
 * <p>Stopping: when the worker stops an attempt (someone cancelled the job, it ran past its time limit, or the
 * worker lost its lease) it interrupts the handler, which cancels the pending exchange; that closes the
 * exchange's connection (JDK 16 and later), so the receiver sees the request end instead of a client that
 * went quiet. The type's time limit is {@link #TIME_LIMIT}.
 *
 * <p>Responses are read only up to {@value #EXCERPT_BYTES} bytes (for the error message); the rest is dropped
 * unread. Query strings are left out of error messages, since they often carry tokens.
 */
public final class HttpJobHandler implements JobHandler {
    private static final Logger log = LoggerFactory.getLogger(HttpJobHandler.class);

    public static final String TYPE = "http";
    public static final Set<String> METHODS = Set.of("GET", "POST", "PUT", "PATCH", "DELETE");
    public static final long DEFAULT_TIMEOUT_MS = 10_000;
    public static final long MAX_TIMEOUT_MS = 300_000;
    public static final long MAX_RETRY_AFTER_SECONDS = 3600;
    /**
     * The type's time limit per attempt (a job's own {@code timeout_ms} wins): the longest exchange a payload
     * may ask for plus 10 s for the allow-list check and DNS, so the limit never cuts a request short that
     * its own {@code timeout_ms} allows.
     */
    public static final Duration TIME_LIMIT = Duration.ofMillis(MAX_TIMEOUT_MS).plusSeconds(10);
    static final int EXCERPT_BYTES = 2048;
    static final int EXCERPT_CHARS = 300;

    static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    static final String JOB_ID = "Fairq-Job-Id";
    static final String ATTEMPT = "Fairq-Attempt";
    private static final Set<String> RESERVED = Set.of("idempotency-key", "fairq-job-id", "fairq-attempt");

    /** Host name to addresses; {@link InetAddress#getAllByName} in production. */
    @FunctionalInterface
    interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    private final Function<String, List<String>> allowedHostsForTenant;
    private final HttpClient client;
    private final Resolver resolver;
    private final Supplier<Instant> clock;

    /**
     * @param allowedHostsForTenant tenant id to its allow list (see the class comment for the entry syntax);
     *                              called on every job, so it should be cheap (cache)
     * @param client                must not follow redirects; {@link #defaultClient()} is the intended one
     */
    public HttpJobHandler(Function<String, List<String>> allowedHostsForTenant, HttpClient client) {
        this(allowedHostsForTenant, client, InetAddress::getAllByName, Instant::now);
    }

    HttpJobHandler(Function<String, List<String>> allowedHostsForTenant, HttpClient client, Resolver resolver,
                   Supplier<Instant> clock) {
        if (client.followRedirects() != HttpClient.Redirect.NEVER) {
            throw new IllegalArgumentException("the HTTP client must not follow redirects: a redirect could lead "
                    + "to a host the tenant may not reach");
        }
        this.allowedHostsForTenant = allowedHostsForTenant;
        this.client = client;
        this.resolver = resolver;
        this.clock = clock;
        warnIfAddressCacheDisabled();
    }

    /** The handler for production: allow lists from {@code tenants.webhook_allow}, re-read at most once a second per tenant. */
    public static HttpJobHandler forDatabase(DSLContext db) {
        return new HttpJobHandler(TenantAllowLists.fromDatabase(db), defaultClient());
    }

    /** HTTP/1.1, no redirects, no proxy, 10 s connect timeout. */
    public static HttpClient defaultClient() {
        return HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .followRedirects(HttpClient.Redirect.NEVER)
                .proxy(HttpClient.Builder.NO_PROXY)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    // -------------------------------------------------------------------------------------------- handling

    @Override
    public void handle(JobContext job) throws Exception {
        Call call = Call.parse(job.payloadJson());
        checkDestination(job.tenantId(), call.url());
        HttpRequest request = call.toRequest(job);
        job.throwIfCancelled(); // the last moment before the request leaves; after it, the interrupt aborts it
        HttpResponse<String> response = send(call, request);
        judge(call, response);
    }

    /** The parsed payload. */
    record Call(URI url, String method, Map<String, String> headers, String body, boolean jsonBody,
                Duration timeout) {

        static Call parse(String payloadJson) throws PermanentJobException {
            JsonNode p;
            try {
                p = Json.MAPPER.readTree(payloadJson);
            } catch (JsonProcessingException e) {
                throw new PermanentJobException("payload: not valid JSON");
            }
            if (p == null || !p.isObject()) throw new PermanentJobException("payload: must be a JSON object");

            JsonNode u = p.path("url");
            if (u.isMissingNode() || u.isNull()) throw new PermanentJobException("url: required");
            if (!u.isTextual() || u.asText().isBlank()) throw new PermanentJobException("url: must be a non-empty string");
            URI url;
            try {
                url = new URI(u.asText());
            } catch (URISyntaxException e) {
                throw new PermanentJobException("url: not a valid URL (" + e.getReason() + ")");
            }
            String scheme = url.getScheme() == null ? null : url.getScheme().toLowerCase(Locale.ROOT);
            if (!"http".equals(scheme) && !"https".equals(scheme)) {
                throw new PermanentJobException("url: scheme must be http or https, got "
                        + (scheme == null ? "none" : "'" + url.getScheme() + "'"));
            }
            if (url.getHost() == null || url.getHost().isEmpty()) {
                throw new PermanentJobException("url: no host (a server-based http(s) URL is required)");
            }

            String method = "POST";
            JsonNode m = p.path("method");
            if (!m.isMissingNode() && !m.isNull()) {
                if (!m.isTextual() || !METHODS.contains(m.asText().toUpperCase(Locale.ROOT))) {
                    throw new PermanentJobException("method: must be one of GET, POST, PUT, PATCH, DELETE, got " + m);
                }
                method = m.asText().toUpperCase(Locale.ROOT);
            }

            Map<String, String> headers = new LinkedHashMap<>();
            JsonNode h = p.path("headers");
            if (!h.isMissingNode() && !h.isNull()) {
                if (!h.isObject()) throw new PermanentJobException("headers: must be an object of strings");
                for (Iterator<Map.Entry<String, JsonNode>> it = h.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    if (!e.getValue().isTextual()) {
                        throw new PermanentJobException("headers." + e.getKey() + ": must be a string");
                    }
                    if (e.getKey().isBlank()) throw new PermanentJobException("headers: a header name is empty");
                    if (RESERVED.contains(e.getKey().toLowerCase(Locale.ROOT))) continue; // ours win
                    headers.put(e.getKey(), e.getValue().asText());
                }
            }

            String body = null;
            boolean json = false;
            JsonNode b = p.path("body");
            if (!b.isMissingNode() && !b.isNull()) {
                if (b.isTextual()) {
                    body = b.asText();
                } else {
                    try {
                        body = Json.MAPPER.writeValueAsString(b);
                    } catch (JsonProcessingException e) {
                        throw new PermanentJobException("body: cannot be written as JSON");
                    }
                    json = true;
                }
            }

            long timeoutMs = DEFAULT_TIMEOUT_MS;
            JsonNode t = p.path("timeout_ms");
            if (!t.isMissingNode() && !t.isNull()) {
                if (!t.isIntegralNumber() || !t.canConvertToLong() || t.asLong() < 1 || t.asLong() > MAX_TIMEOUT_MS) {
                    throw new PermanentJobException("timeout_ms: must be an integer from 1 to " + MAX_TIMEOUT_MS
                            + ", got " + t);
                }
                timeoutMs = t.asLong();
            }
            return new Call(url, method, Collections.unmodifiableMap(headers), body, json, Duration.ofMillis(timeoutMs));
        }

        HttpRequest toRequest(JobContext job) throws PermanentJobException {
            HttpRequest.Builder r;
            try {
                r = HttpRequest.newBuilder(url).timeout(timeout);
            } catch (IllegalArgumentException e) {
                throw new PermanentJobException("url: " + e.getMessage());
            }
            boolean contentType = false;
            boolean userAgent = false;
            for (Map.Entry<String, String> e : headers.entrySet()) {
                try {
                    r.header(e.getKey(), e.getValue());
                } catch (IllegalArgumentException ex) {
                    throw new PermanentJobException("headers." + e.getKey() + ": " + ex.getMessage());
                }
                contentType |= e.getKey().equalsIgnoreCase("Content-Type");
                userAgent |= e.getKey().equalsIgnoreCase("User-Agent");
            }
            if (body != null && !contentType) {
                r.header("Content-Type", jsonBody ? "application/json" : "text/plain; charset=utf-8");
            }
            if (!userAgent) r.header("User-Agent", "fairq");
            r.header(IDEMPOTENCY_KEY, job.idempotencyKey());
            r.header(JOB_ID, Long.toString(job.jobId()));
            r.header(ATTEMPT, Integer.toString(job.attempt()));
            r.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                    : HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8));
            return r.build();
        }

        /** The URL for messages: no user info, no query, no fragment. */
        String safeUrl() {
            String port = url.getPort() < 0 ? "" : ":" + url.getPort();
            String path = url.getRawPath() == null ? "" : url.getRawPath();
            return url.getScheme() + "://" + url.getHost() + port + path;
        }
    }

    // -------------------------------------------------------------------------------------------- destination

    enum Match { NONE, WILDCARD, EXACT }

    /**
     * Refuses (permanently) a host the tenant may not reach; a DNS failure is transient. Returns the checked
     * addresses.
     */
    InetAddress[] checkDestination(String tenantId, URI url) throws PermanentJobException, RetryableJobException {
        String host = normalizeHost(url.getHost());
        List<String> allow = allowedHostsForTenant.apply(tenantId);
        if (allow == null) allow = List.of();
        Match match = match(host, allow);
        if (match == Match.NONE) {
            throw new PermanentJobException("refused: host '" + host + "' is not on the webhook_allow list of tenant '"
                    + tenantId + "'");
        }
        InetAddress[] addresses;
        try {
            addresses = resolver.resolve(host);
        } catch (UnknownHostException e) {
            throw new RetryableJobException("cannot resolve host '" + host + "': " + e.getMessage(), null);
        }
        if (addresses == null || addresses.length == 0) {
            throw new RetryableJobException("host '" + host + "' resolved to no address", null);
        }
        if (match == Match.EXACT) return addresses; // the tenant's list names this very host
        for (InetAddress a : addresses) {
            String reason = AddressRanges.nonPublicReason(a);
            if (reason != null && !namesAddress(allow, a)) {
                throw new PermanentJobException("refused: host '" + host + "' resolves to " + a.getHostAddress()
                        + " (" + reason + "), which is not a public address; only an allow-list entry naming the "
                        + "host or the address exactly (not a wildcard) permits it");
            }
        }
        return addresses;
    }

    static String normalizeHost(String host) {
        String h = host.trim().toLowerCase(Locale.ROOT);
        if (h.startsWith("[") && h.endsWith("]")) h = h.substring(1, h.length() - 1);
        return h;
    }

    /** How {@code host} (normalized) is allowed by the list: exactly, only through a wildcard, or not. */
    static Match match(String host, List<String> allow) {
        InetAddress hostLiteral = AddressRanges.literal(host);
        Match best = Match.NONE;
        for (String raw : allow) {
            if (raw == null) continue;
            String entry = normalizeHost(raw);
            if (entry.isEmpty()) continue;
            if (entry.startsWith("*.")) {
                String suffix = entry.substring(1); // ".example.com"
                if (hostLiteral == null && suffix.length() > 1 && host.endsWith(suffix) && host.length() > suffix.length()) {
                    best = Match.WILDCARD;
                }
                continue;
            }
            InetAddress entryLiteral = AddressRanges.literal(entry);
            boolean same = hostLiteral != null && entryLiteral != null ? hostLiteral.equals(entryLiteral) : entry.equals(host);
            if (same) return Match.EXACT;
        }
        return best;
    }

    private static boolean namesAddress(List<String> allow, InetAddress address) {
        for (String raw : allow) {
            if (raw == null) continue;
            InetAddress literal = AddressRanges.literal(normalizeHost(raw));
            if (address.equals(literal)) return true;
        }
        return false;
    }

    // -------------------------------------------------------------------------------------------- sending

    private HttpResponse<String> send(Call call, HttpRequest request) throws RetryableJobException, InterruptedException {
        CompletableFuture<HttpResponse<String>> future = client.sendAsync(request, info -> new Excerpt(EXCERPT_BYTES));
        String what = call.method() + " " + call.safeUrl();
        try {
            // the request timeout covers connect and response headers; this bounds the body as well
            return future.get(call.timeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            future.cancel(true);
            throw new RetryableJobException(what + ": timed out after " + call.timeout().toMillis() + " ms", null);
        } catch (InterruptedException e) {
            // the worker stopped the attempt (cancel, time limit, lost lease): abort the exchange, which
            // closes its connection, so the receiver sees the request end rather than a silent client
            future.cancel(true);
            throw e;
        } catch (CancellationException e) {
            throw new RetryableJobException(what + ": cancelled", null);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof HttpConnectTimeoutException) {
                throw new RetryableJobException(what + ": connect timed out", null);
            }
            if (cause instanceof HttpTimeoutException) {
                throw new RetryableJobException(what + ": timed out after " + call.timeout().toMillis() + " ms", null);
            }
            if (cause instanceof ConnectException) {
                throw new RetryableJobException(what + ": connection failed: " + describe(cause), null);
            }
            if (cause instanceof IOException) {
                throw new RetryableJobException(what + ": " + describe(cause), null);
            }
            if (cause instanceof RuntimeException re) throw re;
            throw new IllegalStateException(what + ": " + describe(cause), cause);
        }
    }

    private static String describe(Throwable t) {
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null || m.isBlank() ? "" : " " + m);
    }

    private void judge(Call call, HttpResponse<String> response) throws PermanentJobException, RetryableJobException {
        int status = response.statusCode();
        if (status >= 200 && status < 300) return;
        String what = "HTTP " + status + " from " + call.method() + " " + call.safeUrl();
        if (status >= 300 && status < 400) {
            String location = response.headers().firstValue("Location").orElse("(none)");
            throw new PermanentJobException(what + ": redirect to " + excerpt(location)
                    + " not followed (a redirect could lead to a host the tenant may not reach; use the final URL)");
        }
        String body = excerpt(response.body());
        String withBody = body.isEmpty() ? what : what + ": " + body;
        if (status == 429 || status == 503) {
            Duration retryAfter = response.headers().firstValue("Retry-After")
                    .map(v -> parseRetryAfter(v, clock.get())).orElse(null);
            throw new RetryableJobException(retryAfter == null ? withBody
                    : withBody + " (Retry-After " + retryAfter.toSeconds() + " s)", retryAfter);
        }
        if (status == 408 || status >= 500 || status < 200) throw new RetryableJobException(withBody, null);
        throw new PermanentJobException(withBody);
    }

    /**
     * Retry-After as delta-seconds or an HTTP date, capped at {@value #MAX_RETRY_AFTER_SECONDS} s; a date in
     * the past is zero; null when unparseable (the type's backoff applies then).
     */
    static Duration parseRetryAfter(String value, Instant now) {
        String v = value.trim();
        Duration cap = Duration.ofSeconds(MAX_RETRY_AFTER_SECONDS);
        if (!v.isEmpty() && v.chars().allMatch(c -> c >= '0' && c <= '9')) {
            if (v.length() > 9) return cap;
            return min(Duration.ofSeconds(Long.parseLong(v)), cap);
        }
        try {
            Instant at = ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
            Duration d = Duration.between(now, at);
            return d.isNegative() ? Duration.ZERO : min(d, cap);
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    static String excerpt(String s) {
        if (s == null) return "";
        String oneLine = s.replaceAll("\\s+", " ").trim();
        return oneLine.length() <= EXCERPT_CHARS ? oneLine : oneLine.substring(0, EXCERPT_CHARS) + "...";
    }

    /** Reads at most {@code limit} bytes of a body, then cancels the rest of the stream. */
    static final class Excerpt implements HttpResponse.BodySubscriber<String> {
        private final int limit;
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final CompletableFuture<String> result = new CompletableFuture<>();
        private Flow.Subscription subscription;

        Excerpt(int limit) {
            this.limit = limit;
        }

        @Override
        public CompletionStage<String> getBody() {
            return result;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            if (result.isDone()) return;
            for (ByteBuffer b : items) {
                int n = Math.min(b.remaining(), limit - bytes.size());
                byte[] chunk = new byte[n];
                b.get(chunk);
                bytes.write(chunk, 0, n);
                if (bytes.size() >= limit) {
                    subscription.cancel();
                    complete();
                    return;
                }
            }
        }

        @Override
        public void onError(Throwable t) {
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            complete();
        }

        private void complete() {
            result.complete(bytes.toString(StandardCharsets.UTF_8));
        }
    }

    // -------------------------------------------------------------------------------------------- startup

    private static void warnIfAddressCacheDisabled() {
        String ttl = java.security.Security.getProperty("networkaddress.cache.ttl");
        if (ttl == null) ttl = System.getProperty("sun.net.inetaddr.ttl");
        if (ttl != null && ttl.trim().equals("0")) {
            log.warn("networkaddress.cache.ttl is 0: the http handler's address check and the HTTP client resolve "
                    + "host names separately, which widens the DNS-rebinding window (see HttpJobHandler)");
        }
    }
}

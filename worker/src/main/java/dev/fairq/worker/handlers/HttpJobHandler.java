package dev.fairq.worker.handlers;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.AddressRanges;
import dev.fairq.schema.Json;
import dev.fairq.schema.WebhookAllowList;
import dev.fairq.worker.JobContext;
import dev.fairq.worker.JobHandler;
import dev.fairq.worker.PermanentJobException;
import dev.fairq.worker.RetryableJobException;
import dev.fairq.worker.SnoozeJobException;
import org.eclipse.jetty.client.Destination;
import org.eclipse.jetty.client.HttpClient;
import org.eclipse.jetty.client.HttpResponseException;
import org.eclipse.jetty.client.ProxyAuthenticationProtocolHandler;
import org.eclipse.jetty.client.RedirectProtocolHandler;
import org.eclipse.jetty.client.Request;
import org.eclipse.jetty.client.Response;
import org.eclipse.jetty.client.Result;
import org.eclipse.jetty.client.StringRequestContent;
import org.eclipse.jetty.client.WWWAuthenticationProtocolHandler;
import org.eclipse.jetty.http.HttpCookieStore;
import org.eclipse.jetty.http.HttpException;
import org.eclipse.jetty.http.HttpField;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.util.Promise;
import org.eclipse.jetty.util.SocketAddressResolver;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.eclipse.jetty.util.thread.QueuedThreadPool;
import org.eclipse.jetty.util.thread.ScheduledExecutorScheduler;
import org.jooq.DSLContext;

import javax.net.ssl.SSLException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The built-in {@code http} job type: send a request to a URL the job's tenant may reach.
 *
 * <p>Payload: {@code {"url": "https://...", "method": "POST", "headers": {"X-A": "b"}, "body": ...,
 * "timeout_ms": 10000}}. Only {@code url} is required. {@code method} is one of GET, POST (the default), PUT,
 * PATCH, DELETE. {@code body} may be any JSON value, sent as JSON text (Content-Type application/json unless
 * the headers say otherwise), or a string, sent as-is (text/plain; charset=utf-8 unless the headers say
 * otherwise). {@code timeout_ms} (1..300000, default 10000) bounds the whole exchange: DNS lookup, connect,
 * response headers and the part of the body that is read (none for a 2xx: it succeeds at its headers). Every request carries {@code Idempotency-Key} (the
 * same on every attempt of the job), {@code Fairq-Job-Id} and {@code Fairq-Attempt}; payload headers of those
 * names are dropped, so a payload cannot forge them. Headers the client owns (Host, Content-Length,
 * Connection, Expect, Upgrade, Transfer-Encoding, ...) may not be given.
 *
 * <p>Outcome: 2xx succeeds (as soon as its headers arrive). 429 or 503 with a {@code Retry-After} (seconds or an HTTP date, capped at
 * {@value #MAX_RETRY_AFTER_SECONDS} s) snoozes the job for that long: the receiver asked to be called later,
 * nothing failed, so no attempt is used (bounded by the worker's max snoozes, past which it fails the attempt).
 * A {@code Retry-After} of 0 or a date already past names no delay: that is an ordinary retry, as without one
 * (a snooze of zero would call the busy receiver straight back, up to the max snoozes in a row).
 * 408, 429 and 5xx without one, timeouts, connection failures and DNS failures are transient (retried with
 * the type's backoff). 3xx is permanent: redirects are never
 * followed (the error names the target, redacted; send the job to the final URL). Any other 4xx, an invalid
 * payload and a refused destination are permanent (dead at once); the error names the status or the payload
 * field.
 *
 * <p>SSRF protection: the tenant's {@code webhook_allow} list ({@link WebhookAllowList} has the syntax and the
 * rule). In short, a host name entry allows only public addresses on ports 80/443 (or the port it names);
 * loopback, private, link-local, metadata and every other non-public address (see {@link AddressRanges}) is
 * reachable only through an IP address or CIDR entry that contains it. The check is on the addresses the
 * connection really goes to:
 * <ul>
 *   <li>the host is resolved exactly once per attempt, by this handler, within the job's time budget; every
 *       address of the answer is vetted and only the vetted ones are kept;</li>
 *   <li>the request carries them as its Jetty origin tag, and the client's {@link SocketAddressResolver} is
 *       {@link VettedAddresses}, which hands Jetty exactly those addresses and never looks the name up again:
 *       there is no second resolution for a DNS-rebinding answer to slip into. It refuses to connect at all for
 *       a request without vetted addresses;</li>
 *   <li>Host header, TLS SNI and certificate check keep the host name (the addresses carry it);</li>
 *   <li>pooled connections are per origin, and the origin includes the tag (tenant and vetted addresses), so
 *       a connection opened for one tenant or one answer is never reused for another;</li>
 *   <li>no proxy, no cookies (they would cross tenants), no redirects, no automatic authentication, no
 *       content decoding.</li>
 * </ul>
 *
 * <p>Error messages ({@code last_error}, logs) never carry a payload header's value: an invalid value is named
 * by its header only, and any value that shows up in a message anyway (a receiver echoing it) is replaced.
 * URLs in messages lose their user info, fragment and the values of query parameters named like secrets
 * ({@link #redactUrl}). Responses are read only up to {@value #EXCERPT_BYTES} bytes (for the error message);
 * the rest is dropped unread. Response headers over {@value #MAX_RESPONSE_HEADERS_BYTES} bytes are a transient
 * failure ("invalid response"), so a receiver cannot fill the worker's memory with them.
 *
 * <p>Stopping: when the worker stops an attempt (someone cancelled the job, it ran past its time limit, or the
 * worker lost its lease) it interrupts the handler, which aborts the pending exchange and closes its
 * connection, so the receiver sees the request end instead of a client that went quiet. The type's time limit
 * is {@link #TIME_LIMIT}.
 */
public final class HttpJobHandler implements JobHandler, AutoCloseable {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(HttpJobHandler.class);
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
    /**
     * The most response header bytes read (status line and fields). Jetty's client has no limit of its own, so a
     * receiver streaming header lines without end would fill the worker's heap until the job's timeout.
     */
    static final int MAX_RESPONSE_HEADERS_BYTES = 64 * 1024;
    static final int EXCERPT_CHARS = 300;
    static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(10);
    static final String REDACTED = "REDACTED";

    static final String IDEMPOTENCY_KEY = "Idempotency-Key";
    static final String JOB_ID = "Fairq-Job-Id";
    static final String ATTEMPT = "Fairq-Attempt";
    private static final Set<String> RESERVED = Set.of("idempotency-key", "fairq-job-id", "fairq-attempt");
    /** Set by the client from the request itself; a payload giving them could smuggle or confuse. */
    static final Set<String> CLIENT_HEADERS = Set.of("host", "content-length", "connection", "expect", "upgrade",
            "transfer-encoding", "te", "trailer", "keep-alive", "proxy-connection");
    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+\\-.^_`|~0-9A-Za-z]+");
    /** Query parameters whose values are left out of messages. */
    private static final Pattern SECRET_PARAM = Pattern.compile(
            "token|key|secret|sig|password|passwd|pwd|pass|auth|credential|session|jwt|code|hmac", Pattern.CASE_INSENSITIVE);
    /** A header value of the form {@code <auth-scheme> <credentials>} (RFC 9110 section 11.4); group 1 the credentials. */
    private static final Pattern SCHEME_AND_CREDENTIALS = Pattern.compile("[!#$%&'*+\\-.^_`|~0-9A-Za-z]+[ \t]+(\\S.*)");
    /** An absolute URL in free text, without trailing punctuation. */
    private static final Pattern URL_IN_TEXT = Pattern.compile("(?i)\\b[a-z][a-z0-9+.-]*://[^\\s'\"<>]*[^\\s'\"<>.,;:!?)\\]]");

    /** Host name to addresses; {@link InetAddress#getAllByName} in production. */
    @FunctionalInterface
    interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    private final Function<String, List<String>> allowListForTenant;
    private final Resolver resolver;
    private final Supplier<Instant> clock;
    private final HttpClient client;
    /**
     * A tenant's lookups still running, the ones its jobs gave up on included: the system resolver cannot be
     * interrupted, so a tenant whose DNS never answers (its own names, its own DNS) would otherwise leave one
     * thread per attempt behind, at its full job rate, until each lookup gives up on its own.
     */
    final Map<String, Integer> lookupsInFlight = new java.util.concurrent.ConcurrentHashMap<>();
    static final int MAX_LOOKUPS_PER_TENANT = 16;
    /**
     * Per tenant, the destinations (scheme, host, port and vetted addresses) it called last, most recent last. A
     * request keeps its connection open for the next one only when its destination is among the tenant's
     * {@value #KEPT_ORIGINS_PER_TENANT} last; any other request asks for {@code Connection: close}. Connections are
     * pooled per destination, so without this a tenant calling many names (a wildcard entry, its own DNS) left one
     * idle socket per name open for the client's idle timeout: at its job rate, thousands of file descriptors.
     */
    final Map<String, LinkedHashMap<String, Boolean>> recentOrigins = lru(MAX_TENANTS_REMEMBERED);
    /**
     * Tenants whose recent destinations are remembered, the most recent: every tenant that ever sent a webhook
     * through this worker had kept its list (up to 32 names each) for the life of the process.
     */
    static final int MAX_TENANTS_REMEMBERED = 10_000;
    static final int KEPT_ORIGINS_PER_TENANT = 32;
    /** Runs the blocking lookups, so that a job waits for one no longer than its time budget. */
    private final ExecutorService lookups = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fairq-http-dns");
        t.setDaemon(true);
        return t;
    });

    /**
     * @param allowListForTenant tenant id to its {@code webhook_allow} entries ({@link WebhookAllowList});
     *                           called on every job, so it should be cheap (cache)
     */
    public HttpJobHandler(Function<String, List<String>> allowListForTenant) {
        this(allowListForTenant, InetAddress::getAllByName, Instant::now);
    }

    HttpJobHandler(Function<String, List<String>> allowListForTenant, Resolver resolver, Supplier<Instant> clock) {
        this.allowListForTenant = allowListForTenant;
        this.resolver = resolver;
        this.clock = clock;
        this.client = startClient();
    }

    /** The handler for production: allow lists from {@code tenants.webhook_allow}, re-read at most once a second per tenant. */
    public static HttpJobHandler forDatabase(DSLContext db) {
        return new HttpJobHandler(TenantAllowLists.fromDatabase(db));
    }

    /**
     * HTTP/1.1, connect timeout 10 s, connecting only to vetted addresses; daemon threads, so a process that
     * never calls {@link #close} still exits.
     */
    private static HttpClient startClient() {
        HttpClient c = new HttpClient();
        QueuedThreadPool threads = new QueuedThreadPool(200, 2);
        threads.setName("fairq-http");
        threads.setDaemon(true);
        c.setExecutor(threads);
        c.setScheduler(new ScheduledExecutorScheduler("fairq-http-scheduler", true));
        c.setSslContextFactory(new SslContextFactory.Client()); // verifies the certificate against the host name
        c.setSocketAddressResolver(new VettedAddresses());
        c.setConnectTimeout(CONNECT_TIMEOUT.toMillis());
        c.setMaxResponseHeadersSize(MAX_RESPONSE_HEADERS_BYTES);
        c.setFollowRedirects(false);
        c.setHttpCookieStore(new HttpCookieStore.Empty());
        c.setUserAgentField(new HttpField(HttpHeader.USER_AGENT, "fairq"));
        c.setIdleTimeout(30_000);
        c.setDestinationIdleTimeout(60_000); // one destination per (tenant, host, vetted answer): let idle ones go
        try {
            c.start();
        } catch (Exception e) {
            throw new IllegalStateException("cannot start the HTTP client", e);
        }
        // started installs these; none may act on a tenant's response by itself
        c.getProtocolHandlers().remove(RedirectProtocolHandler.NAME);
        c.getProtocolHandlers().remove(WWWAuthenticationProtocolHandler.NAME);
        c.getProtocolHandlers().remove(ProxyAuthenticationProtocolHandler.NAME);
        c.getContentDecoderFactories().clear(); // no Accept-Encoding: the excerpt is read as sent
        return c;
    }

    /** The client, for tests that look at its destinations (one per tenant, host and vetted answer). */
    HttpClient client() {
        return client;
    }

    @Override
    public void close() {
        try {
            client.stop();
        } catch (Exception e) {
            throw new IllegalStateException("cannot stop the HTTP client", e);
        } finally {
            lookups.shutdownNow();
        }
    }

    // -------------------------------------------------------------------------------------------- handling

    @Override
    public void handle(JobContext job) throws Exception {
        Call call = Call.parse(job.payloadJson());
        long deadline = System.nanoTime() + call.timeout().toNanos();
        try {
            Vetted vetted = checkDestination(job.tenantId(), call.url(), deadline);
            job.throwIfCancelled(); // the last moment before the request leaves; after it, the interrupt aborts it
            Exchange response = send(job, call, vetted, deadline);
            judge(call, response);
        } catch (PermanentJobException e) {
            String clean = call.scrub(e.getMessage());
            if (clean.equals(e.getMessage())) throw e;
            throw new PermanentJobException(clean);
        } catch (RetryableJobException e) {
            String clean = call.scrub(e.getMessage());
            if (clean.equals(e.getMessage())) throw e;
            throw new RetryableJobException(clean, e.retryAfter());
        } catch (SnoozeJobException e) {
            String clean = call.scrub(e.getMessage());
            if (clean.equals(e.getMessage())) throw e;
            throw new SnoozeJobException(clean, e.delay());
        }
    }

    /**
     * What is wrong with an {@code http} job's payload, for a 422 when the job is submitted rather than a dead job
     * later: the field under {@code payload} ({@code payload.url}, {@code payload.headers.X-Sig}) and the message the
     * job would have died with; empty when the payload would be accepted. The destination itself is checked when the
     * job runs (the allow list may change meanwhile).
     */
    public static java.util.Optional<dev.fairq.schema.FieldError> payloadError(String payloadJson) {
        try {
            Call call = Call.parse(payloadJson);
            // user info is never sent (Jetty would put it in the Host header), so https://user:pass@host/ reached
            // the receiver without its credentials and the job died of the 401; a job already stored still runs so
            if (call.url().getRawUserInfo() != null) {
                return java.util.Optional.of(new dev.fairq.schema.FieldError("payload.url", "user info ('user:password@') "
                        + "is not sent: put the credentials in payload.headers, e.g. \"Authorization\": \"Basic ...\""));
            }
            return java.util.Optional.empty();
        } catch (PermanentJobException e) {
            String m = e.getMessage();
            int colon = m.indexOf(": ");
            String field = colon < 0 ? "" : m.substring(0, colon);
            if (field.equals("payload") || colon < 0 || field.contains(" ")) {
                return java.util.Optional.of(new dev.fairq.schema.FieldError("payload", colon < 0 ? m : m.substring(colon + 2)));
            }
            return java.util.Optional.of(new dev.fairq.schema.FieldError("payload." + field, m.substring(colon + 2)));
        } catch (RuntimeException e) {
            return java.util.Optional.empty(); // not the submitter's fault: the worker's attempt reports it
        }
    }

    /** The parsed payload. */
    record Call(URI url, String method, Map<String, String> headers, String body, boolean jsonBody,
                Duration timeout) {

        static Call parse(String payloadJson) throws PermanentJobException {
            JsonNode p;
            try {
                p = Json.EXACT.readTree(payloadJson); // the body's numbers go out as submitted
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
                // the reason only: the input (which may carry a token) is not repeated
                throw new PermanentJobException("url: not a valid URL (" + e.getReason() + ")");
            }
            String scheme = url.getScheme() == null ? null : url.getScheme().toLowerCase(Locale.ROOT);
            if (!"http".equals(scheme) && !"https".equals(scheme)) {
                throw new PermanentJobException("url: scheme must be http or https, got "
                        + (scheme == null ? "none" : "'" + excerpt(url.getScheme()) + "'"));
            }
            if (url.getHost() == null && url.getRawAuthority() != null) {
                // java.net.URI parses no host out of a name with '_' or non-ASCII letters: say so, not "no host"
                throw new PermanentJobException("url: the host is not a valid host name (letters, digits, '-' and '.' "
                        + "only; no '_'; write an internationalized name in its xn-- form)");
            }
            if (url.getHost() == null || url.getHost().isEmpty()) {
                throw new PermanentJobException("url: no host (a server-based http(s) URL is required)");
            }
            if (url.getHost().contains("%")) {
                // an IPv6 zone id names an interface of whichever worker runs the job; it never resolves either, so
                // it was retried as a DNS failure on every attempt
                throw new PermanentJobException("url: an IPv6 zone id ('%' in the host) is not allowed");
            }
            if (url.getPort() == 0 || url.getPort() > 65535) {
                // java.net.URI takes any number; Jetty's failure on it would be retried as transient, on every attempt
                throw new PermanentJobException("url: the port must be from 1 to 65535, got " + url.getPort());
            }

            String method = "POST";
            JsonNode m = p.path("method");
            if (!m.isMissingNode() && !m.isNull()) {
                if (!m.isTextual() || !METHODS.contains(m.asText().toUpperCase(Locale.ROOT))) {
                    throw new PermanentJobException("method: must be one of GET, POST, PUT, PATCH, DELETE");
                }
                method = m.asText().toUpperCase(Locale.ROOT);
            }

            Map<String, String> headers = new LinkedHashMap<>();
            JsonNode h = p.path("headers");
            if (!h.isMissingNode() && !h.isNull()) {
                if (!h.isObject()) throw new PermanentJobException("headers: must be an object of strings");
                int index = 0;
                for (Iterator<Map.Entry<String, JsonNode>> it = h.fields(); it.hasNext(); index++) {
                    Map.Entry<String, JsonNode> e = it.next();
                    String name = e.getKey();
                    if (name.isBlank()) throw new PermanentJobException("headers: a header name is empty");
                    if (!TOKEN.matcher(name).matches()) {
                        // not echoed: a malformed name may be a whole "Name: secret" line
                        throw new PermanentJobException("headers: header name #" + (index + 1)
                                + " is not a valid name (letters, digits and !#$%&'*+-.^_`|~ only)");
                    }
                    if (!e.getValue().isTextual()) throw new PermanentJobException("headers." + name + ": must be a string");
                    String lower = name.toLowerCase(Locale.ROOT);
                    if (CLIENT_HEADERS.contains(lower)) {
                        throw new PermanentJobException("headers." + name + ": is set by the HTTP client and may not be given");
                    }
                    if (!validHeaderValue(e.getValue().asText())) {
                        throw new PermanentJobException("headers." + name + ": has an invalid value (line breaks and "
                                + "other control characters are not allowed)");
                    }
                    if (RESERVED.contains(lower)) continue; // ours win
                    headers.put(name, e.getValue().asText());
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
                            + ", got " + excerpt(t.toString()));
                }
                timeoutMs = t.asLong();
            }
            return new Call(url, method, Collections.unmodifiableMap(headers), body, json, Duration.ofMillis(timeoutMs));
        }

        /** The port the URL names, or its scheme's. */
        int port() {
            return port(url);
        }

        static int port(URI url) {
            if (url.getPort() >= 0) return url.getPort();
            return "https".equalsIgnoreCase(url.getScheme()) ? 443 : 80;
        }

        /** What is requested: the URL without user info (Jetty would send it in the Host header) or fragment. */
        URI target() {
            String query = url.getRawQuery() == null ? "" : "?" + url.getRawQuery();
            String path = url.getRawPath() == null || url.getRawPath().isEmpty() ? "/" : url.getRawPath();
            String port = url.getPort() < 0 ? "" : ":" + url.getPort();
            return URI.create(url.getScheme().toLowerCase(Locale.ROOT) + "://" + url.getHost() + port + path + query);
        }

        /** The URL for messages ({@link #redactUrl}). */
        String safeUrl() {
            return redactUrl(url.toString());
        }

        /**
         * {@code message} with every payload header value (and the credentials part of one that reads
         * {@code <scheme> <credentials>}, like {@code Bearer ...}) and every secret-looking query value of the URL replaced
         * (a receiver may echo one back, the query often in a relative form like Express's "Cannot POST
         * /hook?token=..." that {@link #redactUrlsIn} does not see) and URLs in it redacted. Values shorter than 4
         * characters are left: they cannot be secrets, and would mangle the text.
         */
        String scrub(String message) {
            if (message == null) return "";
            String out = redactUrlsIn(message);
            Set<String> secrets = new java.util.TreeSet<>((a, b) -> a.length() != b.length()
                    ? b.length() - a.length() : a.compareTo(b)); // longest first: a secret inside another goes with it
            for (String value : headers.values()) {
                secrets.add(value.trim());
                // "Bearer sk_live_..." : a receiver saying "invalid token sk_live_..." echoes the credentials alone
                Matcher credentials = SCHEME_AND_CREDENTIALS.matcher(value.trim());
                if (credentials.matches()) secrets.add(credentials.group(1));
            }
            if (url.getRawQuery() != null) {
                for (String pair : url.getRawQuery().split("&")) {
                    int eq = pair.indexOf('=');
                    if (eq < 0 || !SECRET_PARAM.matcher(decoded(pair.substring(0, eq))).find()) continue;
                    secrets.add(pair.substring(eq + 1));
                    secrets.add(decoded(pair.substring(eq + 1)));
                }
            }
            for (String v : secrets) {
                if (v.length() >= 4) out = out.replace(v, REDACTED);
            }
            return out;
        }
    }

    /** A query component URL-decoded, or as is when it does not decode. */
    private static String decoded(String raw) {
        try {
            return java.net.URLDecoder.decode(raw, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return raw;
        }
    }

    /** Field values: visible ASCII, Latin-1 text, spaces and tabs; no CR, LF, NUL or other controls. */
    static boolean validHeaderValue(String v) {
        for (int i = 0; i < v.length(); i++) {
            char c = v.charAt(i);
            if (c == '\t') continue;
            if (c < 0x20 || c == 0x7f || c > 0xff) return false;
        }
        return true;
    }

    // -------------------------------------------------------------------------------------------- destination

    /**
     * Where the request may go: resolves the host once (an IP literal is not looked up) within the time left
     * before {@code deadlineNanos}, and keeps the addresses the tenant's allow list permits. Refuses
     * (permanently) a destination no entry allows, without a lookup when no entry could; a DNS failure or
     * timeout is transient.
     */
    Vetted checkDestination(String tenantId, URI url, long deadlineNanos)
            throws PermanentJobException, RetryableJobException, InterruptedException {
        String host = WebhookAllowList.normalizeHost(url.getHost());
        int port = Call.port(url);
        WebhookAllowList allow;
        try {
            allow = WebhookAllowList.of(allowListForTenant.apply(tenantId));
        } catch (RuntimeException e) {
            // the load's own text (jOOQ's SQL, the driver's "Connection to host:port refused", the pool's name)
            // would go into the tenant's last_error as the exception's: the operator gets it in the log instead
            log.warn("cannot read the webhook_allow list of tenant '{}'", tenantId, e);
            throw new RetryableJobException("cannot read the webhook_allow list of tenant '" + tenantId
                    + "' (a platform error, logged; the job is retried)", null);
        }
        String shown = host.contains(":") ? "[" + host + "]:" + port : host + ":" + port;
        if (!allow.mayAllow(host, port)) {
            String hint = port == 80 || port == 443 || AddressRanges.literal(host) != null ? ""
                    : " (an entry without a port allows 80 and 443 only)";
            throw new PermanentJobException("refused: " + shown + " is not on the webhook_allow list of tenant '"
                    + tenantId + "'" + hint);
        }
        InetAddress literal = AddressRanges.literal(host);
        InetAddress[] answer = literal != null ? new InetAddress[]{literal} : lookup(tenantId, host, deadlineNanos);
        Set<InetAddress> vetted = new LinkedHashSet<>();
        String firstRefusal = null;
        for (InetAddress a : answer) {
            String refusal = allow.refusal(host, port, a);
            if (refusal == null) vetted.add(a);
            else if (firstRefusal == null) firstRefusal = refusal;
        }
        if (vetted.isEmpty()) {
            throw new PermanentJobException("refused: " + shown + ": " + firstRefusal);
        }
        return new Vetted(tenantId, vetted);
    }

    private InetAddress[] lookup(String tenantId, String host, long deadlineNanos)
            throws RetryableJobException, InterruptedException {
        long left = deadlineNanos - System.nanoTime();
        if (left <= 0) throw new RetryableJobException("timed out before the DNS lookup of '" + host + "'", null);
        // counted per key (merge, computeIfPresent) and the entry removed at 0: a map of every tenant that ever
        // looked a name up would grow with the tenants
        if (lookupsInFlight.merge(tenantId, 1, Integer::sum) > MAX_LOOKUPS_PER_TENANT) {
            uncountLookup(tenantId);
            throw new RetryableJobException("DNS lookup of '" + host + "' not started: " + MAX_LOOKUPS_PER_TENANT
                    + " lookups of this tenant's hosts are still running (its DNS answers slowly)", null);
        }
        // counted until the lookup ends, or until it is cancelled before it started (then it never runs)
        AtomicBoolean counted = new AtomicBoolean(true);
        AtomicBoolean started = new AtomicBoolean();
        Runnable uncount = () -> {
            if (counted.compareAndSet(true, false)) uncountLookup(tenantId);
        };
        Future<InetAddress[]> f;
        try {
            f = lookups.submit(() -> {
                started.set(true);
                try {
                    return resolver.resolve(host);
                } finally {
                    uncount.run();
                }
            });
        } catch (RuntimeException e) {
            uncount.run(); // not started (the handler is closing)
            throw e;
        }
        try {
            InetAddress[] a = f.get(left, TimeUnit.NANOSECONDS);
            if (a == null || a.length == 0) throw new RetryableJobException("host '" + host + "' resolved to no address", null);
            return a;
        } catch (TimeoutException e) {
            cancel(f, started, uncount);
            throw new RetryableJobException("DNS lookup of '" + host + "' timed out (the job's timeout_ms ran out)", null);
        } catch (InterruptedException e) {
            cancel(f, started, uncount);
            throw e;
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            String why = cause instanceof UnknownHostException ? "" : " (" + cause.getClass().getSimpleName() + ")";
            throw new RetryableJobException("cannot resolve host '" + host + "'" + why, null);
        }
    }

    /** One lookup of the tenant's fewer in flight; at none, its entry goes. */
    private void uncountLookup(String tenantId) {
        lookupsInFlight.computeIfPresent(tenantId, (t, n) -> n <= 1 ? null : n - 1);
    }

    /** Cancels a lookup; one that had not started never will, so it is uncounted here (a running one uncounts itself). */
    private static void cancel(Future<?> lookup, AtomicBoolean started, Runnable uncount) {
        lookup.cancel(true);
        if (!started.get()) uncount.run();
    }

    /**
     * A request's vetted addresses, carried as its Jetty origin tag: equal tags share pooled connections, so a
     * connection is reused only by the same tenant for the same vetted answer. Set equality, so the order in
     * which DNS lists the same addresses does not split the pool.
     */
    record Vetted(String tenant, Set<InetAddress> addresses) {
        Vetted {
            addresses = Collections.unmodifiableSet(new LinkedHashSet<>(addresses));
        }

        List<InetSocketAddress> socketAddresses(String host, int port) {
            String name = WebhookAllowList.normalizeHost(host);
            boolean literal = AddressRanges.literal(name) != null;
            List<InetSocketAddress> out = new ArrayList<>();
            for (InetAddress a : addresses) {
                try {
                    // carrying the host name keeps TLS SNI and the certificate check on the name; no lookup happens
                    out.add(new InetSocketAddress(literal ? a : InetAddress.getByAddress(name, a.getAddress()), port));
                } catch (UnknownHostException e) {
                    throw new IllegalStateException(e); // only for a malformed address length
                }
            }
            return out;
        }
    }

    /**
     * The client's only way from a host name to an address: the request's {@link Vetted} addresses. A request
     * without them fails instead of being resolved here, so nothing unvetted is ever connected to.
     */
    static final class VettedAddresses implements SocketAddressResolver {
        @Override
        public void resolve(String host, int port, Map<String, Object> context, Promise<List<InetSocketAddress>> promise) {
            Object destination = context.get(Destination.CONTEXT_KEY);
            Object tag = destination instanceof Destination d ? d.getOrigin().getTag() : null;
            if (tag instanceof Vetted vetted) {
                promise.succeeded(vetted.socketAddresses(host, port));
            } else {
                promise.failed(new UnknownHostException("no vetted address for this request; not resolving it"));
            }
        }
    }

    // -------------------------------------------------------------------------------------------- sending

    /** What came back: the status, the two headers that matter, and the start of the body. */
    record Exchange(int status, String location, String retryAfter, String body) {}

    private Exchange send(JobContext job, Call call, Vetted vetted, long deadlineNanos)
            throws PermanentJobException, RetryableJobException, InterruptedException {
        String what = call.method() + " " + call.safeUrl();
        long leftMs = TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime());
        if (leftMs <= 0) throw timedOut(what, call);
        Request request;
        try {
            request = client.newRequest(call.target());
        } catch (IllegalArgumentException e) {
            throw new PermanentJobException("url: not accepted by the HTTP client"); // its message would repeat the URL
        }
        boolean keepAlive = calledRecently(job.tenantId(), call.target().getScheme() + "://" + call.target().getHost()
                + ":" + call.port() + vetted.addresses());
        request.method(call.method())
                .tag(vetted)
                .followRedirects(false)
                .timeout(leftMs, TimeUnit.MILLISECONDS)
                .headers(h -> {
                    call.headers().forEach(h::put);
                    if (!keepAlive) h.put(HttpHeader.CONNECTION, "close");
                    h.put(IDEMPOTENCY_KEY, job.idempotencyKey());
                    h.put(JOB_ID, Long.toString(job.jobId()));
                    h.put(ATTEMPT, Integer.toString(job.attempt()));
                });
        if (call.body() != null) {
            // a payload Content-Type header wins over this one
            request.body(new StringRequestContent(call.jsonBody() ? "application/json" : "text/plain; charset=utf-8",
                    call.body(), StandardCharsets.UTF_8));
        }
        Excerpt excerpt = new Excerpt(EXCERPT_BYTES);
        request.onResponseHeaders(excerpt::onHeaders).onResponseContent(excerpt::onContent).send(excerpt::onComplete);
        try {
            // the request's own timeout fires first; this only guards against a listener that never completes
            return excerpt.result.get(leftMs + 1_000, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            request.abort(e);
            throw timedOut(what, call);
        } catch (InterruptedException e) {
            // the worker stopped the attempt (cancel, time limit, lost lease): abort the exchange, which closes
            // its connection, so the receiver sees the request end rather than a silent client
            request.abort(e);
            throw e;
        } catch (ExecutionException e) {
            throw failed(what, call, e.getCause());
        }
    }

    /** Whether the tenant called this destination among its last {@value #KEPT_ORIGINS_PER_TENANT}; records the call. */
    private boolean calledRecently(String tenantId, String origin) {
        synchronized (recentOrigins) { // a few map operations beside an HTTP exchange
            return recentOrigins.computeIfAbsent(tenantId, t -> lru(KEPT_ORIGINS_PER_TENANT)).put(origin, Boolean.TRUE) != null;
        }
    }

    /** A map in access order that drops its least recently used entry past {@code max}. */
    static <V> LinkedHashMap<String, V> lru(int max) {
        return new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, V> eldest) {
                return size() > max;
            }
        };
    }

    private static RetryableJobException timedOut(String what, Call call) {
        return new RetryableJobException(what + ": timed out after " + call.timeout().toMillis() + " ms", null);
    }

    /** A transport failure in words: the kind of failure, never the client's internals (addresses, pids, object dumps). */
    private static RetryableJobException failed(String what, Call call, Throwable cause) {
        if (cause instanceof TimeoutException) return timedOut(what, call);
        if (cause instanceof SocketTimeoutException) return new RetryableJobException(what + ": connect timed out", null);
        if (cause instanceof ConnectException) {
            return new RetryableJobException(what + ": connection failed" + clean(cause.getMessage()), null);
        }
        if (cause instanceof SSLException) {
            return new RetryableJobException(what + ": TLS failed" + clean(cause.getMessage()), null);
        }
        if (cause instanceof HttpResponseException && cause.getCause() instanceof HttpException bad) {
            // the parser's reason ("Response Header Bytes Too Large", ...); the outer message dumps the connection
            return new RetryableJobException(what + ": invalid response" + clean(bad.getReason()), null);
        }
        return new RetryableJobException(what + ": " + cause.getClass().getSimpleName() + clean(cause.getMessage()), null);
    }

    /** " (message)" when the message is short plain text; "" for none, or for one that dumps client internals. */
    private static String clean(String message) {
        if (message == null || message.isBlank()) return "";
        if (message.contains("{") || message.contains("@")) return "";
        return " (" + excerpt(redactUrlsIn(message)) + ")";
    }

    private void judge(Call call, Exchange response) throws PermanentJobException, RetryableJobException,
            SnoozeJobException {
        int status = response.status();
        if (status >= 200 && status < 300) return;
        String what = "HTTP " + status + " from " + call.method() + " " + call.safeUrl();
        if (status >= 300 && status < 400) {
            String location = response.location() == null ? "(none)" : excerpt(redactUrl(response.location()));
            throw new PermanentJobException(what + ": redirect to " + location
                    + " not followed (redirects are never followed; send the job to the final URL)");
        }
        String body = excerpt(response.body());
        String withBody = body.isEmpty() ? what : what + ": " + body;
        if (status == 429 || status == 503) {
            Duration retryAfter = response.retryAfter() == null ? null : parseRetryAfter(response.retryAfter(), clock.get());
            if (retryAfter == null) throw new RetryableJobException(withBody, null);
            if (retryAfter.isZero()) {
                // "now" (0, or a date already past) is no delay to honour: a snooze of zero would call the busy
                // receiver straight back, FAIRQ_MAX_SNOOZES times in a row; the type's backoff spaces it out
                throw new RetryableJobException(withBody + " (Retry-After " + response.retryAfter().trim()
                        + " is now or past: retried with backoff)", null);
            }
            // the receiver named when to come back: a snooze, not a failure (no attempt used)
            throw new SnoozeJobException(withBody + " (Retry-After " + retryAfter.toSeconds() + " s)", retryAfter);
        }
        if (status == 408 || status >= 500 || status < 200) throw new RetryableJobException(withBody, null);
        throw new PermanentJobException(withBody);
    }

    // -------------------------------------------------------------------------------------------- redaction

    /**
     * A URL fit for an error message: user info replaced, fragment dropped, and the value of every query
     * parameter whose name looks like a secret (token, key, secret, sig, password, auth, credential, session,
     * code, ...) replaced by {@value #REDACTED}. Works on relative URLs (a Location header) too.
     */
    static String redactUrl(String raw) {
        URI u;
        try {
            u = new URI(raw.trim());
        } catch (URISyntaxException e) {
            return "(a URL that does not parse)";
        }
        StringBuilder sb = new StringBuilder();
        if (u.getScheme() != null) sb.append(u.getScheme()).append(':');
        if (u.isOpaque()) return sb.append("(opaque)").toString();
        String authority = u.getRawAuthority();
        if (authority != null) {
            sb.append("//");
            int at = authority.lastIndexOf('@');
            if (at >= 0) sb.append(REDACTED).append('@');
            sb.append(authority.substring(at + 1));
        }
        if (u.getRawPath() != null) sb.append(u.getRawPath());
        if (u.getRawQuery() != null) sb.append('?').append(redactQuery(u.getRawQuery()));
        return sb.toString();
    }

    private static String redactQuery(String rawQuery) {
        StringBuilder sb = new StringBuilder();
        for (String pair : rawQuery.split("&", -1)) {
            if (!sb.isEmpty()) sb.append('&');
            int eq = pair.indexOf('=');
            String name = eq < 0 ? pair : pair.substring(0, eq);
            if (eq >= 0 && SECRET_PARAM.matcher(decoded(name)).find()) sb.append(name).append('=').append(REDACTED);
            else sb.append(pair);
        }
        return sb.toString();
    }

    /** Every absolute URL inside free text, redacted. */
    static String redactUrlsIn(String text) {
        Matcher m = URL_IN_TEXT.matcher(text);
        StringBuilder sb = new StringBuilder();
        while (m.find()) m.appendReplacement(sb, Matcher.quoteReplacement(redactUrl(m.group())));
        m.appendTail(sb);
        return sb.toString();
    }

    // -------------------------------------------------------------------------------------------- response

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

    /**
     * One line of at most {@value #EXCERPT_CHARS} characters. Control characters go too: a receiver's NUL cannot be
     * stored in {@code last_error} (the worker then records the attempt without any text, the status lost), and
     * its terminal escapes would reach whoever reads the error in a terminal.
     */
    static String excerpt(String s) {
        if (s == null) return "";
        String oneLine = s.replaceAll("[\\s\\p{Cc}]+", " ").trim();
        return oneLine.length() <= EXCERPT_CHARS ? oneLine : oneLine.substring(0, EXCERPT_CHARS) + "...";
    }

    /** Collects at most {@code limit} bytes of a body, then completes and drops the rest of the response. */
    static final class Excerpt {
        private final int limit;
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final CompletableFuture<Exchange> result = new CompletableFuture<>();

        Excerpt(int limit) {
            this.limit = limit;
        }

        /**
         * A 2xx is the receiver's verdict and needs no body: the outcome is known at the headers, so a receiver that
         * accepts and then sends its body slowly (or streams one without end) does not turn a delivery into a
         * timeout that is delivered again. The body is still read (up to the limit) in the background.
         */
        synchronized void onHeaders(Response response) {
            if (response.getStatus() >= 200 && response.getStatus() < 300) complete(response);
        }

        synchronized void onContent(Response response, ByteBuffer content) {
            if (bytes.size() >= limit) return;
            int n = Math.min(content.remaining(), limit - bytes.size());
            byte[] chunk = new byte[n];
            content.get(chunk);
            bytes.write(chunk, 0, n);
            if (bytes.size() >= limit) {
                complete(response); // a no-op for a 2xx, complete since its headers
                response.abort(new IOException("excerpt read; the rest of the body is not needed"));
            }
        }

        synchronized void onComplete(Result r) {
            if (r.isFailed()) result.completeExceptionally(r.getFailure());
            else complete(r.getResponse());
        }

        private void complete(Response response) {
            result.complete(new Exchange(response.getStatus(), response.getHeaders().get(HttpHeader.LOCATION),
                    response.getHeaders().get(HttpHeader.RETRY_AFTER), bytes.toString(StandardCharsets.UTF_8)));
        }
    }
}

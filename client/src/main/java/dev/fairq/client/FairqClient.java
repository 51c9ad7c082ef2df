package dev.fairq.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;
import com.fasterxml.jackson.datatype.jsr310.JavaTimeModule;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.StringJoiner;

/**
 * A client for the fairq API, for tenants (a key, {@code fqk_...}) and admins (the admin token):
 * <pre>{@code
 * FairqClient fairq = FairqClient.builder("http://localhost:8080").token(key).retries(RetryPolicy.attempts(5)).build();
 * Model.Submitted s = fairq.submit(NewJob.of("send-email", payload).jobKey("welcome-42"));
 * for (Model.Job j : fairq.jobs(JobFilter.status("dead"))) ...
 * }</pre>
 * Errors are {@link FairqException}s by kind ({@code QueueFullException} carries Retry-After,
 * {@code ValidationException} the fields). Thread-safe; one instance per token.
 */
public final class FairqClient {
    private final URI base;
    private final String token;
    private final HttpClient http;
    private final RetryPolicy retries;
    private final Duration timeout;
    private final ObjectMapper mapper = mapper();

    private FairqClient(Builder b) {
        String u = b.url.endsWith("/") ? b.url.substring(0, b.url.length() - 1) : b.url;
        this.base = URI.create(u);
        if (base.getScheme() == null || base.getHost() == null
                || !(base.getScheme().equalsIgnoreCase("http") || base.getScheme().equalsIgnoreCase("https"))) {
            throw new IllegalArgumentException("not an http(s) URL: " + b.url);
        }
        // a key read from a file ends in a newline (the command line strips it too); one with a control character
        // inside would fail in java.net.http with a message that holds the whole key: refused here without it
        this.token = b.token == null ? null : b.token.strip();
        if (token != null && !sendable(token)) {
            throw new IllegalArgumentException("the token holds a control character (a line break?): it cannot be sent");
        }
        this.retries = b.retries;
        this.timeout = b.timeout;
        this.http = HttpClient.newBuilder().connectTimeout(b.timeout).version(HttpClient.Version.HTTP_1_1).build();
    }

    public static Builder builder(String url) {
        return new Builder(url);
    }

    public static final class Builder {
        private final String url;
        private String token;
        private RetryPolicy retries = RetryPolicy.NONE;
        private Duration timeout = Duration.ofSeconds(30);

        private Builder(String url) {
            this.url = Objects.requireNonNull(url, "url");
        }

        /** The bearer token: a tenant key, or the admin token. */
        public Builder token(String t) { this.token = t; return this; }

        public Builder retries(RetryPolicy r) { this.retries = Objects.requireNonNull(r); return this; }

        /** The bound of each try, connecting and the whole answer included (default 30 s). */
        public Builder timeout(Duration t) { this.timeout = t; return this; }

        public FairqClient build() { return new FairqClient(this); }
    }

    /**
     * The mapper the client reads and writes JSON with (snake_case, RFC 3339 times, unknown fields ignored). Numbers
     * in trees (a job's payload) are read as written: the server keeps 0.12345678901234567890123 and 1.50, and as
     * doubles a job read back had lost digits (and resubmitting it with its job_key was a 409, not a replay).
     */
    public static ObjectMapper mapper() {
        return new ObjectMapper().registerModule(new JavaTimeModule())
                .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
                .disable(SerializationFeature.WRITE_DATES_AS_TIMESTAMPS)
                .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
                .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
                .configure(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES, false);
    }

    // ---- tenants' endpoints -------------------------------------------------------------------------------

    /** Submits one job: created, or (same job_key, same request) the earlier job with {@code idempotentReplay}. */
    public Model.Submitted submit(NewJob job) {
        Answer a = send("POST", "/v1/jobs", job, job.jobKey() != null);
        return new Model.Submitted(read(a.body(), Model.Job.class), a.status() == 200);
    }

    /** Submits up to 1000 jobs, all or nothing; the answer is in the request's order. */
    public List<Model.Submitted> submitBatch(List<NewJob> jobs) {
        boolean keyed = !jobs.isEmpty() && jobs.stream().allMatch(j -> j.jobKey() != null);
        return read(send("POST", "/v1/jobs/batch", Map.of("jobs", jobs), keyed).body(), Model.Batch.class).jobs();
    }

    public Model.Job get(long id) {
        return read(get("/v1/jobs/" + id).body(), Model.Job.class);
    }

    /** One page; {@code after} is the previous page's {@code next} (null for the first), {@code limit} 1-500 or null. */
    public Model.JobPage listPage(JobFilter filter, String after, Integer limit) {
        return read(get("/v1/jobs" + filter.query(after, limit)).body(), Model.JobPage.class);
    }

    /** Every job that matches, newest first, fetched a page at a time as the iteration goes. */
    public Iterable<Model.Job> jobs(JobFilter filter) {
        return () -> new Pages(filter, "/v1/jobs");
    }

    public Model.Job cancel(long id) {
        return jobAction("/v1/jobs/" + id + "/cancel");
    }

    /** A dead or cancelled job runs again, attempts reset. */
    public Model.Job retry(long id) {
        return jobAction("/v1/jobs/" + id + "/retry");
    }

    public Model.Explanation explain(long id) {
        return read(get("/v1/jobs/" + id + "/explain").body(), Model.Explanation.class);
    }

    public Model.Stats stats() {
        return read(get("/v1/stats").body(), Model.Stats.class);
    }

    /** One page of the caller's schedules by name after {@code after} (null: the first), {@code limit} 1-500 or null. */
    public Model.Schedules schedules(String after, Integer limit) {
        return read(get("/v1/schedules" + pageQuery(after, limit)).body(), Model.Schedules.class);
    }

    public Model.Schedule schedule(String name) {
        return read(get("/v1/schedules/" + path(name)).body(), Model.Schedule.class);
    }

    /**
     * Creates or replaces a schedule (fields left out take their defaults). {@code definition}: API name -> value,
     * e.g. {@code Map.of("cron", "30 2 * * *", "time_zone", "Europe/Berlin", "job", Map.of("type", "report"))}.
     */
    public Model.Schedule putSchedule(String name, Map<String, ?> definition) {
        return read(send("PUT", "/v1/schedules/" + path(name), definition, true).body(), Model.Schedule.class);
    }

    /** Changes only the fields given (a JSON merge patch: {@code Map.of("paused", true)}). */
    public Model.Schedule patchSchedule(String name, Map<String, ?> fields) {
        return read(send("PATCH", "/v1/schedules/" + path(name), fields, false).body(), Model.Schedule.class);
    }

    public void deleteSchedule(String name) {
        send("DELETE", "/v1/schedules/" + path(name), null, true);
    }

    /** Runs the schedule's job now, besides its fires: the job, or (triggered again within the second) the same one. */
    public Model.Submitted triggerSchedule(String name) {
        Answer a = send("POST", "/v1/schedules/" + path(name) + "/trigger", null, false);
        return new Model.Submitted(read(a.body(), Model.Job.class), a.status() == 200);
    }

    // ---- admin's endpoints --------------------------------------------------------------------------------

    /** Any tenant's schedules ({@code tenant} null: all), a page after {@code after} (a previous page's next). */
    public Model.Schedules adminSchedules(String tenant, String after, Integer limit) {
        String q = pageQuery(after, limit);
        if (tenant != null) q += (q.isEmpty() ? "?" : "&") + "tenant=" + java.net.URLEncoder.encode(tenant, java.nio.charset.StandardCharsets.UTF_8);
        return read(get("/v1/admin/schedules" + q).body(), Model.Schedules.class);
    }

    public Model.Schedule adminSchedule(String tenant, String name) {
        return read(get("/v1/admin/schedules/" + path(tenant) + "/" + path(name)).body(), Model.Schedule.class);
    }

    /** Every tenant, by id, read a page (1,000) at a time: with many tenants, prefer {@link #tenants(String, int)}. */
    public List<Model.Tenant> tenants() {
        List<Model.Tenant> all = new java.util.ArrayList<>();
        String after = null;
        do {
            Model.Tenants page = tenants(after, 1_000);
            all.addAll(page.tenants());
            after = page.next();
        } while (after != null);
        return all;
    }

    /** One page of tenants by id after {@code after} (null: the first); its {@code next} is the next page's after. */
    public Model.Tenants tenants(String after, int limit) {
        return read(get("/v1/admin/tenants" + pageQuery(after, limit)).body(), Model.Tenants.class);
    }

    public Model.Tenant tenant(String id) {
        return read(get("/v1/admin/tenants/" + path(id)).body(), Model.Tenant.class);
    }

    /** Creates or replaces a tenant: limits left out take the defaults. {@code limits}: API name -> value. */
    public Model.Tenant putTenant(String id, Map<String, ?> limits) {
        return read(send("PUT", "/v1/admin/tenants/" + path(id), limits, true).body(), Model.Tenant.class);
    }

    /** Changes only the limits given. */
    public Model.Tenant patchTenant(String id, Map<String, ?> limits) {
        return read(send("PATCH", "/v1/admin/tenants/" + path(id), limits, false).body(), Model.Tenant.class);
    }

    public Model.NewKey createKey(String tenant) {
        return read(send("POST", "/v1/admin/tenants/" + path(tenant) + "/keys", null, false).body(), Model.NewKey.class);
    }

    public List<Model.ApiKey> keys(String tenant) {
        return read(get("/v1/admin/tenants/" + path(tenant) + "/keys").body(), Model.Keys.class).keys();
    }

    public void revokeKey(String tenant, String keyId) {
        send("DELETE", "/v1/admin/tenants/" + path(tenant) + "/keys/" + path(keyId), null, true);
    }

    /** A new named admin token (shown once in the answer); the audit log names it as the actor of its changes. */
    public Model.NewAdminToken createAdminToken(String name) {
        return read(send("POST", "/v1/admin/tokens", Map.of("name", name), false).body(), Model.NewAdminToken.class);
    }

    /** Every admin token ever made (never the tokens themselves). */
    public List<Model.AdminToken> adminTokens() {
        return read(get("/v1/admin/tokens").body(), Model.AdminTokens.class).tokens();
    }

    public void revokeAdminToken(String id) {
        send("DELETE", "/v1/admin/tokens/" + path(id), null, true);
    }

    /** Any tenant's job. */
    public Model.Job adminJob(long id) {
        return read(get("/v1/admin/jobs/" + id).body(), Model.Job.class);
    }

    /** Any tenant's jobs ({@link JobFilter#tenant} narrows them). */
    public Iterable<Model.Job> adminJobs(JobFilter filter) {
        return () -> new Pages(filter, "/v1/admin/jobs");
    }

    /** Any tenant's job, as {@link #cancel}: 200 and cancelled, 202 and running while it stops, or unchanged. */
    public Model.Job adminCancel(long id) {
        return jobAction("/v1/admin/jobs/" + id + "/cancel");
    }

    public Model.Job adminRetry(long id) {
        return jobAction("/v1/admin/jobs/" + id + "/retry");
    }

    /** A dead job becomes cancelled (its ordering key moves on). */
    public Model.Job discard(long id) {
        return jobAction("/v1/admin/jobs/" + id + "/discard");
    }

    private static String pageQuery(String after, Integer limit) {
        List<String> q = new java.util.ArrayList<>();
        if (limit != null) q.add("limit=" + limit);
        if (after != null) q.add("after=" + java.net.URLEncoder.encode(after, java.nio.charset.StandardCharsets.UTF_8));
        return q.isEmpty() ? "" : "?" + String.join("&", q);
    }

    /** A POST of a job action (cancel, retry, discard), not sent again when its answer is lost: the job after it. */
    private Model.Job jobAction(String path) {
        return read(send("POST", path, null, false).body(), Model.Job.class);
    }

    // ---- any endpoint -------------------------------------------------------------------------------------

    /** An answer: the status, the headers that matter and the JSON body (null when empty). */
    public record Answer(int status, Map<String, String> headers, JsonNode body) {}

    /**
     * Any endpoint, with the retries and errors of the typed methods: the answer as the server sent it (what
     * the command line's {@code --json} prints). {@code safeToRepeat}: whether the request may be sent again
     * when its answer is lost (GET, PUT and DELETE always are).
     */
    public Answer send(String method, String path, Object body, boolean safeToRepeat) {
        return send(method, path, body, safeToRepeat, Map.of());
    }

    /**
     * {@link #send(String, String, Object, boolean)} with request headers of the caller's, e.g.
     * {@code If-None-Match: *} to create only (a 412, {@link FairqException.PreconditionFailedException}, if it exists).
     */
    public Answer send(String method, String path, Object body, boolean safeToRepeat, Map<String, String> headers) {
        boolean idempotent = safeToRepeat || method.equals("GET") || method.equals("PUT") || method.equals("DELETE");
        String json = null;
        if (body != null) {
            try {
                json = body instanceof JsonNode n ? n.toString() : mapper.writeValueAsString(body);
            } catch (JsonProcessingException e) {
                throw new IllegalArgumentException("the body cannot be written as JSON", e);
            }
        }
        Duration backoff = min(retries.backoff(), retries.maxWait());
        for (int attempt = 1; ; attempt++) {
            boolean last = attempt >= retries.maxAttempts();
            Duration wait;
            try {
                Answer a = exchange(method, path, json, headers);
                if (a.status() < 300) return a; // a redirect is not followed: an error naming its target
                FairqException e = error(a);
                if (last) throw e;
                if (e instanceof FairqException.QueueFullException q) wait = q.retryAfter();
                else if (idempotent && (a.status() == 502 || a.status() == 503 || a.status() == 504)) wait = retryAfter(a, backoff);
                else throw e;
                if (wait.compareTo(retries.maxWait()) > 0) throw e; // the server's own wait: not slept through here
            } catch (IOException e) {
                FairqException x = new FairqException.ConnectionException("cannot reach fairq at " + base + ": " + why(e), e);
                if (last || !idempotent) throw x;
                wait = backoff;
            }
            backoff = min(backoff.multipliedBy(2), retries.maxWait());
            try {
                retries.sleeper().sleep(wait);
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                throw new FairqException.ConnectionException("interrupted while waiting to retry", ie);
            }
        }
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private String why(IOException e) {
        if (e instanceof java.net.http.HttpTimeoutException) return "timed out";
        // java.net.http reports a name that does not resolve as a ConnectException too
        if (e instanceof java.net.ConnectException && e.getCause() instanceof java.nio.channels.UnresolvedAddressException) {
            return "unknown host " + base.getHost();
        }
        if (e instanceof java.net.ConnectException) return "connection refused";
        if (e.getMessage() != null) return e.getMessage();
        return "the connection failed";
    }

    private Answer get(String path) {
        return send("GET", path, null, true);
    }

    private Answer exchange(String method, String path, String json, Map<String, String> extra) throws IOException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(timeout)
                .header("Accept", "application/json")
                .method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        extra.forEach(b::header);
        if (json != null) b.header("Content-Type", "application/json");
        if (token != null) b.header("Authorization", "Bearer " + token);
        HttpResponse<String> r;
        java.util.concurrent.CompletableFuture<HttpResponse<String>> answer = null;
        try {
            // the request's timeout ends at the headers: a proxy that stalls in the body held a send() until it hung
            // up, so the whole exchange waits for the timeout at most (cancelling it closes the connection)
            answer = http.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString());
            r = answer.get(timeout.toNanos(), java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            answer.cancel(true);
            throw new java.net.http.HttpTimeoutException("the answer took longer than " + timeout);
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof IOException io) throw io;
            throw new IOException(e.getCause() == null ? "the exchange failed" : e.getCause().getMessage(), e.getCause());
        } catch (InterruptedException e) {
            if (answer != null) answer.cancel(true);
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } catch (IllegalArgumentException e) {
            throw new IOException(e.getMessage(), e);
        }
        Map<String, String> headers = new LinkedHashMap<>();
        for (String h : List.of("Location", "Retry-After", "Idempotent-Replay", "WWW-Authenticate")) {
            r.headers().firstValue(h).ifPresent(v -> headers.put(h, v));
        }
        JsonNode body = null;
        if (!r.body().isEmpty()) {
            try {
                body = mapper.readTree(r.body());
            } catch (JsonProcessingException e) {
                // a success that is not JSON is not fairq's (a captive portal's sign-in page): read as an answer, it
                // had become a job with id 0 and every field null
                if (r.statusCode() < 300) {
                    throw new FairqException(r.statusCode(), "unexpected answer from fairq (HTTP " + r.statusCode()
                            + ", not JSON): " + gist(r.body()), List.of(), e);
                }
                // not JSON (a proxy's page, a framework's plain answer): its gist as the message, one line
                body = mapper.getNodeFactory().objectNode().put("error", gist(r.body()));
            }
        }
        return new Answer(r.statusCode(), headers, body);
    }

    /** An HTML page's title, or a text's first line, at most 200 characters: a message, not a page. */
    static String gist(String text) {
        java.util.regex.Matcher title = java.util.regex.Pattern.compile("(?is)<title>(.*?)</title>").matcher(text);
        String line = title.find() ? title.group(1) : text.strip().lines().findFirst().orElse("");
        line = line.replaceAll("<[^>]*>", "").replaceAll("\\s+", " ").strip();
        return line.length() > 200 ? line.substring(0, 200) + "..." : line;
    }

    private FairqException error(Answer a) {
        Model.ErrorBody e = null;
        if (a.body() != null && a.body().isObject()) {
            try {
                e = mapper.treeToValue(a.body(), Model.ErrorBody.class);
            } catch (JsonProcessingException ignored) {
                // an unexpected shape: the status line says enough
            }
        }
        // a redirect (http to https at a load balancer): where to, as a java.net.http client follows none
        String location = a.headers().get("Location");
        if (a.status() < 400 && location != null) {
            return FairqException.of(a.status(), "redirected to " + location + " (not followed: give the client that URL)",
                    List.of(), null);
        }
        String message = e != null && e.error() != null ? e.error()
                : a.body() != null && a.body().has("message") ? a.body().get("message").asText() : "HTTP " + a.status();
        return FairqException.of(a.status(), message, e == null ? List.of() : e.errors(), retryAfter(a, Duration.ofSeconds(1)));
    }

    /**
     * Retry-After in seconds (the form fairq sends) or an HTTP date (a proxy's: until then, 0 once past);
     * {@code otherwise} when missing or unreadable.
     */
    private static Duration retryAfter(Answer a, Duration otherwise) {
        String v = a.headers().get("Retry-After");
        if (v == null) return otherwise;
        try {
            return Duration.ofSeconds(Math.max(0, Long.parseLong(v.trim())));
        } catch (NumberFormatException e) {
            // not seconds: a date, else nothing to honour
        }
        try {
            java.time.Instant at = java.time.ZonedDateTime.parse(v.trim(), java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
            Duration left = Duration.between(java.time.Instant.now(), at);
            return left.isNegative() ? Duration.ZERO : left;
        } catch (java.time.format.DateTimeParseException e) {
            return otherwise;
        }
    }

    private <T> T read(JsonNode body, Class<T> type) {
        // an empty success where an answer is due (treeToValue would give null: a NullPointerException later)
        if (body == null) throw new FairqException(0, "unexpected answer from fairq: no body", List.of(), null);
        try {
            return mapper.treeToValue(body, type);
        } catch (JsonProcessingException e) {
            throw new FairqException(0, "unexpected answer from fairq: " + e.getOriginalMessage(), List.of(), e);
        }
    }

    /**
     * Whether a token, stripped of the whitespace around it (as the client strips it), can go in a header: no control
     * character inside. The command line asks first, to name its variable in the message.
     */
    public static boolean sendable(String token) {
        return token.strip().chars().noneMatch(ch -> ch < 0x20 || ch == 0x7f);
    }

    private static String path(String segment) {
        // nothing to send: "/v1/admin/tenants/" is the list of tenants, which tenant("") had read as a tenant
        if (segment.isEmpty()) throw new IllegalArgumentException("an empty id names nothing");
        return URLEncoder.encode(segment, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /** Which jobs to list. {@code JobFilter.all().status("dead").queue("emails")}. */
    public record JobFilter(String tenant, String status, String queue, String type, String orderingKey, Integer pageSize) {
        public static JobFilter all() { return new JobFilter(null, null, null, null, null, null); }

        public static JobFilter status(String s) { return all().withStatus(s); }

        public JobFilter withStatus(String s) { return new JobFilter(tenant, s, queue, type, orderingKey, pageSize); }

        public JobFilter queue(String q) { return new JobFilter(tenant, status, q, type, orderingKey, pageSize); }

        public JobFilter type(String t) { return new JobFilter(tenant, status, queue, t, orderingKey, pageSize); }

        public JobFilter orderingKey(String k) { return new JobFilter(tenant, status, queue, type, k, pageSize); }

        /** Admin listings only. */
        public JobFilter tenant(String t) { return new JobFilter(t, status, queue, type, orderingKey, pageSize); }

        /** Jobs per request while iterating (1-500; the server's default 50). */
        public JobFilter pageSize(Integer n) { return new JobFilter(tenant, status, queue, type, orderingKey, n); }

        /** The query string of one page: {@code ?status=dead&limit=100&after=...}, or "" when there is nothing to ask. */
        public String query(String after, Integer limit) {
            StringJoiner q = new StringJoiner("&", "?", "").setEmptyValue("");
            add(q, "tenant", tenant);
            add(q, "status", status);
            add(q, "queue", queue);
            add(q, "type", type);
            add(q, "ordering_key", orderingKey);
            add(q, "limit", limit != null ? limit.toString() : pageSize == null ? null : pageSize.toString());
            add(q, "after", after);
            return q.toString();
        }

        private static void add(StringJoiner q, String name, String value) {
            if (value != null) q.add(name + "=" + URLEncoder.encode(value, StandardCharsets.UTF_8));
        }
    }

    /** Fetches the next page when the current one is used up. */
    private final class Pages implements Iterator<Model.Job> {
        private final JobFilter filter;
        private final String path;
        private Iterator<Model.Job> page = List.<Model.Job>of().iterator();
        private String next;
        private boolean started;

        Pages(JobFilter filter, String path) {
            this.filter = filter;
            this.path = path;
        }

        @Override
        public boolean hasNext() {
            while (!page.hasNext() && (!started || next != null)) {
                Model.JobPage p = read(get(path + filter.query(next, null)).body(), Model.JobPage.class);
                started = true;
                next = p.next();
                page = p.jobs().iterator();
            }
            return page.hasNext();
        }

        @Override
        public Model.Job next() {
            if (!hasNext()) throw new NoSuchElementException();
            return page.next();
        }
    }
}

package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.dropwizard.core.cli.Cli;
import io.dropwizard.core.setup.Bootstrap;
import io.dropwizard.util.JarLocation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The command line (jobs, stats, tenants) against the running server, in this JVM through Dropwizard's own
 * Cli, as {@code java -jar fairq.jar} runs it (CommandLineIT runs the jar itself): the README's walk-through,
 * {@code --json} printing the API's answer, and one clear message without a stack trace for every error.
 */
class CommandLineTest extends AppTest {
    record Run(boolean ok, String out, String err) {
        JsonNode json() {
            try {
                return TestApp.JSON.readTree(out);
            } catch (Exception e) {
                throw new AssertionError("not one JSON document: " + out, e);
            }
        }
    }

    static Run run(String token, String... args) {
        Map<String, String> env = new HashMap<>();
        env.put("FAIRQ_URL", "http://localhost:" + app.support.getLocalPort());
        if (token != null) env.put("FAIRQ_TOKEN", token);
        return run(env, args);
    }

    static Run run(Map<String, String> env, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Bootstrap<FairqConfiguration> bootstrap = new Bootstrap<>(new FairqApplication());
        ClientCommands.addTo(bootstrap, env, new PrintStream(out, true, StandardCharsets.UTF_8));
        Cli cli = new Cli(new JarLocation(FairqApplication.class), bootstrap, out, err);
        Optional<Throwable> failed;
        try {
            failed = cli.run(args);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        Run r = new Run(failed.isEmpty(), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        assertFalse(r.err().contains("\tat ") || r.err().contains("Exception"), "no stack trace: " + r.err());
        return r;
    }

    static Run ok(String token, String... args) {
        Run r = run(token, args);
        assertTrue(r.ok(), String.join(" ", args) + " failed: " + r.err() + r.out());
        return r;
    }

    /**
     * A forwarding proxy to the application that runs {@code between} once, after the first PATCH it forwards is
     * answered 404 and before that answer reaches the command line: another admin's create staged exactly between
     * the command's PATCH and its PUT.
     */
    private static com.sun.net.httpserver.HttpServer createdAfterTheFirst404(Runnable between) throws Exception {
        java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder().version(java.net.http.HttpClient.Version.HTTP_1_1).build();
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        com.sun.net.httpserver.HttpServer s = com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", 0), 0);
        s.createContext("/", ex -> {
            try (ex) {
                byte[] body = ex.getRequestBody().readAllBytes();
                java.net.http.HttpRequest.Builder b = java.net.http.HttpRequest.newBuilder(
                                java.net.URI.create("http://127.0.0.1:" + app.support.getLocalPort() + ex.getRequestURI()))
                        .method(ex.getRequestMethod(), java.net.http.HttpRequest.BodyPublishers.ofByteArray(body));
                for (String h : List.of("Authorization", "Content-Type", "Accept", "If-None-Match")) {
                    String v = ex.getRequestHeaders().getFirst(h);
                    if (v != null) b.header(h, v);
                }
                java.net.http.HttpResponse<byte[]> r = http.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofByteArray());
                if (ex.getRequestMethod().equals("PATCH") && r.statusCode() == 404 && done.compareAndSet(false, true)) between.run();
                r.headers().firstValue("Content-Type").ifPresent(v -> ex.getResponseHeaders().add("Content-Type", v));
                r.headers().firstValue("Location").ifPresent(v -> ex.getResponseHeaders().add("Location", v));
                ex.sendResponseHeaders(r.statusCode(), r.body().length == 0 ? -1 : r.body().length);
                if (r.body().length > 0) ex.getResponseBody().write(r.body());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new java.io.IOException(e);
            }
        });
        s.start();
        return s;
    }

    /**
     * "tenants set" and "schedules set" of something another admin creates between the command's PATCH (404) and its
     * PUT: the command changes only the fields it names, and the other admin's keep their values. Its PUT had replaced
     * the new tenant (the other admin's weight back to the default, audited as a replace) and the new schedule (its
     * paused and job priority back to the defaults); now it is create-only (If-None-Match: *) and a 412 sends it back
     * to PATCH.
     */
    @Test
    void setKeepsWhatAnotherAdminCreatedBetweenItsPatchAndItsPut() throws Exception {
        String tenant = TestApp.uniqueTenant("cli-race");
        var proxy = createdAfterTheFirst404(() -> assertEquals(201,
                app.admin("PUT", "/v1/admin/tenants/" + tenant, "{\"weight\": 6}").status()));
        Map<String, String> env = new HashMap<>(Map.of("FAIRQ_URL", "http://127.0.0.1:" + proxy.getAddress().getPort()));
        try {
            env.put("FAIRQ_TOKEN", TestApp.ADMIN_TOKEN);
            Run set = run(env, "tenants", "set", tenant, "--json", "{\"max_running\": 7}");
            assertTrue(set.ok(), set.err());
            assertTrue(set.out().startsWith("tenant " + tenant + " updated"), set.out());
        } finally {
            proxy.stop(0);
        }
        JsonNode stored = app.admin("GET", "/v1/admin/tenants/" + tenant, null).body();
        assertEquals(6, stored.get("weight").asInt(), "the other admin's weight stays: " + stored);
        assertEquals(7, stored.get("max_running").asInt(), stored.toString());
        assertEquals(List.of("patch", "create"), app.admin("GET", "/v1/admin/audit?tenant=" + tenant, null).body()
                .get("entries").findValuesAsText("action"));

        String key = app.newTenantKey(TestApp.uniqueTenant("cli-race-sched"));
        proxy = createdAfterTheFirst404(() -> assertEquals(201, app.call("PUT", "/v1/schedules/nightly", key,
                "{\"cron\": \"@weekly\", \"time_zone\": \"UTC\", \"paused\": true, \"job\": {\"type\": \"record\", \"priority\": 3}}").status()));
        try {
            env.put("FAIRQ_URL", "http://127.0.0.1:" + proxy.getAddress().getPort());
            env.put("FAIRQ_TOKEN", key);
            Run set = run(env, "schedules", "set", "nightly", "--json",
                    "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}");
            assertTrue(set.ok(), set.err());
            assertTrue(set.out().startsWith("schedule nightly updated"), set.out());
        } finally {
            proxy.stop(0);
        }
        JsonNode schedule = app.call("GET", "/v1/schedules/nightly", key, null).body();
        assertEquals("@daily", schedule.get("cron").asText(), schedule.toString());
        assertTrue(schedule.get("paused").asBoolean(), "the other admin's pause stays: " + schedule);
        assertEquals(3, schedule.at("/job/priority").asInt(), "the other admin's priority stays: " + schedule);
        assertEquals(204, app.call("DELETE", "/v1/schedules/nightly", key, null).status());
    }

    @Test
    void theWalkThroughFromATenantToItsJobsAndBack() {
        String tenant = TestApp.uniqueTenant("cli");
        String admin = TestApp.ADMIN_TOKEN;
        assertTrue(ok(admin, "tenants", "set", tenant, "--json", "{\"max_running\": 5, \"rate_per_second\": 1000, \"burst\": 1000}")
                .out().startsWith("tenant " + tenant + " created"));
        Run raised = ok(admin, "tenants", "set", tenant, "--json", "{\"max_running\": 7}");
        assertTrue(raised.out().startsWith("tenant " + tenant + " updated"), raised.out());
        assertEquals(1000, app.admin("GET", "/v1/admin/tenants/" + tenant, null).body().get("burst").asInt(), "set changes only what it names");
        assertEquals(app.admin("GET", "/v1/admin/tenants/" + tenant, null).body(), ok(admin, "tenants", "get", tenant, "--json").json());
        assertTrue(ok(admin, "tenants", "list").out().contains(tenant));

        JsonNode created = ok(admin, "tenants", "keys", "create", tenant, "--json").json();
        String key = created.get("key").asText();
        String keyId = created.get("key_id").asText();
        assertTrue(ok(admin, "tenants", "keys", "list", tenant).out().contains(keyId));

        Run submitted = ok(key, "jobs", "submit", "--type", "record", "--payload", "{\"to\": \"a@example.com\"}",
                "--job-key", "welcome-1", "--delay-ms", "3600000", "--priority", "3", "--queue", "emails");
        assertTrue(submitted.out().contains(" submitted"), submitted.out());
        JsonNode replay = ok(key, "jobs", "submit", "--type", "record", "--payload", "{\"to\": \"a@example.com\"}",
                "--job-key", "welcome-1", "--delay-ms", "3600000", "--priority", "3", "--queue", "emails", "--json").json();
        long id = replay.get("id").asLong();
        assertTrue(submitted.out().startsWith("job " + id + " submitted"), "the replay is the same job");
        assertTrue(ok(key, "jobs", "submit", "--type", "record", "--payload", "{\"to\": \"a@example.com\"}",
                "--job-key", "welcome-1", "--delay-ms", "3600000", "--priority", "3", "--queue", "emails").out().contains("already exists"));

        assertEquals(app.call("GET", "/v1/jobs/" + id, key, null).body(), ok(key, "jobs", "get", Long.toString(id), "--json").json());
        assertTrue(ok(key, "jobs", "get", Long.toString(id)).out().contains("a@example.com"));
        Run list = ok(key, "jobs", "list", "--status", "pending");
        assertTrue(list.out().contains(Long.toString(id)) && list.out().contains("emails"), list.out());
        assertEquals(1, ok(key, "jobs", "list", "--json").json().get("jobs").size());
        assertTrue(ok(key, "jobs", "explain", Long.toString(id)).out().contains("scheduled"));
        // the oldest pending job's age moves between two reads: the rest is the same document
        com.fasterxml.jackson.databind.node.ObjectNode api = (com.fasterxml.jackson.databind.node.ObjectNode) app.call("GET", "/v1/stats", key, null).body();
        com.fasterxml.jackson.databind.node.ObjectNode cli = (com.fasterxml.jackson.databind.node.ObjectNode) ok(key, "stats", "--json").json();
        api.remove("oldest_pending_age_ms");
        assertTrue(cli.remove("oldest_pending_age_ms").asLong() >= 0);
        assertEquals(api, cli);

        assertEquals("cancelled", ok(key, "jobs", "cancel", Long.toString(id), "--json").json().get("status").asText());
        assertTrue(ok(key, "jobs", "retry", Long.toString(id)).out().contains("pending"));
        assertTrue(ok(key, "stats").out().contains("max_running 7"));

        assertTrue(ok(admin, "tenants", "keys", "revoke", tenant, keyId).out().contains("revoked"));
        Run revoked = run(key, "jobs", "list");
        assertFalse(revoked.ok());
        assertTrue(revoked.err().startsWith("fairq: unknown or revoked API key (HTTP 401)"), revoked.err());
    }

    /**
     * {@code tenants get} prints "tenants and their limits": every one the API answers. It had left out
     * max_schedules and min_schedule_interval_s (the Java client's Tenant had no fields for them).
     */
    /**
     * A tenant's schedules from the command line: set creates then changes only what is given, list pages by name,
     * pause and resume, trigger prints the job it made, delete; a name that is no schedule's never reaches the
     * server, and a bad cron is the server's 422 naming the field. There was no schedules command.
     */
    @Test
    void schedulesAreSetListedPausedTriggeredAndDeleted() throws Exception {
        String tenant = TestApp.uniqueTenant("clisched");
        String key = app.newTenantKey(tenant);
        Run made = ok(key, "schedules", "set", "nightly", "--json",
                "{\"cron\": \"30 2 * * *\", \"time_zone\": \"Europe/Berlin\", \"job\": {\"type\": \"record\", \"priority\": 5}}");
        assertTrue(made.out().startsWith("schedule nightly created\n"), made.out());
        assertTrue(made.out().contains("time_zone:   Europe/Berlin"), made.out());
        Run changed = ok(key, "schedules", "set", "nightly", "--json", "{\"overlap\": \"skip\"}");
        assertTrue(changed.out().startsWith("schedule nightly updated\n"), changed.out());
        JsonNode stored = ok(key, "schedules", "get", "nightly", "--json").json();
        assertEquals("skip", stored.get("overlap").asText());
        assertEquals("30 2 * * *", stored.get("cron").asText(), "set changes only the fields given");
        assertEquals(5, stored.at("/job/priority").asInt());
        ok(key, "schedules", "set", "weekly", "--json", "{\"cron\": \"@weekly\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}");

        Run page = ok(key, "schedules", "list", "--limit", "1");
        assertTrue(page.out().contains("\nnightly ") && !page.out().contains("\nweekly "), page.out());
        assertTrue(page.out().contains("more: schedules list --limit 1 --after nightly"), page.out());
        assertTrue(ok(key, "schedules", "list", "--after", "nightly").out().contains("\nweekly "));

        assertTrue(ok(key, "schedules", "pause", "nightly").out().startsWith("schedule nightly paused\n"));
        assertTrue(ok(key, "schedules", "get", "nightly", "--json").json().get("paused").asBoolean());
        assertTrue(ok(key, "schedules", "get", "nightly", "--json").json().get("next_fires").isEmpty());
        ok(key, "schedules", "resume", "nightly");
        assertEquals(5, ok(key, "schedules", "get", "nightly", "--json").json().get("next_fires").size());

        JsonNode job = ok(key, "schedules", "trigger", "nightly", "--json").json();
        assertTrue(job.get("job_key").asText().startsWith("schedule:nightly:trigger-"), job.toString());
        assertEquals(5, app.client(key).get(job.get("id").asLong()).priority(), "the template's job");

        assertEquals("schedule weekly deleted\n", ok(key, "schedules", "delete", "weekly").out());
        Run gone = run(key, "schedules", "get", "weekly");
        assertFalse(gone.ok());
        assertTrue(gone.err().contains("(HTTP 404)"), gone.err());

        Run bad = run(key, "schedules", "set", "x", "--json", "{\"cron\": \"61 * * * *\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}");
        assertFalse(bad.ok());
        assertTrue(bad.err().contains("(HTTP 422)") && bad.err().contains("  cron: "), bad.err());
        Run notAName = run(key, "schedules", "get", "../jobs");
        assertFalse(notAName.ok());
        assertTrue(notAName.err().startsWith("fairq: NAME '../jobs' is not a schedule name"), notAName.err());
        assertEquals(List.of("nightly"), ok(key, "schedules", "list", "--json").json().findValuesAsText("name"));
        ok(key, "schedules", "delete", "nightly"); // a live schedule would fire into other tests' snapshots
    }

    @Test
    void tenantsGetPrintsEveryLimit() {
        String tenant = TestApp.uniqueTenant("clilimits");
        ok(TestApp.ADMIN_TOKEN, "tenants", "set", tenant, "--json", "{\"max_schedules\": 7, \"min_schedule_interval_s\": 3600}");
        String out = ok(TestApp.ADMIN_TOKEN, "tenants", "get", tenant).out();
        JsonNode answer = app.admin("GET", "/v1/admin/tenants/" + tenant, null).body();
        answer.fieldNames().forEachRemaining(f -> {
            if (!f.equals("id") && !f.equals("created_at")) assertTrue(out.contains("  " + f + ":"), f + " missing from:\n" + out);
        });
        assertTrue(out.matches("(?s).*max_schedules: +7\n.*"), out);
        assertTrue(out.matches("(?s).*min_schedule_interval_s: +3600\n.*"), out);
        assertEquals(7, app.client(TestApp.ADMIN_TOKEN).tenant(tenant).maxSchedules(), "the Java client reads them too");
        assertValuesInOneColumn(out);

        String key = ok(TestApp.ADMIN_TOKEN, "tenants", "keys", "create", tenant, "--json").json().get("key").asText();
        long id = ok(key, "jobs", "submit", "--type", "record", "--payload", "{}", "--delay-ms", "3600000", "--json",
                "--concurrency-key", "stripe-api").json().get("id").asLong();
        String job = ok(key, "jobs", "get", Long.toString(id)).out();
        assertTrue(job.contains("  concurrency_key: stripe-api\n"), job);
        assertValuesInOneColumn(job);

        // what submit's --timeout-ms and --payload-version set is printed too (it had been left out)
        long versioned = ok(key, "jobs", "submit", "--type", "record", "--payload", "{}", "--delay-ms", "3600000", "--json",
                "--timeout-ms", "5000", "--payload-version", "2").json().get("id").asLong();
        String shown = ok(key, "jobs", "get", Long.toString(versioned)).out();
        assertTrue(shown.matches("(?s).*\n  timeout_ms: +5000\n.*"), shown);
        assertTrue(shown.matches("(?s).*\n  payload_version: +2\n.*"), shown);
        assertValuesInOneColumn(shown);
    }

    /** The "  label: value" lines of a block start their values in one column (a fixed width of 13 had not). */
    private static void assertValuesInOneColumn(String out) {
        java.util.Set<Integer> columns = new java.util.TreeSet<>();
        java.util.regex.Pattern label = java.util.regex.Pattern.compile("^  [a-z_ ]+: +");
        for (String l : out.split("\n")) {
            java.util.regex.Matcher m = label.matcher(l);
            if (m.find()) columns.add(m.end());
        }
        assertTrue(columns.size() == 1, "values start at columns " + columns + ":\n" + out);
    }

    @Test
    void adminTokensAreCreatedListedAndRevoked() {
        String name = TestApp.uniqueTenant("cli") + "@example.com";
        Run created = ok(TestApp.ADMIN_TOKEN, "admin-tokens", "create", name);
        String[] lines = created.out().strip().split("\n");
        assertTrue(lines[0].startsWith("admin token adm_") && lines[0].contains(name), created.out());
        String id = lines[0].split(" ")[2];
        String token = lines[1].strip();
        assertTrue(ok(token, "admin-tokens", "list").out().contains(name), "the new token lists the tokens");
        JsonNode listed = ok(TestApp.ADMIN_TOKEN, "admin-tokens", "list", "--json").json();
        assertTrue(listed.get("tokens").toString().contains(id));
        assertTrue(ok(TestApp.ADMIN_TOKEN, "admin-tokens", "revoke", id).out().contains("revoked"));
        String row = ok(TestApp.ADMIN_TOKEN, "admin-tokens", "list").out().lines().filter(l -> l.startsWith(id))
                .findFirst().orElseThrow();
        assertTrue(row.endsWith(" bootstrap"), "the last column says who revoked it: " + row);
        Run refused = run(token, "admin-tokens", "list");
        assertFalse(refused.ok());
        assertTrue(refused.err().startsWith("fairq: unknown or revoked token (HTTP 401)"), refused.err());
        Run bad = run(TestApp.ADMIN_TOKEN, "admin-tokens", "create", "Not A Name");
        assertTrue(bad.err().contains("name: must be 1-63"), bad.err());
    }

    @Test
    void everyErrorIsOneClearMessageAndAFailure() {
        String key = app.newTenantKey(TestApp.uniqueTenant("cli-err"));
        Run missing = run(key, "jobs", "get", "999999999");
        assertFalse(missing.ok());
        assertEquals("fairq: no job 999999999 (HTTP 404)\n", missing.err());

        Run invalid = run(key, "jobs", "submit", "--type", "bad type!", "--payload", "{}", "--priority", "1000");
        assertFalse(invalid.ok());
        assertTrue(invalid.err().contains("(HTTP 422)") && invalid.err().contains("\n  priority: must be between -100 and 100")
                && invalid.err().contains("\n  type: must be 1-100"), invalid.err());

        Run notJson = run(key, "jobs", "submit", "--type", "record", "--payload", "{oops");
        assertFalse(notJson.ok());
        assertTrue(notJson.err().startsWith("fairq: --payload is not JSON"), notJson.err());

        Run forbidden = run(key, "tenants", "list");
        assertFalse(forbidden.ok());
        assertTrue(forbidden.err().contains("(HTTP 403)"), forbidden.err());

        Run noToken = run((String) null, "stats");
        assertFalse(noToken.ok());
        assertTrue(noToken.err().startsWith("fairq: FAIRQ_TOKEN is not set"), noToken.err());

        // a line break inside the token: it had ended as "IllegalArgumentException: invalid header value"
        Run brokenToken = run(key.substring(0, 8) + "\n" + key.substring(8), "stats");
        assertFalse(brokenToken.ok());
        assertEquals("fairq: FAIRQ_TOKEN holds a control character (a line break?): set it to the key or token alone\n", brokenToken.err());

        Run unreachable = run(Map.of("FAIRQ_URL", "http://127.0.0.1:1", "FAIRQ_TOKEN", key), "stats");
        assertFalse(unreachable.ok());
        assertTrue(unreachable.err().startsWith("fairq: cannot reach fairq at http://127.0.0.1:1"), unreachable.err());

        for (String url : List.of("ftp://x", "notaurl")) {
            Run badUrl = run(Map.of("FAIRQ_URL", url, "FAIRQ_TOKEN", key), "stats");
            assertFalse(badUrl.ok());
            assertTrue(badUrl.err().startsWith("fairq: FAIRQ_URL must be an http:// or https:// URL"), badUrl.err());
        }

        Run badId = run(key, "jobs", "get", "abc");
        assertFalse(badId.ok());
        assertTrue(badId.err().contains("abc"), badId.err());
    }

    /** {@code check [config.yml]} as the jar runs it: Dropwizard's server and check commands and the app's own. */
    private static Run check(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        FairqApplication fairq = new FairqApplication();
        Bootstrap<FairqConfiguration> bootstrap = new Bootstrap<>(fairq);
        fairq.addDefaultCommands(bootstrap);
        fairq.initialize(bootstrap);
        Cli cli = new Cli(new JarLocation(FairqApplication.class), bootstrap, out, err);
        try {
            Optional<Throwable> failed = cli.run(args);
            return new Run(failed.isEmpty(), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /**
     * {@code check} reads what {@code server} would refuse at start-up, not only the configuration's fields: an
     * invalid tenants file (said with its line and field), and the worker's settings read together (a reserved queue
     * the worker does not serve). Both had been "Configuration is OK", then the server did not start.
     */
    @Test
    void checkRefusesWhatServerWouldRefuse(@TempDir Path dir) throws Exception {
        Path tenants = dir.resolve("tenants.yml");
        Files.writeString(tenants, "tenants:\n  - id: acme\n    max_running: lots\n");
        Path config = dir.resolve("fairq.yml");
        Files.writeString(config, "tenantsFile: " + tenants + "\n");
        Run badTenants = check("check", config.toString());
        assertFalse(badTenants.ok(), badTenants.out() + badTenants.err());
        assertTrue(badTenants.err().startsWith("fairq: ") && badTenants.err().contains(tenants + ":3")
                && badTenants.err().contains("max_running"), badTenants.err());

        Files.writeString(config, "tenantsFile: " + dir.resolve("none.yml") + "\ntenantsFileRequired: true\n");
        Run missing = check("check", config.toString());
        assertFalse(missing.ok());
        assertTrue(missing.err().contains("does not exist"), missing.err());

        Files.writeString(config, "tenantsFile: " + dir.resolve("none.yml") + "\nworkerQueues: [urgent]\nworkerReserved: {other: 1}\n");
        Run reserved = check("check", config.toString());
        assertFalse(reserved.ok());
        assertTrue(reserved.err().startsWith("fairq: the worker's settings"), reserved.err());

        // an http schedule is checked as the API checks one (422 naming job.payload.url): its jobs had died instead
        Files.writeString(tenants, "tenants:\n  - id: acme\n    schedules:\n      - name: hook\n        cron: \"@hourly\"\n"
                + "        time_zone: UTC\n        job: {type: http, payload: {url: \"file:///etc/passwd\"}}\n");
        Files.writeString(config, "tenantsFile: " + tenants + "\n");
        Run badHook = check("check", config.toString());
        assertFalse(badHook.ok(), badHook.out() + badHook.err());
        assertTrue(badHook.err().startsWith("fairq: " + tenants + ":7: tenants[0].schedules[0].job.payload.url: "), badHook.err());

        Files.writeString(tenants, "tenants:\n  - id: acme\n    max_running: 3\n");
        Files.writeString(config, "tenantsFile: " + tenants + "\n");
        Run fine = check("check", config.toString());
        assertTrue(fine.ok(), fine.err());
        for (Run r : List.of(badTenants, missing, reserved, badHook)) assertFalse(r.err().contains("\tat "), "no stack trace: " + r.err());
    }

    /**
     * A database URL the PostgreSQL driver does not take is a setting at fault: one line naming it, from check as from
     * migrate (CommandLineIT), never the pool's "Failed to get driver instance" and its 20 frames; check had said OK.
     */
    @Test
    void aDatabaseUrlThatIsNotOneIsOneLine(@TempDir Path dir) throws Exception {
        Path config = dir.resolve("fairq.yml");
        for (String url : List.of("notajdbcurl", "jdbc:mysql://127.0.0.1/fairq", "jdbc:postgresql://127.0.0.1:notaport/fairq?password=s3cret")) {
            Files.writeString(config, "databaseUrl: \"" + url + "\"\ntenantsFile: " + dir.resolve("none.yml") + "\n");
            Run r = check("check", config.toString());
            assertFalse(r.ok(), url + ": " + r.out());
            assertEquals("fairq: FAIRQ_DATABASE_URL (databaseUrl) is not a PostgreSQL JDBC URL: it must read "
                    + "jdbc:postgresql://HOST[:PORT]/DATABASE\n", r.err(), url);
        }
        Files.writeString(config, "databaseUrl: \"jdbc:postgresql://127.0.0.1:1/fairq\"\nadminToken: " + "t".repeat(40)
                + "\ntenantsFile: " + dir.resolve("none.yml") + "\n");
        Run fine = check("check", config.toString());
        assertTrue(fine.ok(), fine.err());
    }

    /**
     * A config file's settings hold to the ranges of their FAIRQ_* variables: check had said "Configuration is OK" to
     * apiPoolSize: 0 (no connection for any request), maxPayloadBytes: 0 (every job a 413) and workerThreads: 5000, and heartbeatMs: 5.
     */
    @Test
    void checkHoldsAFilesSettingsToTheirVariablesRanges(@TempDir Path dir) throws Exception {
        Path config = dir.resolve("fairq.yml");
        for (String setting : List.of("apiPoolSize: 0", "maxPayloadBytes: 0", "workerThreads: 5000", "retentionHours: 0",
                "metricsTenants: -1", "leaseMs: 500", "heartbeatMs: 5")) {
            Files.writeString(config, setting + "\ntenantsFile: " + dir.resolve("none.yml") + "\n");
            Run r = check("check", config.toString());
            assertFalse(r.ok(), setting + ": " + r.out());
            String field = setting.substring(0, setting.indexOf(':'));
            assertTrue(r.err().startsWith("fairq: ") && r.err().contains(field + " must be"), r.err());
            assertFalse(r.err().contains("\tat "), r.err());
        }
        Files.writeString(config, "apiPoolSize: 1000\nmaxPayloadBytes: 1\nworkerThreads: 1000\ntenantsFile: " + dir.resolve("none.yml") + "\n");
        Run fine = check("check", config.toString());
        assertTrue(fine.ok(), fine.err());
    }

    /**
     * A file's submitStart and queue names are refused by check as server refuses them, naming the setting: check had
     * said OK to submitStart: later (server then stopped at start), and both to workerQueues: ["bad queue"], which
     * FAIRQ_WORKER_QUEUES refuses (server had started a worker serving a queue no job can name).
     */
    @Test
    void checkRefusesAFilesSubmitStartAndQueueNamesAsTheirVariablesDo(@TempDir Path dir) throws Exception {
        Path config = dir.resolve("fairq.yml");
        Map<String, String> settings = new java.util.LinkedHashMap<>();
        settings.put("submitStart: later", "FAIRQ_SUBMIT_START (submitStart) must be commit or flush, not 'later'");
        settings.put("workerQueues: [\"bad queue\"]", "workerQueues (FAIRQ_WORKER_QUEUES): 'bad queue' must be 1-100 letters");
        settings.put("workerReserved: {\"bad queue\": 1}", "workerReserved (FAIRQ_WORKER_RESERVED): 'bad queue' must be 1-100 letters");
        for (Map.Entry<String, String> s : settings.entrySet()) {
            Files.writeString(config, s.getKey() + "\ntenantsFile: " + dir.resolve("none.yml") + "\n");
            Run r = check("check", config.toString());
            assertFalse(r.ok(), s.getKey() + ": " + r.out());
            assertTrue(r.err().startsWith("fairq: ") && r.err().contains(s.getValue()), r.err());
            assertFalse(r.err().contains("\tat "), r.err());
        }
        Files.writeString(config, "submitStart: flush\nworkerQueues: [urgent, default]\nworkerReserved: {urgent: 2}\ntenantsFile: "
                + dir.resolve("none.yml") + "\n");
        Run fine = check("check", config.toString());
        assertTrue(fine.ok(), fine.err());
    }

    /** A FAIRQ_ADMIN_TOKEN (adminToken) under 32 characters stops the server, so check refuses it too; it had said OK. */
    @Test
    void checkRefusesAShortAdminToken(@TempDir Path dir) throws Exception {
        Path config = dir.resolve("fairq.yml");
        Files.writeString(config, "adminToken: short\ntenantsFile: " + dir.resolve("none.yml") + "\n");
        Run r = check("check", config.toString());
        assertFalse(r.ok(), r.out());
        assertEquals("fairq: FAIRQ_ADMIN_TOKEN must be at least 32 characters (it has 5): use a random secret, e.g. "
                + "$(openssl rand -hex 32)\n", r.err());
        Files.writeString(config, "adminToken: " + "t".repeat(32) + "\ntenantsFile: " + dir.resolve("none.yml") + "\n");
        Run fine = check("check", config.toString());
        assertTrue(fine.ok(), fine.err());
    }

    /**
     * The command line reads JSON as strictly as the API: a lone surrogate (stored as '?'), content after the value
     * (dropped), a field given twice (the last had won) and an empty payload (stored as null) are refused, nothing
     * is stored; a tenant id that is not one ('' is the list endpoint, '../jobs/5' another) never reaches the server.
     */
    @Test
    void payloadsLimitsAndTenantIdsAreCheckedLikeTheApiDoes() {
        String tenant = TestApp.uniqueTenant("cli-strict");
        String key = app.newTenantKey(tenant);
        List<Object> before = app.snapshot(tenant);
        for (String payload : List.of("{\"a\": \"\\ud800\"}", "{\"a\": 1} {\"b\": 2}", "{\"a\": 1, \"a\": 2}", "", " ")) {
            Run r = run(key, "jobs", "submit", "--type", "record", "--payload", payload);
            assertFalse(r.ok(), payload + ": " + r.out());
            assertTrue(r.err().startsWith("fairq: --payload"), r.err());
        }
        assertTrue(run(key, "jobs", "submit", "--type", "record", "--payload", "{\"a\": \"\\ud800\"}").err()
                .contains("a must not contain an unpaired UTF-16 surrogate"));
        String other = TestApp.uniqueTenant("cli-dup");
        Run twice = run(TestApp.ADMIN_TOKEN, "tenants", "set", other, "--json", "{\"weight\": 2, \"weight\": 3}");
        assertFalse(twice.ok());
        assertTrue(twice.err().contains("weight"), twice.err());
        assertEquals(404, app.admin("GET", "/v1/admin/tenants/" + other, null).status(), "no tenant created");
        for (String id : List.of("", "../jobs/5", "Upper")) {
            for (String[] args : List.of(new String[] {"tenants", "get", id}, new String[] {"tenants", "keys", "list", id},
                    new String[] {"tenants", "set", id, "--json", "{}"})) {
                Run r = run(TestApp.ADMIN_TOKEN, args);
                assertFalse(r.ok(), String.join(" ", args) + ": " + r.out());
                assertTrue(r.err().contains("is not a tenant id"), r.err());
                assertEquals("", r.out());
            }
        }
        assertEquals(before, app.snapshot(tenant), "nothing stored");
        // numbers as given
        long id = ok(key, "jobs", "submit", "--type", "record", "--delay-ms", "3600000", "--payload", "{\"x\": 0.12345678901234567890123}", "--json")
                .json().get("id").asLong();
        assertEquals("{\"x\": 0.12345678901234567890123}", app.db.dsl().fetchValue("SELECT payload::text FROM jobs WHERE id = ?", id).toString());
    }

    /** Cancel says what the answer says; the next page's command keeps the list's filters. */
    @Test
    void cancelAndPagingSayWhatHappened() {
        String key = app.newTenantKey(TestApp.uniqueTenant("cli-cancel"));
        long pending = ok(key, "jobs", "submit", "--type", "record", "--payload", "{}", "--delay-ms", "3600000", "--json").json().get("id").asLong();
        assertTrue(ok(key, "jobs", "cancel", Long.toString(pending)).out().startsWith("cancelled\n"));
        Run again = ok(key, "jobs", "cancel", Long.toString(pending));
        assertTrue(again.out().startsWith("cancelled\n"), "cancelling is idempotent: " + again.out());
        long done = ok(key, "jobs", "submit", "--type", "record", "--payload", "{}", "--json").json().get("id").asLong();
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(20)).until(() ->
                app.call("GET", "/v1/jobs/" + done, key, null).body().get("status").asText().equals("succeeded"));
        Run ended = ok(key, "jobs", "cancel", Long.toString(done));
        assertTrue(ended.out().startsWith("not cancelled: the job had already ended (succeeded)"), ended.out());
        assertEquals("cancel requested: the job is running and ends cancelled when its handler stops (jobs get shows it)",
                ClientCommands.Jobs.cancelled(202, "running"));

        for (int i = 0; i < 3; i++) ok(key, "jobs", "submit", "--type", "record", "--payload", "{}", "--delay-ms", "3600000");
        Run page = ok(key, "jobs", "list", "--status", "pending", "--type", "record", "--limit", "2");
        assertTrue(page.out().contains("more: jobs list --status pending --type record --limit 2 --after "), page.out());
    }
}

package dev.fairq.scheduler;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.TenantLimits;
import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TenantsFileTest {

    @Test
    void defaultsApplyAndTenantsOverrideThem() {
        TenantsFile file = TenantsFile.parse("""
                defaults:
                  weight: 2
                  max_running: 7
                tenants:
                  - id: acme
                    weight: 3
                    rate_per_second: 12.5
                    webhook_allow: [Hooks.Acme.Example, "127.0.0.1:8080", "[::1]:8080", 10.0.0.0/8, "*.acme.example:8443"]
                  - id: globex
                    paused: true
                """);
        assertEquals(List.of(
                new TenantLimits("acme", 3, 12.5, 200, 7, 100_000, false, List.of("hooks.acme.example", "127.0.0.1:8080",
                        "[::1]:8080", "10.0.0.0/8", "*.acme.example:8443")),
                new TenantLimits("globex", 2, 100.0, 200, 7, 100_000, true, List.of())), file.tenants());
    }

    @Test
    void errorsNameTheLineAndTheField() {
        assertError("tenants:\n  - id: acme\n    weight: 0\n", "tenants.yml:3: tenants[0].weight: must be a whole number between 1 and 1000");
        assertError("tenants:\n  - id: acme\n    wieght: 2\n", "tenants.yml:3: tenants[0].wieght: unknown key");
        assertError("tenants:\n  - id: acme\n  - id: acme\n", "tenants.yml:3: tenants[1].id: duplicate tenant 'acme' (first defined on line 2)");
        assertError("tenants:\n  - weight: 2\n", "tenants.yml:2: tenants[0].id: is required");
        assertError("tenants:\n  - id: Not Valid\n", "tenants.yml:2: tenants[0].id: must be 1-63 lower-case");
        assertError("defaults:\n  rate_per_second: fast\n", "tenants.yml:2: defaults.rate_per_second: must be a number");
        assertError("defaults:\n  paused: maybe\n", "tenants.yml:2: defaults.paused: must be true or false");
        assertError("tenants:\n  - id: a\n    max_running: [1]\n", "tenants.yml:3: tenants[0].max_running: must be a single value");
        assertError("tenant:\n  - id: a\n", "tenants.yml:1: tenant: unknown key");
        assertError("tenants: acme\n", "tenants.yml:1: tenants: must be a list of tenants");
        assertError("tenants:\n  - id: a\n    webhook_allow: [ok.example, '127.0.0.1:99999']\n",
                "tenants.yml:3: tenants[0].webhook_allow[1]: '127.0.0.1:99999': the port must be a number from 1 to 65535");
        assertError("tenants:\n  - id: a\n    webhook_allow:\n      - localhost\n",
                "tenants.yml:4: tenants[0].webhook_allow[0]: 'localhost' names loopback");
        assertError("defaults:\n  webhook_allow: [hooks.acme.example/path]\n",
                "tenants.yml:2: defaults.webhook_allow[0]: 'hooks.acme.example/path': only a CIDR range");
        assertThrows(IllegalArgumentException.class, () -> TenantsFile.parse("tenants: [\n"));
    }

    @Test
    void keyMapsAreReadAsWrittenAndARepeatedKeyIsRefused() {
        TenantsFile file = TenantsFile.parse("""
                tenants:
                  - id: acme
                    concurrency_limits: {stripe-api: 5, NO: 0}
                    key_weights:
                      enterprise-7: 5
                """);
        assertEquals(java.util.Map.of("stripe-api", 5, "NO", 0), file.tenants().get(0).concurrencyLimits());
        assertEquals(java.util.Map.of("enterprise-7", 5), file.tenants().get(0).keyWeights());
        // the API answers a repeated JSON field with 400 "is given more than once"; the file took the last one silently
        assertError("tenants:\n  - id: acme\n    concurrency_limits: {stripe-api: 5, stripe-api: 1}\n",
                "tenants.yml:3: tenants[0].concurrency_limits.stripe-api: is given more than once");
        assertError("tenants:\n  - id: acme\n    key_weights:\n      vip: 5\n      vip: 2\n",
                "tenants.yml:5: tenants[0].key_weights.vip: is given more than once");
        assertError("tenants:\n  - id: acme\n    max_running: 5\n    max_running: 50\n",
                "tenants.yml:4: tenants[0].max_running: is given more than once");
        assertError("defaults:\n  weight: 2\n  weight: 3\n", "tenants.yml:3: defaults.weight: is given more than once");
    }

    @Test
    void theRepositoryTenantsFileIsValid() throws Exception {
        Path file = Path.of("..", "tenants.yml");
        List<TenantLimits> tenants = TenantsFile.load(file).tenants();
        assertTrue(tenants.size() >= 1);
        // the demo reaches a receiver on this machine through an IP entry, never through a name such as localhost
        TenantLimits demo = tenants.stream().filter(t -> t.id().equals("demo")).findFirst().orElseThrow();
        assertEquals(List.of("127.0.0.1"), demo.webhookAllow());
        // and the defaults it ships are the built-in ones for the API limits
        assertEquals(100.0, demo.apiRatePerSecond());
        assertEquals(200, demo.apiBurst());
        // its comment is the operator's list of what a tenant may set: every limit is in it (concurrency_limits and
        // key_weights had been left out)
        String text = java.nio.file.Files.readString(file);
        for (String field : dev.fairq.schema.TenantLimit.fields()) {
            assertTrue(java.util.regex.Pattern.compile("(?m)^# " + field + " ").matcher(text).find(), field + " is not described");
        }
    }

    @Test
    void seedInsertsMissingTenantsAndKeepsStoredLimits() {
        TestDatabase db = TestDatabase.get();
        db.reset();
        db.createTenant("acme", 5, 1.0, 1, 1);
        TenantsFile file = TenantsFile.parse("tenants:\n  - id: acme\n    weight: 9\n  - id: globex\n    weight: 4\n");
        assertEquals(1, file.seed(db.dsl()));
        assertEquals(5, db.dsl().fetchValue("SELECT weight FROM tenants WHERE id = 'acme'"), "live limits survive a restart");
        assertEquals(4, db.dsl().fetchValue("SELECT weight FROM tenants WHERE id = 'globex'"));
        assertEquals(0, file.seed(db.dsl()), "seeding twice changes nothing");
        // the tenant it created has its history from the start, the one it left alone has no row from it
        assertEquals(List.of("globex create tenants.yml 4"), db.dsl().resultQuery(
                "SELECT tenant_id || ' ' || action || ' ' || actor || ' ' || (new_values->>'weight') FROM tenant_audit "
                        + "WHERE old_values IS NULL AND actor = 'tenants.yml'").fetch(0, String.class));
        assertEquals(0, db.count("SELECT count(*) FROM tenant_audit WHERE tenant_id = 'acme'"));
    }

    /**
     * Two processes seeding at once (an api and a scheduler starting, or a restart meeting a deploy whose file lists
     * the tenants in another order) must not deadlock: the file's tenants were inserted in file order, so one that
     * held 'zeta' waiting for 'alpha' met another holding 'alpha' waiting for 'zeta', and PostgreSQL aborted one of
     * them, whose start-up failed. Inserted by id, a seed holds no row while it waits for one.
     */
    @Test
    void seedsRacingInAnotherOrderDoNotDeadlock() throws Exception {
        TestDatabase db = TestDatabase.get();
        db.reset();
        TenantsFile file = TenantsFile.parse("tenants:\n  - id: zeta\n  - id: alpha\n");
        try (java.sql.Connection other = db.dataSource().getConnection()) {
            other.setAutoCommit(false);
            try (java.sql.Statement st = other.createStatement()) {
                st.execute("INSERT INTO tenants (id) VALUES ('alpha')"); // another process's seed, in its own order
                java.util.concurrent.CompletableFuture<Integer> seeded =
                        java.util.concurrent.CompletableFuture.supplyAsync(() -> file.seed(db.dsl()));
                org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(60)).until(() -> db.count(
                        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO tenants%'") == 1);
                st.execute("INSERT INTO tenants (id) VALUES ('zeta') ON CONFLICT (id) DO NOTHING");
                other.commit();
                assertEquals(0, seeded.get(60, java.util.concurrent.TimeUnit.SECONDS), "both were there by then");
            }
        }
        assertEquals(2, db.count("SELECT count(*) FROM tenants WHERE id IN ('alpha', 'zeta')"));
    }

    static final String WITH_SCHEDULES = """
            tenants:
              - id: acme
                max_schedules: 50
                schedules:
                  - name: nightly-report
                    cron: "30 2 * * *"
                    time_zone: Europe/Berlin
                    job: {type: report, payload: {format: pdf}, priority: 5}
                  - name: hourly
                    cron: "@hourly"
                    time_zone: UTC
                    overlap: skip
                    job: {type: sync}
            """;

    @Test
    void schedulesAreDeclaredPerTenantAndSeededLikeTheTenants() {
        TenantsFile file = TenantsFile.parse(WITH_SCHEDULES);
        assertEquals(50, file.tenants().get(0).maxSchedules());
        assertEquals(List.of("nightly-report", "hourly"), List.copyOf(file.schedules().get("acme").keySet()));
        ScheduleDefinition nightly = file.schedules().get("acme").get("nightly-report");
        assertEquals(5, nightly.job().priority());
        assertEquals("pdf", nightly.job().payload().get("format").asText());

        TestDatabase db = TestDatabase.get();
        db.reset();
        file.seed(db.dsl());
        assertEquals(2, db.count("SELECT count(*) FROM schedules WHERE tenant_id = 'acme' AND next_fire_at IS NOT NULL"));
        // changed through the API since: a restart keeps the stored definition
        db.dsl().execute("UPDATE schedules SET cron = '0 3 * * *' WHERE name = 'nightly-report'");
        db.dsl().execute("DELETE FROM schedules WHERE name = 'hourly'");
        file.seed(db.dsl());
        assertEquals("0 3 * * *", db.dsl().fetchValue("SELECT cron FROM schedules WHERE name = 'nightly-report'"));
        assertEquals(1, db.count("SELECT count(*) FROM schedules WHERE name = 'hourly'"), "a missing one is created again");
    }

    @Test
    void scheduleErrorsNameTheLineAndTheField() {
        assertError(WITH_SCHEDULES.replace("Europe/Berlin", "Europe/Berln"),
                "tenants.yml:7: tenants[0].schedules[0].time_zone: unknown time zone 'Europe/Berln'");
        assertError(WITH_SCHEDULES.replace("\"30 2 * * *\"", "\"30 25 * * *\""),
                "tenants.yml:6: tenants[0].schedules[0].cron: must be five fields");
        assertError(WITH_SCHEDULES.replace("{type: sync}", "{type: sync, colour: red}"),
                "tenants.yml:13: tenants[0].schedules[1].job.colour: unknown field");
        assertError(WITH_SCHEDULES.replace("name: hourly", "name: nightly-report"),
                "tenants.yml:9: tenants[0].schedules[1].name: duplicate schedule 'nightly-report'");
        assertError(WITH_SCHEDULES.replace("overlap: skip", "overlap: sometimes"),
                "tenants.yml:12: tenants[0].schedules[1].overlap: must be one of");
    }

    @Test
    void aRepeatedOrNullKeyInsideAScheduleOrAKeyMapIsRefused() {
        // the payload is JSON: the API refuses {"format":"pdf","format":"csv"}; the file took "csv" silently
        assertError(WITH_SCHEDULES.replace("payload: {format: pdf}", "payload: {format: pdf, format: csv}"),
                "tenants.yml:8: tenants[0].schedules[0].job.payload.format: is given more than once");
        assertError(WITH_SCHEDULES.replace("{type: sync}", "{type: sync, type: report}"),
                "tenants.yml:13: tenants[0].schedules[1].job.type: is given more than once");
        // ~ (or null) is YAML's null: it became a key "~" (a payload key, a concurrency key)
        assertError(WITH_SCHEDULES.replace("payload: {format: pdf}", "payload: {~: pdf}"),
                "tenants.yml:8: tenants[0].schedules[0].job.payload: a key must be text, not null ('~')");
        assertError("tenants:\n  - id: acme\n    concurrency_limits: {~: 1}\n",
                "tenants.yml:3: tenants[0].concurrency_limits: a key must be text, not null ('~')");
        assertError("tenants:\n  - id: acme\n    key_weights:\n      null: 2\n",
                "tenants.yml:4: tenants[0].key_weights: a key must be text, not null ('null')");
        assertError("~: 1\n", "tenants.yml:1: (top level): a key must be text, not null ('~')");
        // a key that is only null-like text, quoted, stays text
        TenantsFile quoted = TenantsFile.parse(WITH_SCHEDULES.replace("payload: {format: pdf}", "payload: {\"~\": pdf}"));
        assertEquals("pdf", quoted.schedules().get("acme").get("nightly-report").job().payload().get("~").asText());
    }

    /**
     * YAML 1.1 tags yes/no/on/off as booleans, and they were read with Boolean.parseBoolean: 'paused: yes' became
     * false, a schedule meant to be paused fired. Only true and false are booleans; yes is refused where a boolean is
     * wanted, as the tenant's own paused refuses it, and a payload keeps it as the text it is.
     */
    @Test
    void yesAndOnAreNotSilentlyFalse() {
        assertError(WITH_SCHEDULES.replace("overlap: skip", "overlap: skip\n        paused: yes"),
                "tenants.yml:13: tenants[0].schedules[1].paused: must be true or false");
        assertError(WITH_SCHEDULES.replace("overlap: skip", "overlap: skip\n        paused: on"),
                "tenants.yml:13: tenants[0].schedules[1].paused: must be true or false");
        TenantsFile paused = TenantsFile.parse(WITH_SCHEDULES.replace("overlap: skip", "overlap: skip\n        paused: true"));
        assertEquals(Boolean.TRUE, paused.schedules().get("acme").get("hourly").paused());
        TenantsFile payload = TenantsFile.parse(WITH_SCHEDULES.replace("payload: {format: pdf}", "payload: {format: pdf, draft: yes, final: false}"));
        JsonNode p = payload.schedules().get("acme").get("nightly-report").job().payload();
        assertEquals("yes", p.get("draft").asText());
        assertTrue(p.get("draft").isTextual() && p.get("final").isBoolean() && !p.get("final").asBoolean(), p.toString());
    }

    /**
     * A template's payload numbers are kept as written, as the API keeps them ("schedule templates alike"): read as a
     * long or a double, 1.50 had become 1.5, 0.12345678901234567890123 had lost its last digits, and a 23-digit
     * integer and 1e400 had become the text "12345678901234567890123" and "Infinity".
     */
    @Test
    void payloadNumbersAreKeptAsWritten() {
        TenantsFile file = TenantsFile.parse(WITH_SCHEDULES.replace("payload: {format: pdf}",
                "payload: {format: pdf, price: 1.50, ratio: 0.12345678901234567890123, id: 12345678901234567890123, big: 1e400, n: 7}"));
        ScheduleDefinition nightly = file.schedules().get("acme").get("nightly-report");
        assertEquals("{\"format\":\"pdf\",\"price\":1.50,\"ratio\":0.12345678901234567890123,\"id\":12345678901234567890123,"
                + "\"big\":1E+400,\"n\":7}", nightly.resolve(65536).jobPayloadJson());
        assertEquals(5, nightly.job().priority());
        assertError(WITH_SCHEDULES.replace("priority: 5", "priority: 30000000000000000000000"),
                "tenants.yml:8: tenants[0].schedules[0].job.priority: must be between -100 and 100");
    }

    /**
     * A YAML alias inside its own anchor makes a payload that contains itself: reading it as JSON had recursed until
     * a StackOverflowError, whose thousand-frame trace was all start-up said. An alias used again elsewhere is fine.
     */
    @Test
    void aPayloadThatContainsItselfIsRefused() {
        assertError(WITH_SCHEDULES.replace("payload: {format: pdf}", "payload: &p {format: pdf, again: [*p]}"),
                "tenants.yml:8: tenants[0].schedules[0].job.payload.again[0]: contains itself");
        TenantsFile reused = TenantsFile.parse(WITH_SCHEDULES.replace("payload: {format: pdf}",
                "payload: {a: &x {format: pdf}, b: *x}"));
        assertEquals("{\"a\":{\"format\":\"pdf\"},\"b\":{\"format\":\"pdf\"}}",
                reused.schedules().get("acme").get("nightly-report").job().payload().toString());
    }

    /**
     * A file's schedule is checked as the API checks one: by the process's largest payload (FAIRQ_MAX_PAYLOAD_BYTES),
     * not a fixed 64 KiB, and by the template check the API applies (the built-in http type's payload rules). The
     * file had refused a 100 KB payload the API takes and taken one the API refuses, and an http template with a
     * file: URL started, and each of its fires died.
     */
    @Test
    void schedulesAreCheckedAsTheApiChecksThem() {
        String big = "x".repeat(100_000);
        String yaml = WITH_SCHEDULES.replace("payload: {format: pdf}", "payload: {format: pdf, blob: " + big + "}");
        java.util.function.BiFunction<String, String, java.util.Optional<dev.fairq.schema.FieldError>> noUrl = (type, payload) ->
                type.equals("hook") && !payload.contains("\"url\"")
                        ? java.util.Optional.of(new dev.fairq.schema.FieldError("payload.url", "is required"))
                        : java.util.Optional.empty();
        TenantsFile file = TenantsFile.parse(yaml, 200_000, noUrl);
        TestDatabase db = TestDatabase.get();
        db.reset();
        file.seed(db.dsl());
        assertEquals(2, db.count("SELECT count(*) FROM schedules WHERE tenant_id = 'acme'"), "the large payload is seeded");
        assertThrows(IllegalArgumentException.class, () -> TenantsFile.parse(yaml, 65_536, noUrl));
        IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                () -> TenantsFile.parse(WITH_SCHEDULES, 10, noUrl));
        assertTrue(small.getMessage().startsWith("tenants.yml:8: tenants[0].schedules[0].job.payload: must be at most 10 bytes"),
                small.getMessage());
        IllegalArgumentException hook = assertThrows(IllegalArgumentException.class, () -> TenantsFile.parse(
                WITH_SCHEDULES.replace("{type: sync}", "{type: hook, payload: {uri: x}}"), 65_536, noUrl));
        assertTrue(hook.getMessage().startsWith("tenants.yml:13: tenants[0].schedules[1].job.payload.url: is required"),
                hook.getMessage());
    }

    /**
     * A file that cannot be read is said as such, not as "not valid YAML: java.io.IOException: ..."; and defaults
     * that name an id or schedules are told those belong to a tenant (they had been "unknown key (expected one of
     * id, schedules, ...)", the key itself among those expected).
     */
    @Test
    void unreadableFilesAndMisplacedKeysAreSaidPlainly(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        IllegalArgumentException directory = assertThrows(IllegalArgumentException.class, () -> TenantsFile.load(dir));
        assertEquals(dir + ": cannot be read: Is a directory", directory.getMessage());
        Path binary = dir.resolve("tenants.yml");
        java.nio.file.Files.write(binary, new byte[] {'t', 'e', 'n', 'a', 'n', 't', 's', ':', ' ', (byte) 0xff, '\n'});
        IllegalArgumentException notText = assertThrows(IllegalArgumentException.class, () -> TenantsFile.load(binary));
        assertEquals(binary + ": not UTF-8 text", notText.getMessage());
        assertError("defaults:\n  id: acme\n", "tenants.yml:2: defaults.id: belongs to a tenant, not to defaults (expected one of api_burst,");
        assertError("defaults:\n  schedules: []\n", "tenants.yml:2: defaults.schedules: belongs to a tenant, not to defaults");
        assertError("defaults:\n  colour: red\n", "tenants.yml:2: defaults.colour: unknown key (expected one of api_burst,");
    }

    private static void assertError(String yaml, String expectedStart) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TenantsFile.parse(yaml));
        assertTrue(e.getMessage().startsWith(expectedStart), "got: " + e.getMessage());
    }
}

package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import io.swagger.v3.parser.OpenAPIV3Parser;
import io.swagger.v3.parser.core.models.ParseOptions;
import io.swagger.v3.parser.core.models.SwaggerParseResult;
import org.glassfish.jersey.server.model.Resource;
import org.glassfish.jersey.server.model.ResourceMethod;
import org.glassfish.jersey.server.model.ResourceModel;
import org.glassfish.jersey.servlet.ServletContainer;
import org.glassfish.jersey.server.ExtendedResourceContext;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * GET /openapi.json against the running server: a valid OpenAPI 3 document (swagger-parser), every route
 * Jersey serves in it (read from Jersey's own routing model, so a resource added by anyone shows up here), and
 * the document agreeing with real answers (field names, status codes, headers).
 */
class OpenApiContractTest extends AppTest {
    static JsonNode doc;

    @BeforeAll
    static void start() throws Exception {
        TestApp.Res r = app.call("GET", "/openapi.json", null, null);
        assertEquals(200, r.status(), "served without authentication: " + r);
        doc = r.body();
        // kept for a look, or for a generator: api/target/openapi.json
        java.nio.file.Files.writeString(java.nio.file.Path.of("target", "openapi.json"), TestApp.JSON.writerWithDefaultPrettyPrinter().writeValueAsString(doc));
    }

    @Test
    void theDocumentIsAValidOpenApi3Document() throws Exception {
        ParseOptions options = new ParseOptions();
        options.setResolve(true);
        SwaggerParseResult result = new OpenAPIV3Parser().readContents(TestApp.JSON.writeValueAsString(doc), null, options);
        assertNotNull(result.getOpenAPI(), String.valueOf(result.getMessages()));
        assertEquals(List.of(), result.getMessages(), "swagger-parser's complaints");
        assertTrue(doc.get("openapi").asText().startsWith("3."));
    }

    @Test
    void everyRouteJerseyServesIsInTheDocument() {
        Set<String> routes = new TreeSet<>();
        ServletContainer jersey = (ServletContainer) app.support.getEnvironment().getJerseyServletContainer();
        ResourceModel model = jersey.getApplicationHandler().getInjectionManager()
                .getInstance(ExtendedResourceContext.class).getResourceModel();
        for (Resource r : model.getRootResources()) collect(r, "", routes);
        assertTrue(routes.size() >= 25, "Jersey's routes: " + routes);

        Set<String> documented = new TreeSet<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fieldNames().forEachRemaining(m ->
                documented.add(m.toUpperCase() + " " + p.getKey())));
        Set<String> missing = new TreeSet<>(routes);
        missing.removeAll(documented);
        assertEquals(Set.of(), missing, "routes Jersey serves that /openapi.json leaves out");
        Set<String> extra = new TreeSet<>(documented);
        extra.removeAll(routes);
        assertEquals(Set.of(), extra, "documented routes Jersey does not serve");
    }

    private static void collect(Resource r, String parent, Set<String> out) {
        String path = join(parent, r.getPath());
        for (ResourceMethod m : r.getResourceMethods()) {
            // Jersey's own OPTIONS and HEAD answers are "extended": no resource of ours declares them
            if (!m.isExtended()) out.add(m.getHttpMethod() + " " + path);
        }
        for (Resource child : r.getChildResources()) collect(child, path, out);
    }

    /** "/v1/jobs" + "{id}" -> "/v1/jobs/{id}"; a template's regular expression ({id: \d+}) is not part of the name. */
    private static String join(String parent, String path) {
        String p = path == null ? "" : path.replaceAll("\\{\\s*(\\w+)\\s*:[^}]*}", "{$1}");
        String s = (parent + "/" + p).replaceAll("/+", "/");
        return s.length() > 1 && s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
    }

    @Test
    void securityStatusCodesAndHeadersAreDeclared() {
        JsonNode schemes = doc.at("/components/securitySchemes");
        assertEquals("bearer", schemes.at("/tenantKey/scheme").asText());
        assertEquals("bearer", schemes.at("/adminToken/scheme").asText());

        JsonNode submit = doc.at("/paths/~1v1~1jobs/post");
        assertEquals("tenantKey", submit.at("/security/0").fieldNames().next());
        for (String code : List.of("200", "201", "400", "401", "403", "409", "413", "422", "429")) {
            assertFalse(submit.at("/responses/" + code).isMissingNode(), "POST /v1/jobs answers " + code);
        }
        assertFalse(submit.at("/responses/201/headers/Location").isMissingNode());
        assertFalse(submit.at("/responses/200/headers/Idempotent-Replay").isMissingNode());
        assertFalse(submit.at("/responses/429/headers/Retry-After").isMissingNode());
        assertEquals("#/components/schemas/Error", submit.at("/responses/422/content/application~1json/schema/$ref").asText());
        assertEquals("#/components/schemas/JobSubmission", submit.at("/requestBody/content/application~1json/schema/$ref").asText());

        JsonNode put = doc.at("/paths/~1v1~1admin~1tenants~1{id}/put");
        assertEquals("adminToken", put.at("/security/0").fieldNames().next());
        assertFalse(put.at("/responses/201").isMissingNode());
        // a create-only PUT: the If-None-Match header and its 412, on both PUTs that create
        for (JsonNode creates : List.of(put, doc.at("/paths/~1v1~1schedules~1{name}/put"))) {
            assertEquals("#/components/schemas/Error", creates.at("/responses/412/content/application~1json/schema/$ref").asText(), creates.toString());
            assertTrue(creates.get("parameters").toString().contains("\"name\":\"If-None-Match\",\"in\":\"header\""), creates.toString());
        }
        assertTrue(doc.at("/paths/~1openapi.json/get/security").isMissingNode()
                || doc.at("/paths/~1openapi.json/get/security").isEmpty(), "the document needs no credential");

        // the bounds come from schema's JobRequest and TenantLimit constants
        JsonNode job = doc.at("/components/schemas/JobSubmission");
        assertEquals(-100, job.at("/properties/priority/minimum").asInt());
        assertEquals(100, job.at("/properties/priority/maximum").asInt());
        assertEquals(255, job.at("/properties/job_key/maxLength").asInt());
        assertTrue(job.get("required").toString().contains("\"type\""), job.toString());
        assertFalse(job.at("/additionalProperties").asBoolean(true), "unknown fields are refused");
        JsonNode limits = doc.at("/components/schemas/TenantLimitsChange/properties");
        assertEquals(1, limits.at("/weight/minimum").asInt());
        assertEquals(1000, limits.at("/weight/maximum").asInt());
        assertTrue(limits.at("/rate_per_second/exclusiveMinimum").asBoolean());

        // every operation names its success code: a bare "default" tells a generated client nothing
        List<String> undeclared = new java.util.ArrayList<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fields().forEachRemaining(op -> {
            JsonNode responses = op.getValue().get("responses");
            boolean success = false;
            for (var it = responses.fieldNames(); it.hasNext(); ) success |= it.next().startsWith("2");
            if (!success || responses.has("default")) undeclared.add(op.getKey().toUpperCase() + " " + p.getKey());
        }));
        assertEquals(List.of(), undeclared, "operations without a declared success code");
    }

    /** The schemas name exactly the fields the server answers with (snake_case), checked on real answers. */
    @Test
    void theSchemasNameTheFieldsOfRealAnswers() {
        String tenant = TestApp.uniqueTenant("oas");
        String key = app.newTenantKey(tenant);
        TestApp.Res job = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}");
        long id = job.body().get("id").asLong();
        assertFields("Job", job.body());
        assertFields("JobPage", app.call("GET", "/v1/jobs", key, null).body());
        assertFields("Explanation", app.call("GET", "/v1/jobs/" + id + "/explain", key, null).body());
        assertFields("Stats", app.call("GET", "/v1/stats", key, null).body());
        assertFields("TenantLimits", app.call("GET", "/v1/stats", key, null).body().get("limits"));
        assertFields("TenantDashboard", app.call("GET", "/v1/dashboard", key, null).body());
        assertFields("BatchAnswer", app.call("POST", "/v1/jobs/batch", key, "{\"jobs\": [{\"type\": \"record\", \"payload\": 1, \"delay_ms\": 3600000}]}").body());
        assertFields("Tenant", app.admin("GET", "/v1/admin/tenants/" + tenant, null).body());
        assertFields("KeyList", app.admin("GET", "/v1/admin/tenants/" + tenant + "/keys", null).body());
        assertFields("KeyInfo", app.admin("GET", "/v1/admin/tenants/" + tenant + "/keys", null).body().get("keys").get(0));
        assertFields("CreatedKey", app.admin("POST", "/v1/admin/tenants/" + tenant + "/keys", null).body());
        assertFields("AuditPage", app.admin("GET", "/v1/admin/audit?tenant=" + tenant, null).body());
        assertFields("Overview", app.admin("GET", "/v1/admin/overview", null).body());
        // the overview's rows come from the rollup (every few seconds): this tenant's backlog shows up there
        org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() ->
                app.admin("GET", "/v1/admin/overview", null).body().get("tenants").size() > 0);
        assertFields("OverviewRow", app.admin("GET", "/v1/admin/overview", null).body().get("tenants").get(0));
        assertFields("Error", app.call("POST", "/v1/jobs", key, "{\"priority\": 1000}").body());
        assertFields("FieldError", app.call("POST", "/v1/jobs", key, "{\"priority\": 1000}").body().get("errors").get(0));
    }

    /**
     * ParameterGuard answers 422 on any operation (a control character in a path or query parameter, one it reads or
     * not), so every operation declares it with the error body: GET /v1/jobs/{id}, cancel and the admin reads had
     * declared no 422 while answering one.
     */
    @Test
    void theParameterGuardsAnswerIsDeclaredEverywhere() {
        String key = app.newTenantKey(TestApp.uniqueTenant("oas422"));
        List<String> undeclared = new ArrayList<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fields().forEachRemaining(op -> {
            if (!"#/components/schemas/Error".equals(op.getValue().at("/responses/422/content/application~1json/schema/$ref").asText())) {
                undeclared.add(op.getKey().toUpperCase() + " " + p.getKey());
            }
        }));
        assertEquals(List.of(), undeclared, "operations without the 422 they answer");

        for (String[] call : List.of(new String[]{"GET", "/v1/jobs/%C2%85", "/v1/jobs/{id}"},
                new String[]{"POST", "/v1/jobs/%C2%85/cancel", "/v1/jobs/{id}/cancel"},
                new String[]{"GET", "/v1/stats?x=%01", "/v1/stats"})) {
            TestApp.Res r = app.call(call[0], call[1], key, null);
            assertEquals(422, r.status(), call[1] + " -> " + r);
            assertFalse(doc.at("/paths/" + call[2].replace("/", "~1") + "/" + call[0].toLowerCase() + "/responses/422").isMissingNode(),
                    call[0] + " " + call[2] + " declares the 422 it answered");
            List<String> misfits = new ArrayList<>();
            fits("Error", r.body(), misfits);
            assertEquals(List.of(), misfits, r.toString());
        }
    }

    /**
     * Every 4xx the document declares has the error body, outside /v1 too: the dashboard asset's 404 was declared as an
     * empty answer of any type, while the server answers {"error": "HTTP 404 Not Found"} as application/json.
     */
    @Test
    void every4xxDeclaresTheErrorBody() {
        List<String> bare = new ArrayList<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fields().forEachRemaining(op ->
                op.getValue().path("responses").fields().forEachRemaining(r -> {
                    if (r.getKey().startsWith("4") && !"#/components/schemas/Error".equals(
                            r.getValue().at("/content/application~1json/schema/$ref").asText())) {
                        bare.add(op.getKey().toUpperCase() + " " + p.getKey() + " " + r.getKey());
                    }
                })));
        assertEquals(List.of(), bare, "4xx answers declared without the error body");
        TestApp.Res missing = app.call("GET", "/dashboard/static/nosuch.js", null, null);
        assertEquals(404, missing.status(), missing.toString());
        assertTrue(missing.header("Content-Type").startsWith("application/json"), missing.toString());
        List<String> misfits = new ArrayList<>();
        fits("Error", missing.body(), misfits);
        assertEquals(List.of(), misfits, missing.toString());
    }

    /** A limits body's id is not ignored, as the document had said: another tenant's id is a 422, the path's own is taken. */
    @Test
    void aLimitsBodysIdIsDescribedAsTheServerTreatsIt() {
        String desc = doc.at("/components/schemas/TenantLimitsChange/properties/id/description").asText();
        assertFalse(desc.contains("ignored"), desc);
        assertTrue(desc.contains("422"), desc);
        String tenant = TestApp.uniqueTenant("oasid");
        app.admin("PUT", "/v1/admin/tenants/" + tenant, "{\"id\": \"someone-else\", \"weight\": 2}").assertRefused(422, "id");
        TestApp.Res same = app.admin("PUT", "/v1/admin/tenants/" + tenant, "{\"id\": \"" + tenant + "\", \"weight\": 2}");
        assertEquals(201, same.status(), same.toString());
    }

    /**
     * The bearer schemes as the server holds them: an Authorization header of another scheme, or one without a token,
     * is a 401 with WWW-Authenticate that says what is wrong with it; it had said the header was missing.
     */
    @Test
    void anAuthorizationOfAnotherSchemeIsToldSo() throws Exception {
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        for (String header : List.of("Basic Zm9vOmJhcg==", "Bearer", TestApp.ADMIN_TOKEN)) {
            java.net.http.HttpResponse<String> r = http.send(java.net.http.HttpRequest.newBuilder(
                            java.net.URI.create("http://localhost:" + app.support.getLocalPort() + "/v1/admin/workers"))
                    .header("Authorization", header).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(401, r.statusCode(), header);
            assertTrue(r.headers().firstValue("WWW-Authenticate").orElse("").startsWith("Bearer"), header);
            JsonNode body = TestApp.JSON.readTree(r.body());
            assertEquals("the Authorization header must be 'Bearer <token>' (a tenant key or an admin token), not another "
                    + "scheme or an empty token", body.get("error").asText(), header);
        }
        TestApp.Res none = app.call("GET", "/v1/admin/workers", null, null);
        assertEquals(401, none.status());
        assertEquals("missing 'Authorization: Bearer <token>'", none.body().get("error").asText());
        assertEquals(200, app.admin("GET", "/v1/admin/workers", null).status());
    }

    /**
     * Every operation has a name of its own: swagger had numbered the methods that share a Java name (get_1 read a job,
     * list_2 listed jobs, get_2 was this document), so a generated client's methods read get_1(id), and the numbers
     * follow the order the resource classes are read in, which a new resource can change.
     */
    @Test
    void everyOperationIdIsANameNotANumber() {
        java.util.Map<String, String> ids = new java.util.TreeMap<>();
        List<String> numbered = new ArrayList<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fields().forEachRemaining(op -> {
            String id = op.getValue().path("operationId").asText();
            String where = op.getKey().toUpperCase() + " " + p.getKey();
            if (id.isEmpty() || id.matches(".*_\\d+") || ids.put(id, where) != null) numbered.add(where + ": '" + id + "'");
        }));
        assertEquals(List.of(), numbered, "operations without a name of their own");
        assertEquals("GET /v1/jobs/{id}", ids.get("getJob"));
        assertEquals("GET /v1/jobs", ids.get("listJobs"));
        assertEquals("POST /v1/admin/jobs/{id}/cancel", ids.get("adminCancelJob"));
    }

    /** Every page size is declared a bounded integer (the tenant and schedule lists declared a string). */
    @Test
    void everyLimitIsABoundedInteger() {
        List<String> loose = new ArrayList<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fields().forEachRemaining(op -> {
            for (JsonNode param : op.getValue().path("parameters")) {
                if (!param.path("name").asText().equals("limit")) continue;
                JsonNode schema = param.path("schema");
                if (!schema.path("type").asText().equals("integer") || schema.path("minimum").asInt(0) != 1 || !schema.has("maximum")) {
                    loose.add(op.getKey().toUpperCase() + " " + p.getKey() + ": " + schema);
                }
            }
        }));
        assertEquals(List.of(), loose, "limits not declared as integers from 1 to a maximum");
    }

    /**
     * Every integer query parameter declares the maximum the server holds to: the overview's offset was an int64 without
     * one, and a generated client sent 2147483648, which the server answers 422.
     */
    @Test
    void everyIntegerQueryParameterDeclaresItsMaximum() {
        List<String> open = new ArrayList<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fields().forEachRemaining(op -> {
            for (JsonNode param : op.getValue().path("parameters")) {
                JsonNode schema = param.path("schema");
                if (param.path("in").asText().equals("query") && schema.path("type").asText().equals("integer") && !schema.has("maximum")) {
                    open.add(op.getKey().toUpperCase() + " " + p.getKey() + " " + param.path("name").asText());
                }
            }
        }));
        assertEquals(List.of(), open, "integer query parameters without a maximum");
        JsonNode offset = null;
        for (JsonNode param : doc.at("/paths/~1v1~1admin~1overview/get/parameters")) {
            if (param.path("name").asText().equals("offset")) offset = param.path("schema");
        }
        long max = offset.path("maximum").asLong();
        assertEquals(200, app.admin("GET", "/v1/admin/overview?offset=" + max, null).status());
        app.admin("GET", "/v1/admin/overview?offset=" + (max + 1), null).assertRefused(422, "offset");
    }

    /** A batch's size bound is declared: the document had offered any number of jobs, and 1,001 is a 422. */
    @Test
    void aBatchDeclaresHowManyJobsItTakes() {
        JsonNode jobs = doc.at("/components/schemas/BatchSubmission/properties/jobs");
        assertEquals(1, jobs.path("minItems").asInt(-1), jobs.toString());
        assertEquals(BatchSubmission.MAX_BATCH, jobs.path("maxItems").asInt(-1), jobs.toString());
    }

    /** An allow-list entry is never null (webhook_allow: [null] is a 422), and the document had declared it nullable. */
    @Test
    void anAllowListEntryIsNeverNull() {
        for (String schema : List.of("TenantLimitsChange", "Tenant", "TenantLimits")) {
            JsonNode items = doc.at("/components/schemas/" + schema + "/properties/webhook_allow/items");
            assertEquals("string", items.path("type").asText(), schema + ": " + items);
            assertFalse(items.path("nullable").asBoolean(false), schema + ": " + items);
        }
        String tenant = TestApp.uniqueTenant("oasallow");
        app.newTenantKey(tenant);
        app.admin("PATCH", "/v1/admin/tenants/" + tenant, "{\"webhook_allow\": [null]}").assertRefused(422, "webhook_allow[0]");
    }

    /** The admin overview's paging declares its defaults (they were only in the descriptions' text). */
    @Test
    void theOverviewsPagingDeclaresItsDefaults() {
        java.util.Map<String, String> defaults = new java.util.HashMap<>();
        for (JsonNode param : doc.path("paths").path("/v1/admin/overview").path("get").path("parameters")) {
            defaults.put(param.path("name").asText(), param.path("schema").path("default").asText(null));
        }
        assertEquals("0", defaults.get("offset"));
        assertEquals("50", defaults.get("limit"));
    }

    /**
     * A schedule's choices and bounds are in the document, as the job's and the limits' are: it had offered any
     * string for missed_runs, overlap and last_fire.outcome and any number for backfill_limit and a template's
     * priority, so a generated client let through what the server answers 422 to.
     */
    @Test
    void scheduleChoicesAndBoundsAreDeclared() {
        JsonNode s = doc.at("/components/schemas");
        for (String schema : List.of("ScheduleDefinition", "ScheduleInfo")) {
            JsonNode p = s.at("/" + schema + "/properties");
            assertEquals("[\"skip\",\"run_once\",\"run_all\"]", p.at("/missed_runs/enum").toString(), schema);
            assertEquals("[\"allow\",\"skip\",\"queue\"]", p.at("/overlap/enum").toString(), schema);
            assertEquals("1-1000", p.at("/backfill_limit/minimum").asText() + "-" + p.at("/backfill_limit/maximum").asText(), schema);
        }
        assertEquals(200, s.at("/ScheduleDefinition/properties/cron/maxLength").asInt());
        assertFalse(s.at("/ScheduleDefinition/additionalProperties").asBoolean(true), "unknown fields are a 422");
        JsonNode t = s.at("/JobTemplate/properties");
        assertEquals("-100-100", t.at("/priority/minimum").asText() + "-" + t.at("/priority/maximum").asText());
        assertEquals("1-1000", t.at("/max_attempts/minimum").asText() + "-" + t.at("/max_attempts/maximum").asText());
        assertEquals("1-86400000", t.at("/timeout_ms/minimum").asText() + "-" + t.at("/timeout_ms/maximum").asText());
        assertEquals("1-1000000", t.at("/payload_version/minimum").asText() + "-" + t.at("/payload_version/maximum").asText());
        assertEquals(s.at("/JobSubmission/properties/type/pattern"), t.at("/type/pattern"));
        assertEquals("[\"enqueued\",\"skipped_overlap\",\"queue_full\",\"invalid\"]", s.at("/Fire/properties/outcome/enum").toString());
        // an explanation's status is a job's status, and declared as one (it was a bare string)
        assertEquals(s.at("/Job/properties/status/enum"), s.at("/Explanation/properties/status/enum"));
        assertEquals(6, s.at("/Explanation/properties/status/enum").size());

        // and the server holds to them: a value outside the declared choices is refused naming the field
        String key = app.newTenantKey(TestApp.uniqueTenant("oassched"));
        app.call("PUT", "/v1/schedules/choices", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}, "
                + "\"missed_runs\": \"run_some\"}").assertRefused(422, "missed_runs");
        TestApp.Res ok = app.call("PUT", "/v1/schedules/choices", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", "
                + "\"job\": {\"type\": \"record\", \"priority\": 100}, \"missed_runs\": \"run_all\", \"backfill_limit\": 1000}");
        assertEquals(201, ok.status(), ok.toString());
        List<String> misfits = new ArrayList<>();
        fits("ScheduleInfo", ok.body(), misfits);
        assertEquals(List.of(), misfits);
    }

    /**
     * A PUT of a schedule without cron, time_zone or job (or a job without type) is a 422, so the PUT's schema requires
     * them; the PATCH's, a merge patch of any subset, requires nothing. Both had shared one schema with nothing required.
     */
    @Test
    void aSchedulePutDeclaresWhatItRequires() {
        JsonNode put = doc.at("/paths/~1v1~1schedules~1{name}/put/requestBody/content/application~1json/schema/$ref");
        assertEquals("#/components/schemas/ScheduleCreate", put.asText());
        JsonNode s = doc.at("/components/schemas");
        assertEquals("[\"cron\",\"job\",\"time_zone\"]", s.at("/ScheduleCreate/required").toString()); // sorted output
        assertEquals("#/components/schemas/JobTemplateCreate", s.at("/ScheduleCreate/properties/job/$ref").asText());
        assertEquals("[\"type\"]", s.at("/JobTemplateCreate/required").toString());
        assertTrue(s.at("/ScheduleDefinition/required").isMissingNode(), "a PATCH requires nothing");
        assertEquals("#/components/schemas/ScheduleDefinition",
                doc.at("/paths/~1v1~1schedules~1{name}/patch/requestBody/content/application~1json/schema/$ref").asText());
        assertEquals(s.at("/ScheduleDefinition/properties/cron/maxLength"), s.at("/ScheduleCreate/properties/cron/maxLength"));
        // a template's payload is any JSON value in a PUT too (the copy had made it "type": "object")
        assertEquals(s.at("/JobTemplate/properties/payload"), s.at("/JobTemplateCreate/properties/payload"));
        assertTrue(s.at("/JobTemplateCreate/properties/payload/type").isMissingNode(), s.at("/JobTemplateCreate/properties/payload").toString());

        // the server refuses what the schema leaves out, naming the field, and takes the least it allows
        String key = app.newTenantKey(TestApp.uniqueTenant("oasput"));
        app.call("PUT", "/v1/schedules/least", key, "{\"cron\": \"@daily\", \"job\": {\"type\": \"record\"}}").assertRefused(422, "time_zone");
        app.call("PUT", "/v1/schedules/least", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {}}").assertRefused(422, "job.type");
        TestApp.Res ok = app.call("PUT", "/v1/schedules/least", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}");
        assertEquals(201, ok.status(), ok.toString());
        TestApp.Res list = app.call("PUT", "/v1/schedules/array", key, "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\", \"payload\": [1, 2]}}");
        assertEquals(201, list.status(), list.toString());
    }

    /** A trigger enqueues a job: a tenant at max_queued gets a 429, which the document had described as the request limit only. */
    @Test
    void aTriggerDeclaresTheQueueFullRefusalItAnswers() {
        String desc = doc.at("/paths/~1v1~1schedules~1{name}~1trigger/post/responses/429/description").asText();
        assertTrue(desc.contains("max_queued") && desc.contains("api_rate_per_second"), desc);
        String tenant = TestApp.uniqueTenant("oatrigger");
        String key = app.newTenantKey(tenant);
        assertEquals(201, app.call("PUT", "/v1/schedules/full", key,
                "{\"cron\": \"@daily\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}").status());
        assertEquals(201, app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}").status());
        app.changeLimits(tenant, "{\"max_queued\": 1}");
        TestApp.Res r = app.call("POST", "/v1/schedules/full/trigger", key, null);
        assertEquals(429, r.status(), r.toString());
        assertNotNull(r.header("Retry-After"));
    }

    /** OpenAPI 3.0: a header, like a parameter, must have a schema or a content (the schedule headers had neither). */
    @Test
    void everyResponseHeaderHasASchema() {
        List<String> bare = new ArrayList<>();
        doc.get("paths").fields().forEachRemaining(p -> p.getValue().fields().forEachRemaining(op ->
                op.getValue().path("responses").fields().forEachRemaining(r -> r.getValue().path("headers").fields()
                        .forEachRemaining(h -> {
                            if (!h.getValue().has("schema") && !h.getValue().has("content")) {
                                bare.add(op.getKey().toUpperCase() + " " + p.getKey() + " " + r.getKey() + " " + h.getKey());
                            }
                        }))));
        assertEquals(List.of(), bare, "headers without a schema");
    }

    /**
     * Real answers fit their schemas value by value: a field the server sends as null is declared nullable, and
     * each value has the declared type (explain's data held numbers where the document said objects).
     */
    @Test
    void realAnswersFitTheirSchemasNullsIncluded() {
        String tenant = TestApp.uniqueTenant("oasnull");
        String key = app.newTenantKey(tenant);
        TestApp.Res job = app.call("POST", "/v1/jobs", key, "{\"type\": \"record\", \"payload\": {}, \"delay_ms\": 3600000}");
        long id = job.body().get("id").asLong();
        List<String> misfits = new ArrayList<>();
        fits("Job", job.body(), misfits);
        fits("JobPage", app.call("GET", "/v1/jobs", key, null).body(), misfits);
        fits("Explanation", app.call("GET", "/v1/jobs/" + id + "/explain", key, null).body(), misfits);
        fits("Job", app.call("POST", "/v1/jobs/" + id + "/cancel", key, null).body(), misfits);
        fits("Explanation", app.call("GET", "/v1/jobs/" + id + "/explain", key, null).body(), misfits);
        fits("Stats", app.call("GET", "/v1/stats", key, null).body(), misfits);
        TestApp.Res schedule = app.call("PUT", "/v1/schedules/nulls", key,
                "{\"cron\": \"0 3 * * *\", \"time_zone\": \"UTC\", \"job\": {\"type\": \"record\"}}");
        assertEquals(201, schedule.status(), schedule.toString());
        fits("ScheduleInfo", schedule.body(), misfits);
        fits("Page", app.call("GET", "/v1/schedules", key, null).body(), misfits);
        fits("Job", app.call("POST", "/v1/schedules/nulls/trigger", key, null).body(), misfits);
        fits("Tenant", app.admin("GET", "/v1/admin/tenants/" + tenant, null).body(), misfits);
        fits("KeyList", app.admin("GET", "/v1/admin/tenants/" + tenant + "/keys", null).body(), misfits);
        fits("Workers", app.admin("GET", "/v1/admin/workers", null).body(), misfits);
        fits("AdminTokenList", app.admin("GET", "/v1/admin/tokens", null).body(), misfits);
        fits("Error", app.call("GET", "/v1/jobs/" + Long.MAX_VALUE, key, null).body(), misfits);
        assertEquals(List.of(), misfits, "answers that do not fit the document");
    }

    private static void fits(String schema, JsonNode answer, List<String> misfits) {
        fits(schema, doc.at("/components/schemas/" + schema), answer, misfits);
    }

    /** A small OpenAPI 3.0 check: $ref, allOf, nullable, type, properties, items and additionalProperties. */
    private static void fits(String where, JsonNode schema, JsonNode value, List<String> misfits) {
        boolean nullable = schema.path("nullable").asBoolean(false);
        while (schema.has("$ref") || schema.path("allOf").size() == 1) {
            schema = schema.has("$ref") ? doc.at(schema.get("$ref").asText().substring(1)) : schema.get("allOf").get(0);
            nullable |= schema.path("nullable").asBoolean(false);
        }
        if (value.isNull()) {
            if (!nullable) misfits.add(where + ": null, not declared nullable");
            return;
        }
        String type = schema.path("type").asText(schema.has("properties") ? "object" : "");
        boolean ok = switch (type) {
            case "string" -> value.isTextual();
            case "integer" -> value.isIntegralNumber();
            case "number" -> value.isNumber();
            case "boolean" -> value.isBoolean();
            case "array" -> value.isArray();
            case "object" -> value.isObject();
            default -> true;
        };
        if (!ok) {
            misfits.add(where + ": " + value + " is not " + type);
            return;
        }
        if (value.isArray()) {
            for (int i = 0; i < value.size(); i++) fits(where + "[" + i + "]", schema.path("items"), value.get(i), misfits);
        }
        if (value.isObject()) {
            final JsonNode s = schema;
            value.fields().forEachRemaining(f -> {
                JsonNode p = s.path("properties").path(f.getKey());
                if (p.isMissingNode() && s.path("additionalProperties").isObject()) p = s.get("additionalProperties");
                if (!p.isMissingNode()) fits(where + "." + f.getKey(), p, f.getValue(), misfits);
            });
        }
    }

    private static void assertFields(String schema, JsonNode answer) {
        JsonNode props = doc.at("/components/schemas/" + schema + "/properties");
        assertFalse(props.isMissingNode(), "no schema " + schema);
        Set<String> declared = new TreeSet<>(iterable(props.fieldNames()));
        Set<String> actual = new TreeSet<>(iterable(answer.fieldNames()));
        if (schema.equals("Error")) declared.retainAll(actual); // errors is left out when empty
        assertEquals(declared, actual, schema + " against " + answer);
    }

    private static <T> List<T> iterable(Iterator<T> it) {
        List<T> out = new ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }
}

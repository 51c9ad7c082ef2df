package dev.fairq.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.fairq.schema.TenantLimit;
import io.swagger.v3.core.converter.ModelConverters;
import io.swagger.v3.core.jackson.ModelResolver;
import io.swagger.v3.core.util.Json;
import io.swagger.v3.jaxrs2.Reader;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import io.swagger.v3.oas.annotations.tags.Tag;
import io.swagger.v3.oas.integration.SwaggerConfiguration;
import io.swagger.v3.oas.models.Components;
import io.swagger.v3.oas.models.OpenAPI;
import io.swagger.v3.oas.models.PathItem;
import io.swagger.v3.oas.models.Paths;
import io.swagger.v3.oas.models.headers.Header;
import io.swagger.v3.oas.models.info.Info;
import io.swagger.v3.oas.models.media.ArraySchema;
import io.swagger.v3.oas.models.media.MediaType;
import io.swagger.v3.oas.models.media.Schema;
import io.swagger.v3.oas.models.media.StringSchema;
import io.swagger.v3.oas.models.responses.ApiResponses;
import io.swagger.v3.oas.models.security.SecurityRequirement;
import io.swagger.v3.oas.models.security.SecurityScheme;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Response;

import java.math.BigDecimal;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * {@code GET /openapi.json}, without authentication: the OpenAPI 3 document of every resource Jersey serves,
 * read by swagger-core from the resources' JAX-RS, swagger and Bean Validation annotations (so a new endpoint
 * appears without anyone writing it down), then completed by the rules every endpoint shares: the bearer
 * schemes, 401 and 403 on /v1, 400, 413 and 422 where there is a body, the error body on every 4xx, and the tenant
 * limits' ranges from {@link TenantLimit}. Built once, on the first request.
 */
@Path("/openapi.json")
@Tag(name = "contract")
@jakarta.annotation.security.PermitAll // the contract is public
public final class OpenApiDocument {
    static final String TENANT_KEY = "tenantKey";
    static final String ADMIN_TOKEN = "adminToken";
    private static final String ERROR = "#/components/schemas/Error";

    private final Supplier<Set<Class<?>>> resources;
    private final ObjectMapper mapper;
    private volatile String document;

    /** @param resources the resource classes Jersey serves, asked for once the application is built */
    OpenApiDocument(Supplier<Set<Class<?>>> resources, ObjectMapper mapper) {
        this.resources = resources;
        this.mapper = mapper;
    }

    @GET
    @Produces(jakarta.ws.rs.core.MediaType.APPLICATION_JSON)
    @Operation(operationId = "openapi", summary = "This document: OpenAPI 3 of every endpoint", security = {}, responses =
            @ApiResponse(responseCode = "200", content = @Content(schema = @io.swagger.v3.oas.annotations.media.Schema(type = "object"))))
    public Response get() {
        String d = document;
        if (d == null) {
            synchronized (this) {
                if (document == null) document = Json.pretty(build());
                d = document;
            }
        }
        return Response.ok(d).build();
    }

    OpenAPI build() {
        useNamesOf(mapper);
        OpenAPI base = new OpenAPI()
                .info(new Info().title("fairq").version("1")
                        .description("Multi-tenant, fair-scheduling background jobs on PostgreSQL. Tenants call /v1 "
                                + "with their API key, admins /v1/admin with the admin token; see api/README.md."))
                .components(new Components()
                        .addSecuritySchemes(TENANT_KEY, new SecurityScheme().type(SecurityScheme.Type.HTTP).scheme("bearer")
                                .description("a tenant's API key (fqk_...), made by POST /v1/admin/tenants/{id}/keys"))
                        .addSecuritySchemes(ADMIN_TOKEN, new SecurityScheme().type(SecurityScheme.Type.HTTP).scheme("bearer")
                                .description("an admin token (fqa_..., printed on the first start or made by POST /v1/admin/tokens; or FAIRQ_ADMIN_TOKEN)")));
        SwaggerConfiguration config = new SwaggerConfiguration().openAPI(base).readAllResources(true)
                .sortOutput(true).prettyPrint(true);
        Set<Class<?>> classes = new LinkedHashSet<>(resources.get());
        OpenAPI api = new Reader(config).read(classes);
        complete(api);
        return api;
    }

    private static boolean snakeCase;

    /**
     * swagger's Reader reads models through the process-wide ModelConverters; the first converter added wins,
     * and ours names properties as the application's mapper does (snake_case). Once per process.
     */
    private static synchronized void useNamesOf(ObjectMapper mapper) {
        if (snakeCase) return;
        ModelConverters.getInstance().addConverter(new ModelResolver(mapper.copy()));
        ModelConverters.getInstance().addConverter(new NullableReferences()); // first: sees every property
        snakeCase = true;
    }

    /**
     * Answers carry every field, null ones too ({@code "job_key": null}), and OpenAPI 3.0 allows null only where
     * a schema says {@code nullable: true}. So a property whose Java type is a reference type (String, Long,
     * Instant, a list, ...) is declared nullable; a primitive (long, int, boolean) never is. Fields that are in
     * fact never null are declared nullable too: looser than they are, never wrong about a real answer. Object
     * properties are references to their schema and are left alone (see {@link #complete} for those that can
     * be null).
     */
    static final class NullableReferences implements io.swagger.v3.core.converter.ModelConverter {
        @Override
        @SuppressWarnings("rawtypes")
        public Schema resolve(io.swagger.v3.core.converter.AnnotatedType type,
                              io.swagger.v3.core.converter.ModelConverterContext context,
                              java.util.Iterator<io.swagger.v3.core.converter.ModelConverter> chain) {
            if (!chain.hasNext()) return null;
            Schema s = chain.next().resolve(type, context, chain);
            boolean primitive = type.getType() instanceof com.fasterxml.jackson.databind.JavaType j ? j.isPrimitive()
                    : type.getType() instanceof Class<?> c && c.isPrimitive();
            if (s != null && type.isSchemaProperty() && type.getPropertyName() != null && !primitive
                    && s.get$ref() == null && s.getProperties() == null) {
                s.setNullable(true);
            }
            return s;
        }
    }

    private static void complete(OpenAPI api) {
        Paths sorted = new Paths();
        new TreeMap<>(api.getPaths()).forEach(sorted::addPathItem);
        api.setPaths(sorted);
        sorted.forEach((path, item) -> item.readOperationsMap().forEach((method, op) -> {
            ApiResponses responses = op.getResponses();
            responses.forEach((code, r) -> {
                if (r.getDescription() == null) {
                    Response.Status status = Response.Status.fromStatusCode(Integer.parseInt(code));
                    r.setDescription(status == null ? code : status.getReasonPhrase());
                }
            });
            // ParameterGuard runs before every resource: any operation answers its 422, parameters declared or not
            String guard = "a path or query parameter holds a control character, or one such as limit is given twice "
                    + "(named in errors); nothing was done";
            io.swagger.v3.oas.models.responses.ApiResponse r422 = responses.get("422");
            if (r422 != null) {
                r422.setDescription(r422.getDescription() + "; or " + guard);
            } else {
                responses.addApiResponse("422", new io.swagger.v3.oas.models.responses.ApiResponse()
                        .description((op.getRequestBody() != null
                                ? "invalid or unknown fields, each named in errors; nothing was written; or " : "") + guard)
                        .content(new io.swagger.v3.oas.models.media.Content().addMediaType("application/json",
                                new MediaType().schema(new Schema<>().$ref(ERROR)))));
            }
            if (path.startsWith("/v1/")) {
                boolean admin = path.startsWith("/v1/admin/");
                if (op.getSecurity() == null || op.getSecurity().isEmpty()) {
                    op.addSecurityItem(new SecurityRequirement().addList(admin ? ADMIN_TOKEN : TENANT_KEY));
                }
                responses.putIfAbsent("401", new io.swagger.v3.oas.models.responses.ApiResponse()
                        .description("no bearer token, or an unknown or revoked one")
                        .addHeaderObject("WWW-Authenticate", new Header().schema(new StringSchema())));
                responses.putIfAbsent("403", new io.swagger.v3.oas.models.responses.ApiResponse().description(admin
                        ? "a tenant key on the admin API" : "the admin token on a tenant's endpoint"));
                if (!admin) {
                    String over = "the tenant is over its API request limit (api_rate_per_second, api_burst); nothing was done";
                    io.swagger.v3.oas.models.responses.ApiResponse r429 = responses.get("429");
                    if (r429 == null) {
                        responses.put("429", new io.swagger.v3.oas.models.responses.ApiResponse().description(over)
                                .addHeaderObject("Retry-After", new Header().description("seconds to wait")
                                        .schema(new io.swagger.v3.oas.models.media.IntegerSchema())));
                    } else {
                        r429.setDescription(r429.getDescription() + "; or " + over);
                    }
                }
                if (op.getRequestBody() != null) {
                    responses.putIfAbsent("400", new io.swagger.v3.oas.models.responses.ApiResponse()
                            .description("the body is not a JSON object"));
                    // every body is read through one cap (JsonBodyReader.readCapped)
                    String cap = "the body is over 1,000 x (FAIRQ_MAX_PAYLOAD_BYTES + 8 KiB), at most 256 MiB: refused unread";
                    io.swagger.v3.oas.models.responses.ApiResponse r413 = responses.get("413");
                    if (r413 == null) responses.addApiResponse("413", new io.swagger.v3.oas.models.responses.ApiResponse().description(cap));
                    else r413.setDescription(r413.getDescription() + "; or " + cap);
                }
                responses.forEach((code, r) -> {
                    if (code.startsWith("4") && r.getContent() == null) {
                        r.setContent(new io.swagger.v3.oas.models.media.Content().addMediaType("application/json",
                                new MediaType().schema(new Schema<>().$ref(ERROR))));
                    }
                });
            }
        }));
        Map<String, Schema> schemas = api.getComponents().getSchemas();
        ModelConverters.getInstance().readAll(new io.swagger.v3.core.converter.AnnotatedType(ErrorBody.class))
                .forEach(schemas::putIfAbsent);
        // "any JSON value": no type at all (swagger would describe Jackson's JsonNode class)
        for (Schema<?> s : schemas.values()) {
            if (s.getProperties() == null) continue;
            s.getProperties().replaceAll((name, p) -> "#/components/schemas/JsonNode".equals(p.get$ref())
                    ? new Schema<>().description(p.getDescription() != null ? p.getDescription() : "any JSON value") : p);
        }
        for (String s : List.of("JobSubmission", "Job")) {
            schemas.get(s).getProperties().put("payload", new Schema<>().description("any JSON value"));
        }
        // unknown fields are a 422: say so, so that generated clients refuse them too
        for (String s : List.of("JobSubmission", "BatchSubmission", "TenantLimitsChange")) {
            schemas.get(s).setAdditionalProperties(false);
        }
        // the batch's size, as BatchSubmission.check holds it: swagger-core does not read the record component's
        // @ArraySchema, and the document had offered any number of jobs, where 0 or 1,001 is a 422
        Schema batch = (Schema) schemas.get("BatchSubmission").getProperties().get("jobs");
        batch.setMinItems(1);
        batch.setMaxItems(BatchSubmission.MAX_BATCH);
        schemas.remove("JsonNode"); // Jackson's tree type, once named by the payload fields replaced above
        for (Schema<?> s : schemas.values()) {
            if (s.getProperties() == null) continue;
            // a Map<String, Object> (explain's data): values of any JSON type, not only objects
            s.getProperties().values().forEach(p -> {
                if (p.getAdditionalProperties() instanceof Schema<?> a && "object".equals(a.getType())
                        && a.getProperties() == null && a.getAdditionalProperties() == null) {
                    p.setAdditionalProperties(new Schema<>().description(a.getDescription()));
                }
            });
            // a required field is never null; nor is any field of a tenant's limits or a new token (null is a 422 there)
            boolean refusesNull = s == schemas.get("TenantLimitsChange") || s == schemas.get("NewAdminToken");
            s.getProperties().forEach((name, p) -> {
                if (refusesNull || (s.getRequired() != null && s.getRequired().contains(name))) p.setNullable(null);
            });
        }
        // the one object field an answer leaves null: a schedule's last_fire before its first fire. Its schema is used
        // there only, and nullable beside a $ref (allOf) does not admit null in OpenAPI 3.0: the schema says it
        schemas.get("Fire").setNullable(true);
        // it had said "ignored", and a generated client's user learnt otherwise from a 422 (TenantLimitsChange.check)
        schemas.get("TenantLimitsChange").addProperty("id", new StringSchema()
                .description("optional: the path names the tenant; an id other than the path's is a 422"));
        for (String s : List.of("TenantLimitsChange", "Tenant", "TenantLimits")) limits(schemas.get(s));
        schedules(schemas);
        schedulePut(api, schemas);
    }

    /**
     * A PUT replaces the whole schedule, so its body must have cron, time_zone and job, and the job its type; a PATCH
     * sends any subset. The PUT gets its own schemas, copies of the PATCH's with those fields required, so a client
     * generated from the document cannot build a PUT the server refuses for a missing field.
     */
    @SuppressWarnings({"rawtypes", "unchecked"})
    private static void schedulePut(OpenAPI api, Map<String, Schema> schemas) {
        Schema job = Json.mapper().convertValue(schemas.get("JobTemplate"), Schema.class);
        // the copy reads payload's untyped schema (any JSON value) back as "type": "object": keep the original, so a
        // generated client can send the arrays, strings and numbers the server takes
        job.getProperties().put("payload", schemas.get("JobTemplate").getProperties().get("payload"));
        job.setRequired(new java.util.ArrayList<>(List.of("type")));
        ((Schema) job.getProperties().get("type")).setNullable(null);
        Schema put = Json.mapper().convertValue(schemas.get("ScheduleDefinition"), Schema.class);
        put.setRequired(new java.util.ArrayList<>(List.of("cron", "time_zone", "job")));
        for (String f : List.of("cron", "time_zone")) ((Schema) put.getProperties().get(f)).setNullable(null);
        put.getProperties().put("job", new Schema<>().$ref("#/components/schemas/JobTemplateCreate")
                .description("the job each fire enqueues"));
        schemas.put("JobTemplateCreate", job);
        schemas.put("ScheduleCreate", put);
        api.getPaths().get("/v1/schedules/{name}").getPut().getRequestBody().getContent().values()
                .forEach(m -> m.setSchema(new Schema<>().$ref("#/components/schemas/ScheduleCreate")));
    }

    /**
     * A schedule's choices and bounds, from the constants the server checks them with: the scheduler module's
     * records carry no swagger annotations, so without this the document offered any string for missed_runs and
     * overlap and any number for a template's priority. PUT and PATCH share ScheduleDefinition, so nothing in it
     * is marked required (a PATCH sends any subset); the descriptions say what a PUT needs.
     */
    @SuppressWarnings({"rawtypes", "unchecked"})
    private static void schedules(Map<String, Schema> schemas) {
        for (String name : List.of("ScheduleDefinition", "ScheduleInfo")) {
            Map<String, Schema> p = schemas.get(name).getProperties();
            p.get("missed_runs").setEnum(new java.util.ArrayList<>(dev.fairq.scheduler.ScheduleDefinition.MISSED_RUNS));
            p.get("missed_runs").setDescription("default " + dev.fairq.scheduler.ScheduleDefinition.DEFAULT_MISSED_RUNS);
            p.get("overlap").setEnum(new java.util.ArrayList<>(dev.fairq.scheduler.ScheduleDefinition.OVERLAPS));
            p.get("overlap").setDescription("default " + dev.fairq.scheduler.ScheduleDefinition.DEFAULT_OVERLAP);
            bounds(p.get("backfill_limit"), 1, dev.fairq.scheduler.ScheduleDefinition.MAX_BACKFILL_LIMIT);
        }
        Map<String, Schema> d = schemas.get("ScheduleDefinition").getProperties();
        d.get("cron").maxLength(dev.fairq.scheduler.CronSchedule.MAX_LENGTH)
                .description("required in a PUT: five fields (minute hour day-of-month month day-of-week) or @hourly, @daily, @weekly, @monthly, @yearly");
        d.get("time_zone").description("required in a PUT: an IANA time zone such as Europe/Berlin or UTC");
        d.get("job").description("required in a PUT: the job each fire enqueues");
        for (String t : List.of("start_at", "end_at")) {
            d.get(t).format("date-time").description("RFC 3339, from 1970-01-01T00:00:00Z to 9000-01-01T00:00:00Z");
        }
        schemas.get("ScheduleDefinition").setAdditionalProperties(false);
        Schema template = schemas.get("JobTemplate");
        Map<String, Schema> j = template.getProperties();
        j.get("type").pattern(dev.fairq.schema.JobRequest.NAME_REGEX).description("required in a PUT: the handler that runs each fire's job");
        j.get("queue").pattern(dev.fairq.schema.JobRequest.NAME_REGEX).description("default " + dev.fairq.schema.JobRequest.DEFAULT_QUEUE);
        j.get("payload").description("any JSON value; default {}");
        bounds(j.get("priority"), dev.fairq.schema.JobRequest.MIN_PRIORITY, dev.fairq.schema.JobRequest.MAX_PRIORITY);
        bounds(j.get("max_attempts"), dev.fairq.schema.JobRequest.MIN_MAX_ATTEMPTS, dev.fairq.schema.JobRequest.MAX_MAX_ATTEMPTS);
        bounds(j.get("timeout_ms"), dev.fairq.schema.JobRequest.MIN_TIMEOUT_MS, dev.fairq.schema.JobRequest.MAX_TIMEOUT_MS);
        bounds(j.get("payload_version"), dev.fairq.schema.JobRequest.MIN_PAYLOAD_VERSION, dev.fairq.schema.JobRequest.MAX_PAYLOAD_VERSION);
        j.get("ordering_key").minLength(1).maxLength(dev.fairq.schema.JobRequest.MAX_KEY_LENGTH);
        template.setAdditionalProperties(false);
        ((Schema) schemas.get("Fire").getProperties().get("outcome")).setEnum(new java.util.ArrayList<>(dev.fairq.scheduler.ScheduleFirer.OUTCOMES));
    }

    @SuppressWarnings("rawtypes")
    private static void bounds(Schema p, long min, long max) {
        p.setMinimum(BigDecimal.valueOf(min));
        p.setMaximum(BigDecimal.valueOf(max));
    }

    /** Each limit's range and default, from its one declaration. */
    @SuppressWarnings({"rawtypes", "unchecked"})
    private static void limits(Schema<?> schema) {
        for (TenantLimit l : TenantLimit.values()) {
            Schema p = (Schema) schema.getProperties().get(l.field());
            if (p == null) continue;
            p.setDescription("default " + l.defaultValue());
            switch (l.kind()) {
                case WHOLE -> {
                    p.setMinimum(BigDecimal.valueOf(l.min()));
                    p.setMaximum(BigDecimal.valueOf(l.max()));
                }
                case POSITIVE_NUMBER -> {
                    p.setMinimum(BigDecimal.valueOf(l.min()));
                    p.setExclusiveMinimum(true);
                    p.setMaximum(BigDecimal.valueOf(l.max()));
                }
                case HOST_LIST -> {
                    p.setMaxItems(TenantLimit.MAX_ALLOW_LIST_ENTRIES);
                    if (p instanceof ArraySchema a && a.getItems() != null) {
                        a.getItems().setMaxLength((int) l.max());
                        a.getItems().setNullable(null); // an entry is never null: webhook_allow: [null] is a 422
                    }
                }
                case KEY_MAP -> {
                    p.setType("object");
                    p.setMaxProperties(TenantLimit.MAX_MAP_ENTRIES);
                    p.setAdditionalProperties(new io.swagger.v3.oas.models.media.IntegerSchema()
                            .minimum(BigDecimal.valueOf(l.min())).maximum(BigDecimal.valueOf(l.max())));
                    p.setDescription("default {} (none); keys of 1-" + TenantLimit.MAX_MAP_KEY_LENGTH + " characters");
                }
                default -> { }
            }
        }
    }
}

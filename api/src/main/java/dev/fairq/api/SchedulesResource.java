package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.scheduler.InvalidScheduleException;
import dev.fairq.scheduler.ScheduleDefinition;
import dev.fairq.scheduler.ScheduleInfo;
import dev.fairq.scheduler.ScheduleLimitException;
import dev.fairq.scheduler.ScheduleService;
import dev.fairq.schema.EnqueueResult;
import dev.fairq.schema.FieldError;
import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.Parameter;
import io.swagger.v3.oas.annotations.headers.Header;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import io.swagger.v3.oas.annotations.security.SecurityRequirement;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.PATCH;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.SecurityContext;
import jakarta.ws.rs.core.UriInfo;
import org.jooq.DSLContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * A tenant's recurring schedules (always the caller's tenant): create or replace, read (with the next five
 * fires and the last fire's job), list, change, delete, trigger. Requests are {@link ScheduleDefinition}s,
 * answers {@link ScheduleInfo}s; a field at fault is a 422 naming it.
 */
@Path("/v1/schedules")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "schedules", description = "a tenant's own recurring schedules")
@SecurityRequirement(name = OpenApiDocument.TENANT_KEY)
@jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.TENANT)
public final class SchedulesResource {
    static final int DEFAULT_LIMIT = 50;
    static final int MAX_LIMIT = 500;

    private final ScheduleService schedules;
    private final DSLContext db;

    private final int maxPayloadBytes;

    SchedulesResource(ScheduleService schedules, DSLContext db, int maxPayloadBytes) {
        this.schedules = schedules;
        this.db = db;
        this.maxPayloadBytes = maxPayloadBytes;
    }

    /** The body as JSON, read up to the one cap of every body (a 413 beyond it, unread). */
    private JsonNode body(java.io.InputStream entity) {
        try {
            return JsonBodyReader.readObject(JsonBodyReader.utf8(JsonBodyReader.readCapped(entity, maxPayloadBytes)));
        } catch (java.io.IOException e) {
            throw ApiException.badRequest("the request body could not be read");
        }
    }

    /** A page of schedules by name: pass {@code next} back as {@code after}. */
    public record Page(List<ScheduleInfo> schedules, String next) {}

    /** Create (201 + Location) or replace (200): fields left out take their defaults. */
    @PUT
    @Path("/{name}")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(operationId = "putSchedule", summary = "Create (201) or replace (200) a schedule", responses = {
            @ApiResponse(responseCode = "201", description = "created", headers = @Header(name = "Location", description = "the schedule's URL", schema = @Schema(type = "string", format = "uri")),
                    content = @Content(schema = @Schema(implementation = ScheduleInfo.class))),
            @ApiResponse(responseCode = "200", description = "replaced", content = @Content(schema = @Schema(implementation = ScheduleInfo.class))),
            @ApiResponse(responseCode = "400", description = "an If-None-Match other than *"),
            @ApiResponse(responseCode = "409", description = "the tenant is at max_schedules"),
            @ApiResponse(responseCode = "412", description = "If-None-Match: * and the schedule exists: nothing changed")})
    public Response put(@Context SecurityContext sc, @Context UriInfo uri, @PathParam("name") String name,
                        @Parameter(description = "* to create only: 412 if the schedule exists (a replace would overwrite a concurrent create)",
                                schema = @Schema(type = "string", allowableValues = "*")) @HeaderParam("If-None-Match") String ifNoneMatch,
                        @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true, content = @Content(schema = @Schema(implementation = ScheduleDefinition.class))) java.io.InputStream body) {
        JsonNode json = body(body);
        ScheduleDefinition definition = checked(() -> ScheduleDefinition.fromJson(json));
        String tenant = BearerAuthFilter.tenant(sc);
        ScheduleService.Written w = ApiException.createOnly(ifNoneMatch)
                ? checked(() -> schedules.create(db, tenant, name, definition)).orElseThrow(() -> ApiException.preconditionFailed(
                        "schedule " + name + " exists (If-None-Match: *): nothing changed"))
                : checked(() -> schedules.put(db, tenant, name, definition));
        if (w.created()) return Response.created(uri.getAbsolutePath()).entity(w.schedule()).build();
        return Response.ok(w.schedule()).build();
    }

    @GET
    @Path("/{name}")
    @Operation(operationId = "getSchedule", summary = "A schedule, with its next five fires and its last fire's job", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = ScheduleInfo.class))),
            @ApiResponse(responseCode = "404", description = "no schedule of that name")})
    public ScheduleInfo get(@Context SecurityContext sc, @PathParam("name") String name) {
        return schedules.get(db, BearerAuthFilter.tenant(sc), name).orElseThrow(() -> notFound(name));
    }

    @GET
    @Operation(operationId = "listSchedules", summary = "The tenant's schedules by name, a page at a time (pass next back as after)", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = Page.class))),
            @ApiResponse(responseCode = "422", description = "a bad limit or after")})
    public Page list(@Context SecurityContext sc, @Parameter(description = "schedules per page", schema = @Schema(type = "integer", minimum = "1", maximum = "" + MAX_LIMIT, defaultValue = "" + DEFAULT_LIMIT)) @QueryParam("limit") String limit,
                     @Parameter(description = "the next page: the previous page's next") @QueryParam("after") String after) {
        String tenant = BearerAuthFilter.tenant(sc);
        String afterName = blank(after);
        // a value no schedule can be named: a typo, not "past the end" (after=bad%20x had answered an empty page)
        if (afterName != null && !ScheduleDefinition.NAME.matcher(afterName).matches()) {
            throw ApiException.invalid("after", "must be the 'next' of the previous page (a schedule name)");
        }
        ScheduleService.Page p = schedules.list(db, tenant, afterName == null ? null : tenant, afterName, limit(limit));
        return new Page(p.schedules(), p.nextName());
    }

    /** Only the fields given (a JSON merge patch: {@code {"paused": true}}; null resets a field to its default). */
    @PATCH
    @Path("/{name}")
    @Consumes({MediaType.APPLICATION_JSON, JsonBodyReader.MERGE_PATCH})
    @Operation(operationId = "patchSchedule", summary = "Change only the fields given (a JSON merge patch, e.g. {\"paused\": true})", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = ScheduleInfo.class))),
            @ApiResponse(responseCode = "404", description = "no schedule of that name")})
    public ScheduleInfo patch(@Context SecurityContext sc, @PathParam("name") String name,
                              @io.swagger.v3.oas.annotations.parameters.RequestBody(required = true, description = "any subset of a schedule's fields",
                                      content = @Content(schema = @Schema(implementation = ScheduleDefinition.class))) java.io.InputStream body) {
        JsonNode patch = body(body);
        return checked(() -> schedules.patch(db, BearerAuthFilter.tenant(sc), name, patch)).orElseThrow(() -> notFound(name));
    }

    /** 204; the jobs it fired stay, a fire created ahead is withdrawn. */
    @DELETE
    @Path("/{name}")
    @Operation(summary = "Delete a schedule; the jobs it fired stay", responses = {
            @ApiResponse(responseCode = "204", description = "deleted"),
            @ApiResponse(responseCode = "404", description = "no schedule of that name")})
    public Response delete(@Context SecurityContext sc, @PathParam("name") String name) {
        if (!schedules.delete(db, BearerAuthFilter.tenant(sc), name)) throw notFound(name);
        return Response.noContent().build();
    }

    /**
     * Runs the schedule's job now: 201 + the job (job_key {@code schedule:<name>:trigger-<now to the second>});
     * a second trigger within the same second answers 200 with the same job and {@code Idempotent-Replay: true}.
     */
    @POST
    @Path("/{name}/trigger")
    @Operation(summary = "Run the schedule's job now (idempotent within the second)", responses = {
            @ApiResponse(responseCode = "201", description = "the job, created", headers = @Header(name = "Location", description = "the job's URL", schema = @Schema(type = "string", format = "uri")),
                    content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "200", description = "the same second's job, again", headers = @Header(name = "Idempotent-Replay", description = "always true", schema = @Schema(type = "string", allowableValues = "true")),
                    content = @Content(schema = @Schema(implementation = JobView.class))),
            @ApiResponse(responseCode = "404", description = "no schedule of that name"),
            // the job is enqueued like any other, so a tenant at max_queued is refused (the document had named only
            // the API request limit for this 429)
            @ApiResponse(responseCode = "429", description = "the tenant has max_queued jobs waiting; nothing was written",
                    headers = @Header(name = "Retry-After", description = "seconds to wait", schema = @Schema(type = "integer")))})
    public Response trigger(@Context SecurityContext sc, @Context UriInfo uri, @PathParam("name") String name) {
        EnqueueResult r = schedules.trigger(db, BearerAuthFilter.tenant(sc), name).orElseThrow(() -> notFound(name));
        JobView job = JobView.of(r.job());
        if (r.created()) {
            return Response.created(uri.getBaseUriBuilder().path("v1/jobs/{id}").build(job.id())).entity(job).build();
        }
        return Response.ok(job).header("Idempotent-Replay", "true").build();
    }

    static ApiException notFound(String name) {
        return ApiException.notFound("no schedule " + name);
    }

    /** Schedule errors as the API's: a field at fault is a 422, a tenant at max_schedules a 409. */
    static <T> T checked(Supplier<T> call) {
        try {
            return call.get();
        } catch (InvalidScheduleException e) {
            throw ApiException.invalid(e.errors());
        } catch (ScheduleLimitException e) {
            throw new ApiException(409, e.getMessage(), List.of(new FieldError("name", "the tenant has "
                    + e.schedules() + " schedules, its max_schedules is " + e.maxSchedules())), Map.of());
        }
    }

    static int limit(String limit) {
        return ParameterGuard.pageSize(limit, DEFAULT_LIMIT, MAX_LIMIT);
    }

    static String blank(String s) {
        return s == null || s.isBlank() ? null : s;
    }

    /** Admin: any tenant's schedules, page by page ({@code next} is {@code <tenant>:<name>}). */
    @Path("/v1/admin/schedules")
    @Produces(MediaType.APPLICATION_JSON)
    @Tag(name = "admin: schedules", description = "any tenant's schedules")
    @SecurityRequirement(name = OpenApiDocument.ADMIN_TOKEN)
    @jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.ADMIN)
    public static final class Admin {
        private final ScheduleService schedules;
        private final DSLContext db;

        Admin(ScheduleService schedules, DSLContext db) {
            this.schedules = schedules;
            this.db = db;
        }

        @GET
        @Operation(operationId = "adminListSchedules", summary = "Any tenant's schedules, a page at a time (next is <tenant>:<name>)", responses = {
                @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = Page.class))),
                @ApiResponse(responseCode = "422", description = "a bad limit or after")})
        public Page list(@QueryParam("tenant") String tenant, @Parameter(description = "schedules per page", schema = @Schema(type = "integer", minimum = "1", maximum = "" + MAX_LIMIT, defaultValue = "" + DEFAULT_LIMIT)) @QueryParam("limit") String limit,
                         @QueryParam("after") String after) {
            String afterTenant = null, afterName = null;
            if (blank(after) != null) {
                int colon = after.indexOf(':');
                afterTenant = colon < 1 ? "" : after.substring(0, colon);
                afterName = after.substring(colon + 1);
                if (!AdminTenantsResource.TENANT_ID.matcher(afterTenant).matches()
                        || !ScheduleDefinition.NAME.matcher(afterName).matches()) {
                    throw ApiException.invalid("after", "must be the 'next' of the previous page (<tenant>:<name>)");
                }
            }
            ScheduleService.Page p = schedules.list(db, blank(tenant), afterTenant, afterName, limit(limit));
            return new Page(new ArrayList<>(p.schedules()), p.nextTenant() == null ? null : p.nextTenant() + ":" + p.nextName());
        }

        @GET
        @Path("/{tenant}/{name}")
        @Operation(operationId = "adminGetSchedule", summary = "A tenant's schedule", responses = {
                @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = ScheduleInfo.class))),
                @ApiResponse(responseCode = "404", description = "no schedule of that name")})
        public ScheduleInfo get(@PathParam("tenant") String tenant, @PathParam("name") String name) {
            return schedules.get(db, tenant, name).orElseThrow(() -> notFound(name));
        }
    }
}

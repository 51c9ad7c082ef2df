package dev.fairq.api;

import dev.fairq.scheduler.TenantsFile;
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
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.SecurityContext;
import jakarta.ws.rs.core.UriInfo;

import java.time.Instant;
import java.util.List;
import java.util.regex.Pattern;

/** Admin: tenants, their limits (audited) and their API keys. */
@Path("/v1/admin/tenants")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "admin: tenants", description = "tenants, their limits (audited) and their API keys")
@SecurityRequirement(name = OpenApiDocument.ADMIN_TOKEN)
@jakarta.annotation.security.RolesAllowed(BearerAuthFilter.Role.ADMIN)
public final class AdminTenantsResource {
    static final Pattern TENANT_ID = TenantsFile.TENANT_ID;

    private final TenantAdminStore tenants;
    private final ApiKeyStore keys;

    AdminTenantsResource(TenantAdminStore tenants, ApiKeyStore keys) {
        this.tenants = tenants;
        this.keys = keys;
    }

    @Schema(name = "TenantList")
    public record TenantList(List<TenantView> tenants,
                             @Schema(description = "the last id of this page when there are more: pass it back as after; null on the last page")
                             String next) {}

    static final int DEFAULT_TENANTS_PAGE = 100, MAX_TENANTS_PAGE = 1_000;

    @Schema(name = "CreatedKey", description = "a new key: shown in this answer only, stored hashed")
    public record CreatedKey(String keyId, @Schema(description = "the bearer token for the tenant's requests") String key,
                             String tenant, Instant createdAt) {}

    @Schema(name = "KeyList")
    public record KeyList(List<ApiKeyStore.KeyInfo> keys) {}

    /**
     * A page of tenants by id (pass {@code next} back as {@code after}): never every tenant at once, which with a
     * million registered was a response of hundreds of megabytes. The admin overview is the view by load.
     */
    @GET
    @Operation(operationId = "listTenants", summary = "The tenants and their limits by id, a page at a time (pass next back as after)", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = TenantList.class))),
            @ApiResponse(responseCode = "422", description = "a bad limit or after")})
    public TenantList list(@Parameter(description = "tenants per page", schema = @Schema(type = "integer", minimum = "1", maximum = "" + MAX_TENANTS_PAGE, defaultValue = "" + DEFAULT_TENANTS_PAGE)) @jakarta.ws.rs.QueryParam("limit") String limit,
                           @Parameter(description = "the next page: the previous page's next") @jakarta.ws.rs.QueryParam("after") String after) {
        List<dev.fairq.schema.FieldError> errors = new java.util.ArrayList<>();
        int n = ParameterGuard.pageSize(limit, DEFAULT_TENANTS_PAGE, MAX_TENANTS_PAGE, errors);
        String from = after == null || after.isBlank() ? null : after;
        // a value no tenant can have: a typo, not a place in the list (after=BAD, sorting before 'a', had answered
        // the first page as if it were a cursor)
        if (from != null && !TENANT_ID.matcher(from).matches()) {
            errors.add(new dev.fairq.schema.FieldError("after", "must be the 'next' of the previous page (a tenant id)"));
        }
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        List<TenantView> page = tenants.page(from, n + 1);
        if (page.size() <= n) return new TenantList(page, null);
        List<TenantView> shown = page.subList(0, n);
        return new TenantList(shown, shown.get(n - 1).id());
    }

    @GET
    @Path("/{id}")
    @Operation(operationId = "getTenant", summary = "A tenant and its limits", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = TenantView.class))),
            @ApiResponse(responseCode = "404", description = "no such tenant")})
    public TenantView get(@PathParam("id") String id) {
        return requireTenant(id);
    }

    /** Create or replace: the limits left out take the defaults. 201 when created, 200 when replaced. */
    @PUT
    @Path("/{id}")
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(operationId = "putTenant", summary = "Create or replace a tenant: limits left out take the defaults (audited)", responses = {
            @ApiResponse(responseCode = "201", description = "created",
                    headers = @Header(name = "Location", description = "the tenant's URL", schema = @Schema(type = "string", format = "uri")),
                    content = @Content(schema = @Schema(implementation = TenantView.class))),
            @ApiResponse(responseCode = "200", description = "replaced", content = @Content(schema = @Schema(implementation = TenantView.class))),
            @ApiResponse(responseCode = "400", description = "an If-None-Match other than *"),
            @ApiResponse(responseCode = "412", description = "If-None-Match: * and the tenant exists: nothing changed"),
            @ApiResponse(responseCode = "422", description = "a bad tenant id or limit")})
    public Response put(@Parameter(description = "1-63 lower-case letters, digits, '_' or '-'") @PathParam("id") String id,
                        @Parameter(description = "* to create only: 412 if the tenant exists (a replace would overwrite a concurrent create)",
                                schema = @Schema(type = "string", allowableValues = "*")) @HeaderParam("If-None-Match") String ifNoneMatch,
                        @Context SecurityContext sc, @Context UriInfo uri, TenantLimitsChange body) {
        JsonBodyReader.required(body).checkId(id);
        checkId(id);
        TenantAdminStore.Change change;
        if (ApiException.createOnly(ifNoneMatch)) {
            change = tenants.create(id, body.given(), BearerAuthFilter.actor(sc))
                    .orElseThrow(() -> ApiException.preconditionFailed("tenant " + id + " exists (If-None-Match: *): nothing changed"));
        } else {
            change = tenants.write(id, body.given(), true, BearerAuthFilter.actor(sc)).orElseThrow();
        }
        keys.forget(id); // its verified keys carry the old API limits
        if (change.created()) return Response.created(uri.getAbsolutePath()).entity(change.tenant()).build();
        return Response.ok(change.tenant()).build();
    }

    /** A partial change: only the fields given. */
    @PATCH
    @Path("/{id}")
    @Consumes({MediaType.APPLICATION_JSON, JsonBodyReader.MERGE_PATCH})
    @Operation(operationId = "patchTenant", summary = "Change some of a tenant's limits; the others stay (audited, live within a second)", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = TenantView.class))),
            @ApiResponse(responseCode = "404", description = "no such tenant")})
    public TenantView patch(@PathParam("id") String id,
                            @Context SecurityContext sc, TenantLimitsChange body) {
        JsonBodyReader.required(body).checkId(id);
        TenantView changed = tenants.write(id, body.given(), false, BearerAuthFilter.actor(sc))
                .orElseThrow(() -> ApiException.notFound("no tenant " + id)).tenant();
        keys.forget(id); // its verified keys carry the old API limits
        return changed;
    }

    /** A new key, shown once in this answer; only its hash is kept. */
    @POST
    @Path("/{id}/keys")
    @Operation(summary = "A new API key for the tenant, shown once (audited: key_create)", responses = {
            @ApiResponse(responseCode = "201", content = @Content(schema = @Schema(implementation = CreatedKey.class))),
            @ApiResponse(responseCode = "404", description = "no such tenant")})
    public Response createKey(@PathParam("id") String id, @Context SecurityContext sc) {
        requireTenant(id);
        ApiKeyStore.CreatedKey k = keys.create(id, BearerAuthFilter.actor(sc));
        return Response.status(201).entity(new CreatedKey(k.keyId(), k.key(), k.tenantId(), JobView.utc(k.createdAt()))).build();
    }

    @GET
    @Path("/{id}/keys")
    @Operation(summary = "The tenant's keys (ids and dates, never the keys)", responses = {
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = KeyList.class))),
            @ApiResponse(responseCode = "404", description = "no such tenant")})
    public KeyList listKeys(@PathParam("id") String id) {
        requireTenant(id);
        return new KeyList(keys.list(id));
    }

    /**
     * Revoked at once: the next request with the key to this process gets 401, to another API process once it hears
     * of it (V14's notification; {@link ApiKeyStore#VERIFIED_TTL}, a second, while it hears nothing).
     */
    @DELETE
    @Path("/{id}/keys/{keyId}")
    @Operation(summary = "Revoke a key at once (audited: key_revoke; revoking twice is fine)", responses = {
            @ApiResponse(responseCode = "204", description = "revoked"),
            @ApiResponse(responseCode = "404", description = "the tenant has no such key")})
    public Response revokeKey(@PathParam("id") String id, @PathParam("keyId") String keyId,
                              @Context SecurityContext sc) {
        if (!keys.revoke(id, keyId, BearerAuthFilter.actor(sc))) throw ApiException.notFound("tenant " + id + " has no key " + keyId);
        return Response.noContent().build();
    }

    /** The tenant, or a 404 naming it. */
    private TenantView requireTenant(String id) {
        return tenants.find(id).orElseThrow(() -> ApiException.notFound("no tenant " + id));
    }

    static void checkId(String id) {
        if (!TENANT_ID.matcher(id).matches()) {
            throw ApiException.invalid("id", dev.fairq.schema.JobRequest.TENANT_ID_RULE);
        }
    }
}

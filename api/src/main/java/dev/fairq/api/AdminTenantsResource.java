package dev.fairq.api;

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
import jakarta.ws.rs.core.HttpHeaders;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.UriInfo;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Admin: tenants, their limits (audited) and their API keys. */
@Path("/v1/admin/tenants")
@Produces(MediaType.APPLICATION_JSON)
public final class AdminTenantsResource {
    private final TenantAdminStore tenants;
    private final ApiKeyStore keys;

    AdminTenantsResource(TenantAdminStore tenants, ApiKeyStore keys) {
        this.tenants = tenants;
        this.keys = keys;
    }

    @GET
    public Map<String, List<TenantView>> list() {
        return Map.of("tenants", tenants.list());
    }

    @GET
    @Path("/{id}")
    public TenantView get(@PathParam("id") String id) {
        return tenants.find(id).orElseThrow(() -> ApiException.notFound("no tenant " + id));
    }

    /** Create or replace: the limits left out take the defaults. 201 when created, 200 when replaced. */
    @PUT
    @Path("/{id}")
    @Consumes(MediaType.APPLICATION_JSON)
    public Response put(@PathParam("id") String id, @HeaderParam("X-Fairq-Actor") String actor, @Context UriInfo uri,
                        String body) {
        TenantLimitsParser.checkId(id);
        Map<String, Object> given = TenantLimitsParser.parse(JobRequestParser.readBody(body));
        TenantAdminStore.Change change = tenants.write(id, given, true, actor(actor)).orElseThrow();
        if (change.created()) return Response.created(uri.getAbsolutePath()).entity(change.tenant()).build();
        return Response.ok(change.tenant()).build();
    }

    /** A partial change: only the fields given. */
    @PATCH
    @Path("/{id}")
    @Consumes(MediaType.APPLICATION_JSON)
    public TenantView patch(@PathParam("id") String id, @HeaderParam("X-Fairq-Actor") String actor, String body) {
        Map<String, Object> given = TenantLimitsParser.parse(JobRequestParser.readBody(body));
        return tenants.write(id, given, false, actor(actor)).orElseThrow(() -> ApiException.notFound("no tenant " + id)).tenant();
    }

    /** A new key, shown once in this answer; only its hash is kept. */
    @POST
    @Path("/{id}/keys")
    public Response createKey(@PathParam("id") String id) {
        if (tenants.find(id).isEmpty()) throw ApiException.notFound("no tenant " + id);
        ApiKeyStore.CreatedKey k = keys.create(id);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("key_id", k.keyId());
        body.put("key", k.key());
        body.put("tenant", k.tenantId());
        body.put("created_at", JobView.utc(k.createdAt()));
        return Response.status(201).entity(body).build();
    }

    @GET
    @Path("/{id}/keys")
    public Map<String, Object> listKeys(@PathParam("id") String id) {
        if (tenants.find(id).isEmpty()) throw ApiException.notFound("no tenant " + id);
        return Map.of("keys", keys.list(id));
    }

    /** Revoked at once: the next request with the key gets 401. */
    @DELETE
    @Path("/{id}/keys/{keyId}")
    public Response revokeKey(@PathParam("id") String id, @PathParam("keyId") String keyId) {
        if (!keys.revoke(id, keyId)) throw ApiException.notFound("tenant " + id + " has no key " + keyId);
        return Response.noContent().build();
    }

    /** Who made a change, for the audit log: the X-Fairq-Actor header when given (e.g. an e-mail), else "admin". */
    static String actor(String header) {
        if (header == null || header.isBlank()) return "admin";
        String a = header.strip();
        return "admin:" + (a.length() > 200 ? a.substring(0, 200) : a);
    }

}

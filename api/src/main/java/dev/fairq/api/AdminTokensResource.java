package dev.fairq.api;

import io.swagger.v3.oas.annotations.Operation;
import io.swagger.v3.oas.annotations.media.Content;
import io.swagger.v3.oas.annotations.media.Schema;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import io.swagger.v3.oas.annotations.security.SecurityRequirement;
import io.swagger.v3.oas.annotations.tags.Tag;
import jakarta.annotation.security.RolesAllowed;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.core.Context;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.core.SecurityContext;
import jakarta.validation.constraints.NotNull;

import java.time.Instant;
import java.util.List;

/**
 * Admin: named admin tokens. Each admin (a person, a deploy bot) gets a token of its own, so the audit log says
 * who changed what, and one leaked token is revoked without touching the others. Tokens are shown once and
 * stored hashed.
 */
@Path("/v1/admin/tokens")
@Produces(MediaType.APPLICATION_JSON)
@Tag(name = "admin: tokens", description = "named admin tokens: the audit log names the token that made a change")
@SecurityRequirement(name = OpenApiDocument.ADMIN_TOKEN)
@RolesAllowed(BearerAuthFilter.Role.ADMIN)
public final class AdminTokensResource {
    private final AdminTokenStore tokens;

    AdminTokensResource(AdminTokenStore tokens) {
        this.tokens = tokens;
    }

    @Schema(name = "NewAdminToken", description = "Unknown fields are refused (422).")
    public record NewToken(
            @Schema(requiredMode = Schema.RequiredMode.REQUIRED, description = "who holds it; the audit log's actor. "
                    + AdminTokenStore.NAME_RULE + ". Never reused", example = "alice@example.com")
            @NotNull(message = "is required")
            String name) implements RequestBody {
        @Override
        public List<dev.fairq.schema.FieldError> check() {
            if (name == null || AdminTokenStore.validName(name)) return List.of();
            return List.of(new dev.fairq.schema.FieldError("name", AdminTokenStore.NAME_RULE));
        }
    }

    @Schema(name = "CreatedAdminToken", description = "a new admin token: shown in this answer only, stored hashed")
    public record Created(String id, String name, @Schema(description = "the bearer token (fqa_...)") String token,
                          @Schema(description = "the name of the token that made it") String createdBy, Instant createdAt) {}

    @Schema(name = "AdminToken", description = "an admin token as listed: never the token itself")
    public record TokenInfo(String id, String name, String createdBy, Instant createdAt,
                            @Schema(description = "null while the token can be used") Instant revokedAt,
                            @Schema(description = "the name of the token that revoked it; null while it can be used "
                                    + "(and for a token revoked before fairq recorded who did)") String revokedBy) {}

    @Schema(name = "AdminTokenList")
    public record TokenList(@Schema(description = "every token ever made (FAIRQ_ADMIN_TOKEN, named bootstrap, is not "
            + "among them: it lives in the environment)") List<TokenInfo> tokens) {}

    @POST
    @Consumes(MediaType.APPLICATION_JSON)
    @Operation(summary = "A new named admin token, shown once", responses = {
            @ApiResponse(responseCode = "201", content = @Content(schema = @Schema(implementation = Created.class))),
            @ApiResponse(responseCode = "409", description = "a token with this name exists or existed (names are never reused)")})
    public Response create(@Context SecurityContext sc, NewToken body) {
        String name = JsonBodyReader.required(body).name();
        AdminTokenStore.Created c = tokens.create(name, BearerAuthFilter.actor(sc))
                .orElseThrow(() -> ApiException.conflict("an admin token named '" + name + "' exists or existed; names are never reused"));
        return Response.status(201).entity(new Created(c.id(), c.name(), c.token(), c.createdBy(), JobView.utc(c.createdAt()))).build();
    }

    @GET
    @Operation(operationId = "listAdminTokens", summary = "Every admin token (names and dates, never the tokens)", responses =
            @ApiResponse(responseCode = "200", content = @Content(schema = @Schema(implementation = TokenList.class))))
    public TokenList list() {
        return new TokenList(tokens.list().stream()
                .map(t -> new TokenInfo(t.id(), t.name(), t.createdBy(), t.createdAt(), t.revokedAt(), t.revokedBy())).toList());
    }

    @DELETE
    @Path("/{id}")
    @Operation(summary = "Revoke an admin token at once (revoking twice is fine; a token may revoke itself)", responses = {
            @ApiResponse(responseCode = "204", description = "revoked"),
            @ApiResponse(responseCode = "404", description = "no such token")})
    public Response revoke(@PathParam("id") String id, @Context SecurityContext sc) {
        if (!tokens.revoke(id, BearerAuthFilter.actor(sc))) throw ApiException.notFound("no admin token " + id);
        return Response.noContent().build();
    }
}

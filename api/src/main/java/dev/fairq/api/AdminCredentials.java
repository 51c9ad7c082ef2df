package dev.fairq.api;

import org.jooq.DSLContext;

import java.io.PrintStream;

/**
 * The admin credentials a server starts with. {@code FAIRQ_ADMIN_TOKEN}, when set, is the token named
 * {@code bootstrap} (held in memory as its hash; at least {@link #MIN_LENGTH} characters). Otherwise, with the
 * embedded database only, a token is generated when no admin token is live: it is stored (hashed) as the token
 * named {@code initial} and printed once to stdout. More tokens, each with a name, come from POST /v1/admin/tokens.
 */
final class AdminCredentials {
    /** 32 characters: 128 bits even when they are hex digits; the generated tokens carry 256. */
    static final int MIN_LENGTH = 32;

    private AdminCredentials() {}

    /** FAIRQ_ADMIN_TOKEN's hash, or null when it is not set (the embedded database's generated token then). */
    static String resolveHash(FairqConfiguration config, boolean embedded, DSLContext db, PrintStream out) {
        if (config.adminToken != null && !config.adminToken.isBlank()) {
            checkLength(config);
            return Tokens.sha256(config.adminToken);
        }
        if (!embedded) {
            throw new IllegalStateException("FAIRQ_ADMIN_TOKEN is required when FAIRQ_DATABASE_URL is set "
                    + "(the admin API would otherwise have no credential). Set it to a random secret of at least "
                    + MIN_LENGTH + " characters, e.g. $(openssl rand -hex 32).");
        }
        AdminTokenStore tokens = new AdminTokenStore(db);
        if (tokens.anyLive()) return null;
        String name = "initial";
        AdminTokenStore.Created created = tokens.create(name, AdminTokenStore.GENERATED_BY)
                .or(() -> tokens.create(name + "-" + Tokens.shortId("").substring(0, 6), AdminTokenStore.GENERATED_BY)) // 'initial' was revoked
                .orElseThrow();
        out.println();
        out.println("==========================================================================================");
        out.println("fairq admin token: " + created.token());
        out.println("Shown once, stored only as a hash; its name is '" + created.name() + "'. Use it as "
                + "'Authorization: Bearer <token>' on /v1/admin/, and make named tokens with POST /v1/admin/tokens.");
        out.println("==========================================================================================");
        out.println();
        out.flush();
        return null;
    }

    /** A FAIRQ_ADMIN_TOKEN that is set must be long enough; also read by {@code check}, which had said OK to a short one. */
    static void checkLength(FairqConfiguration config) {
        if (config.adminToken != null && !config.adminToken.isBlank() && config.adminToken.length() < MIN_LENGTH) {
            throw new IllegalStateException("FAIRQ_ADMIN_TOKEN must be at least " + MIN_LENGTH + " characters (it has "
                    + config.adminToken.length() + "): use a random secret, e.g. $(openssl rand -hex 32)");
        }
    }
}

package dev.fairq.api;

import org.jooq.DSLContext;

import java.io.PrintStream;

/**
 * The admin token's hash. {@code FAIRQ_ADMIN_TOKEN} when set; otherwise, with the embedded database only,
 * a token generated on the first start: its hash is stored in admin_credentials and the token itself is
 * printed once to stdout (it cannot be shown again; set FAIRQ_ADMIN_TOKEN to replace it).
 */
final class AdminCredentials {
    private AdminCredentials() {}

    static String resolveHash(FairqConfiguration config, boolean embedded, DSLContext db, PrintStream out) {
        if (config.adminToken != null && !config.adminToken.isBlank()) return Tokens.sha256(config.adminToken);
        if (!embedded) {
            throw new IllegalStateException("FAIRQ_ADMIN_TOKEN is required when FAIRQ_DATABASE_URL is set "
                    + "(the admin API would otherwise have no credential). Set it to a long random secret.");
        }
        String stored = db.resultQuery("SELECT token_hash FROM admin_credentials WHERE id = 1").fetchOne(0, String.class);
        if (stored != null) return stored;
        String token = Tokens.generate("fqa_");
        String hash = Tokens.sha256(token);
        int inserted = db.execute("INSERT INTO admin_credentials (id, token_hash) VALUES (1, ?) ON CONFLICT DO NOTHING", hash);
        if (inserted == 0) return db.resultQuery("SELECT token_hash FROM admin_credentials WHERE id = 1").fetchOne(0, String.class);
        out.println();
        out.println("==========================================================================================");
        out.println("fairq admin token: " + token);
        out.println("Shown once, stored only as a hash. Use it as 'Authorization: Bearer <token>' on /v1/admin/.");
        out.println("==========================================================================================");
        out.println();
        out.flush();
        return hash;
    }
}

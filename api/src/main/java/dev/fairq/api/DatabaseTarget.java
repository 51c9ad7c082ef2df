package dev.fairq.api;

import dev.fairq.schema.Database;

import java.sql.Connection;
import java.sql.SQLException;

/** Where the database is: the configured URL, or the embedded PostgreSQL this process started. */
public record DatabaseTarget(String url, String user, String password, boolean embedded) {
    public Connection dedicated(String name) throws SQLException {
        return Database.dedicated(url, user, password, name);
    }

    /** For roles that share a database with other processes (worker, scheduler, migrate). */
    static DatabaseTarget required(FairqConfiguration c, String role) {
        if (c.embeddedDatabase()) {
            throw new IllegalStateException("the " + role + " command runs against a shared database: set "
                    + "FAIRQ_DATABASE_URL (and FAIRQ_DATABASE_USER / FAIRQ_DATABASE_PASSWORD). Only 'server' "
                    + "starts the embedded PostgreSQL.");
        }
        return new DatabaseTarget(c.databaseUrl, c.databaseUser, c.databasePassword, false);
    }
}

package dev.fairq.schema;

import dev.fairq.testing.TestDatabase;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The health check's "a scheduler leads" looks at this database only, not at a fairq on another database of the server. */
class LeaderLockTest {
    final TestDatabase db = TestDatabase.get();

    @Test
    void aLeaderOnAnotherDatabaseOfTheSameServerIsNotThisOnesLeader() throws Exception {
        String other = "fairq_leader_elsewhere";
        try {
            db.dsl().execute("DROP DATABASE IF EXISTS " + other);
            db.dsl().execute("CREATE DATABASE " + other);
        } catch (RuntimeException e) {
            Assumptions.abort("cannot create a second database here: " + e.getMessage());
        }
        try {
            String url = db.jdbcUrl.replaceFirst("^(jdbc:postgresql://[^/]+/)[^?]*", "$1" + other);
            try (Connection elsewhere = DriverManager.getConnection(url, db.user, db.password)) {
                assertTrue(LeaderLock.tryLock(elsewhere), "the other database's scheduler leads there");
                assertFalse(LeaderLock.held(db.dsl()), "no scheduler leads this database");
                try (Connection here = db.dataSource().getConnection()) {
                    assertTrue(LeaderLock.tryLock(here), "the lock is per database: this one's is free");
                    assertTrue(LeaderLock.held(db.dsl()));
                    try (Statement s = here.createStatement()) {
                        s.execute("SELECT pg_advisory_unlock_all()"); // a pooled session must not keep it
                    }
                }
            }
        } finally {
            db.dsl().execute("DROP DATABASE IF EXISTS " + other);
        }
    }
}

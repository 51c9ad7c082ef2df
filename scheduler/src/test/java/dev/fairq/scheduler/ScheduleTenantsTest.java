package dev.fairq.scheduler;

import dev.fairq.testing.TestDatabase;
import org.jooq.DSLContext;
import org.junit.jupiter.api.BeforeEach;

import java.time.Instant;

/**
 * What the schedule tests share: an emptied database with two tenants, acme and globex, and the instant their
 * settable clocks start at. A subclass's own {@code @BeforeEach} runs after this one.
 */
abstract class ScheduleTenantsTest {
    /** 10 s past a minute: an every-minute schedule's next fire is 50 s away. */
    static final Instant START = Instant.parse("2026-06-01T12:00:10Z");

    final TestDatabase db = TestDatabase.get();
    DSLContext dsl;

    @BeforeEach
    void resetWithTwoTenants() {
        db.reset();
        db.createTenant("acme");
        db.createTenant("globex");
        dsl = db.dsl();
    }
}

package dev.fairq.schema;

import org.junit.jupiter.api.Test;

import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Named parameters become positional ones in order; casts, quoted text and comments are left alone. */
class NamedSqlTest {

    @Test
    void namesBecomePositionsAndRepeatedNamesBindTheSameValue() {
        NamedSql sql = NamedSql.of("SELECT :a::text[], ':not_a_name', x::int -- :nor_this\nFROM t WHERE b = :b AND c = :a");
        assertEquals("SELECT ?::text[], ':not_a_name', x::int -- :nor_this\nFROM t WHERE b = ? AND c = ?", sql.sql());
        assertArrayEquals(new Object[]{"A", 2, "A"}, sql.bind().set("a", "A").set("b", 2).args());
    }

    @Test
    void nowIsTheQueueClock() {
        NamedSql sql = NamedSql.of("SELECT :now + interval '1 second', ':now'");
        assertEquals("SELECT coalesce(?::timestamptz, now()) + interval '1 second', ':now'", sql.sql());
        assertArrayEquals(new Object[]{null}, sql.bind().clock(QueueClock.SYSTEM).args(), "production: the database's now()");
        SettableClock clock = new SettableClock(Instant.parse("2026-12-01T02:00:00Z"));
        assertArrayEquals(new Object[]{OffsetDateTime.of(2026, 12, 1, 2, 0, 0, 0, ZoneOffset.UTC)},
                sql.bind().clock(clock).args());
    }

    @Test
    void quotedTextWithEscapedQuotesIsCopiedWhole() {
        assertEquals("SELECT 'it''s :x', ?", NamedSql.of("SELECT 'it''s :x', :y").sql());
    }

    @Test
    void aMissingUnknownOrTwiceBoundNameFailsAtOnce() {
        NamedSql sql = NamedSql.of("SELECT :a, :b");
        IllegalArgumentException missing = assertThrows(IllegalArgumentException.class, () -> sql.bind().set("a", 1).args());
        assertTrue(missing.getMessage().contains("[b]"), missing.getMessage());
        assertThrows(IllegalArgumentException.class, () -> sql.bind().set("c", 1));
        assertThrows(IllegalArgumentException.class, () -> sql.bind().set("a", 1).set("a", 2));
        assertThrows(IllegalArgumentException.class, () -> NamedSql.of("SELECT ?"));
    }
}

package dev.fairq.bench;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** pg-ceiling.sh counts the rows it deleted from a table of 1,500,000: a rate that emptied it is a floor. */
class CeilingTest {
    @Test
    void aCeilingThatEmptiedTheScriptsTableIsNotACeiling() {
        assertTrue(Ceiling.exhausted(150_000, 10), "1,500,000 rows in 10 s: the table ran dry");
        assertFalse(Ceiling.exhausted(123_570, 10), "issue 16's ceiling: the table still had rows");
        assertTrue(Ceiling.exhausted(75_000, 20));
    }
}

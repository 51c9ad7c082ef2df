package dev.fairq.bench;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The stats phase's wrk driver without wrk: its script and the reading of what the script prints. */
class WrkTest {
    @Test
    void theScriptLineIsFoundAmongWrksOwnOutputAndReadInMilliseconds() throws Exception {
        String out = """
                Running 10s test @ http://127.0.0.1:8080
                  2 threads and 16 connections
                WRK_JSON {"requests": 45000, "duration_us": 10000000, "p50_us": 3500, "p99_us": 12250, "max_us": 276000, "errors": {"connect": 0, "read": 0, "write": 0, "status": 2, "timeout": 0}, "status": {"200": 44998, "503": 2}}
                Requests/sec:   4500.00
                """;
        Wrk.Result r = Wrk.parse(out);
        assertEquals(45_000, r.requests());
        assertEquals(4_500.0, r.rps(), 1e-9);
        assertEquals(3.5, r.p50Ms(), 1e-9);
        assertEquals(12.25, r.p99Ms(), 1e-9);
        assertEquals(Map.of(200, 44_998L, 503, 2L), r.statuses());
        assertEquals(0, r.socketErrors(), "a non-2xx status is not a socket error; run() refuses it by status");
        assertNull(Wrk.parse("unable to connect to 127.0.0.1:8080 Connection refused\n"));
    }

    @Test
    void theScriptCarriesMethodTokenBodyAndPathsQuotedForLua() {
        String s = Wrk.script(List.of("/v1/stats", "/v1/dashboard"), "POST", "fqk_abc", "{\"type\": \"noop\"}");
        assertTrue(s.contains("local paths = {[==[/v1/stats]==], [==[/v1/dashboard]==]}"), s);
        assertTrue(s.contains("wrk.method = [==[POST]==]"), s);
        assertTrue(s.contains("wrk.headers[\"Authorization\"] = [==[Bearer fqk_abc]==]"), s);
        assertTrue(s.contains("wrk.body = [==[{\"type\": \"noop\"}]==]"), s);
        assertTrue(Wrk.script(List.of("/"), "GET", null, "").indexOf("wrk.body") < 0, "no body, no Content-Type");
        assertThrows(IllegalArgumentException.class, () -> Wrk.script(List.of("/"), "POST", "k", "x]==]y"));
    }
}

package dev.fairq.worker;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fairq.scheduler.SchedulerConfig;
import dev.fairq.schema.JobRequest;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Versioned payloads: a handler reads the versions it declares, older ones through its upcasters, and no other. */
class PayloadVersionsTest extends PlatformTest {

    /** v1 {"first", "last"} becomes v2 {"name"}; v2 becomes v3 {"name", "greeting"}. */
    private static final PayloadVersions GREETING = PayloadVersions.reads(3)
            .upcast(1, p -> ((ObjectNode) p.deepCopy()).put("name", p.path("first").asText() + " " + p.path("last").asText()))
            .upcast(2, p -> ((ObjectNode) p.deepCopy()).put("greeting", "hello"));

    @Test
    void upcastersChainAndAnUnknownVersionIsPermanentNamingIt() throws Exception {
        PayloadVersions.Read read = GREETING.read("greet", 1, "{\"first\": \"Ada\", \"last\": \"Lovelace\"}");
        assertEquals(3, read.version());
        assertTrue(read.json().contains("\"name\":\"Ada Lovelace\"") && read.json().contains("\"greeting\":\"hello\""), read.json());
        assertEquals(new PayloadVersions.Read(3, "{\"x\": 1}"), GREETING.read("greet", 3, "{\"x\": 1}"), "read as is");
        assertTrue(GREETING.read("greet", 2, "{\"amount\": 0.12345678901234567890123}").json().contains("\"amount\":0.12345678901234567890123"),
                "an upcast keeps the payload's numbers as stored");
        PermanentJobException e = assertThrows(PermanentJobException.class, () -> GREETING.read("greet", 4, "{}"));
        assertEquals("unknown payload_version 4 for type 'greet': its handler reads [3] and upcasts from [1, 2]", e.getMessage());
        assertEquals(new PayloadVersions.Read(1, "{}"), PayloadVersions.V1.read("t", 1, "{}"));
        assertThrows(PermanentJobException.class, () -> PayloadVersions.V1.read("t", 2, "{}"));
        assertThrows(IllegalArgumentException.class, () -> GREETING.upcast(1, p -> p), "one upcaster per version");
        assertThrows(IllegalArgumentException.class, () -> PayloadVersions.reads(0));
        // an upcaster that throws an Error (a failed assert) is as permanent as one throwing an exception
        PayloadVersions asserting = PayloadVersions.reads(2).upcast(1, p -> { throw new AssertionError("no name"); });
        e = assertThrows(PermanentJobException.class, () -> asserting.read("greet", 1, "{}"));
        assertTrue(e.getMessage().startsWith("upcasting the payload of type 'greet' from payload_version 1 to 2 failed"), e.getMessage());
    }

    /** The contract: the handler gets the highest version the chain reaches that it reads (it got the first one). */
    @Test
    void aHandlerReadingSeveralVersionsGetsTheHighestTheChainReaches() throws Exception {
        PayloadVersions oneAndThree = PayloadVersions.reads(1, 3)
                .upcast(1, p -> ((ObjectNode) p.deepCopy()).put("v2", true))
                .upcast(2, p -> ((ObjectNode) p.deepCopy()).put("v3", true));
        PayloadVersions.Read read = oneAndThree.read("t", 1, "{}");
        assertEquals(3, read.version());
        assertTrue(read.json().contains("\"v2\":true") && read.json().contains("\"v3\":true"), read.json());
        assertEquals(3, oneAndThree.read("t", 2, "{}").version());
        assertEquals(new PayloadVersions.Read(3, "{}"), oneAndThree.read("t", 3, "{}"));
        PayloadVersions readsOneAndTwo = PayloadVersions.reads(1, 2).upcast(1, p -> ((ObjectNode) p.deepCopy()).put("v2", true));
        assertEquals(2, readsOneAndTwo.read("t", 1, "{}").version());
        assertEquals(new PayloadVersions.Read(1, "{}"), PayloadVersions.reads(1, 3).upcast(2, p -> p).read("t", 1, "{}"),
                "no upcaster from 1: read as is");
    }

    @Test
    void aWorkerHandsTheHandlerItsVersionAndDeadLettersOneItCannotRead() {
        Map<Long, String> seen = new ConcurrentHashMap<>();
        HandlerRegistry handlers = new HandlerRegistry();
        handlers.register("greet", job -> seen.put(job.jobId(), job.payloadVersion() + " " + job.payload().path("name").asText()
                + " " + job.payload().path("greeting").asText()), GREETING);
        long v1 = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "greet")
                .payload("{\"first\": \"Ada\", \"last\": \"Lovelace\"}").build()).job().getId();
        long v3 = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "greet")
                .payload("{\"name\": \"Grace\", \"greeting\": \"hi\"}").payloadVersion(3).build()).job().getId();
        long v9 = platform.store.enqueue(db.dsl(), JobRequest.builder("acme", "greet").payload("{}").payloadVersion(9)
                .build()).job().getId();
        platform.startScheduler(SchedulerConfig.defaults());
        platform.startWorker(TestPlatform.fastConfig("w1", 2), handlers);

        await().atMost(Duration.ofSeconds(60)).until(() -> db.count(
                "SELECT count(*) FROM jobs WHERE status IN ('succeeded', 'dead')") == 3);
        assertEquals("3 Ada Lovelace hello", seen.get(v1));
        assertEquals("3 Grace hi", seen.get(v3));
        assertEquals(2, seen.size(), "the unreadable version never reached the handler");
        assertEquals("dead", db.dsl().fetchValue("SELECT status::text FROM jobs WHERE id = ?", v9));
        assertEquals(1, db.count("SELECT attempts FROM jobs WHERE id = ?", v9), "permanent: not retried");
        String error = String.valueOf(db.dsl().fetchValue("SELECT last_error FROM jobs WHERE id = ?", v9));
        assertTrue(error.contains("unknown payload_version 9 for type 'greet'"), error);
        assertEquals(1, db.count("SELECT payload_version FROM jobs WHERE id = ?", v1), "the stored payload is left as submitted");
    }
}

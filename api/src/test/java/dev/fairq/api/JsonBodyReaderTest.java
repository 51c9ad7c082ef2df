package dev.fairq.api;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.TenantLimit;
import io.dropwizard.jackson.Jackson;
import io.dropwizard.jersey.validation.Validators;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The typed request bodies answer exactly what the hand-written parsers answered before them (api/README.md's
 * contract): every field at fault at once, one error per field, with the same names and messages; no coercion.
 */
class JsonBodyReaderTest {
    static final ObjectMapper MAPPER = Jackson.newObjectMapper().setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
    static final JsonBodyReader READER = new JsonBodyReader(MAPPER, Validators.newValidator(), 100);

    private static <T extends RequestBody> T read(String json, Class<T> type) {
        return READER.read(JsonBodyReader.readObject(json), type);
    }

    /** field -> message of the 422, in the order given. */
    private static Map<String, String> errors(String json, Class<? extends RequestBody> type) {
        ApiException e = assertThrows(ApiException.class, () -> read(json, type));
        assertEquals(422, e.status, e.getMessage());
        Map<String, String> out = new LinkedHashMap<>();
        for (FieldError f : e.errors) out.put(f.field(), f.message());
        return out;
    }

    @Test
    void aJobsFieldsOfTheWrongJsonTypeAreNamedWithoutCoercion() {
        assertEquals(Map.of("type", "must be a string"), errors("{\"type\": 5, \"payload\": {}}", JobSubmission.class));
        assertEquals(Map.of("priority", "must be a whole number"), errors("{\"type\": \"t\", \"payload\": {}, \"priority\": \"5\"}", JobSubmission.class));
        assertEquals(Map.of("max_attempts", "must be a whole number"), errors("{\"type\": \"t\", \"payload\": {}, \"max_attempts\": 1.5}", JobSubmission.class));
        assertEquals(Map.of("delay_ms", "must be a whole number of milliseconds"), errors("{\"type\": \"t\", \"payload\": {}, \"delay_ms\": \"9\"}", JobSubmission.class));
        // a whole number too large for the field's type is out of its range, and told the range, as a tenant limit is
        assertEquals(Map.of("priority", "must be between -100 and 100"), errors("{\"type\": \"t\", \"payload\": {}, \"priority\": 3000000000}", JobSubmission.class));
        assertEquals(Map.of("priority", "must be between -100 and 100"), errors("{\"type\": \"t\", \"payload\": {}, \"priority\": -3000000000}", JobSubmission.class));
        assertEquals(Map.of("max_attempts", "must be between 1 and 1000"), errors("{\"type\": \"t\", \"payload\": {}, \"max_attempts\": 99999999999}", JobSubmission.class));
        assertEquals(Map.of("delay_ms", "must be between 0 and one year"), errors("{\"type\": \"t\", \"payload\": {}, \"delay_ms\": 99999999999999999999}", JobSubmission.class));
        assertEquals(Map.of("timeout_ms", "must be a whole number of milliseconds between 1 and 86400000"),
                errors("{\"type\": \"t\", \"payload\": {}, \"timeout_ms\": 99999999999999999999}", JobSubmission.class));
        assertEquals(Map.of("payload_version", "must be between 1 and 1000000"), errors("{\"type\": \"t\", \"payload\": {}, \"payload_version\": 3000000000}", JobSubmission.class));
        assertEquals(Map.of("run_at", "must be a string"), errors("{\"type\": \"t\", \"payload\": {}, \"run_at\": 1700000000}", JobSubmission.class));
        assertEquals(Map.of("run_at", JsonBodyReader.TIME_RULE), errors("{\"type\": \"t\", \"payload\": {}, \"run_at\": \"tomorrow\"}", JobSubmission.class));
    }

    @Test
    void everyProblemAtOnceOnePerFieldWithTheOldMessages() {
        Map<String, String> e = errors("{\"type\": \"\", \"priority\": 1000, \"run_at\": \"2030-01-01T00:00:00Z\", \"delay_ms\": 5, "
                + "\"job_key\": \"\", \"tenant\": \"other\", \"colour\": 1}", JobSubmission.class);
        assertEquals("the tenant comes from the API key, not the body", e.get("tenant"));
        assertEquals("unknown field (expected one of concurrency_key, delay_ms, fairness_key, job_key, max_attempts, ordering_key, payload, payload_version, priority, queue, run_at, timeout_ms, type)", e.get("colour"));
        assertEquals("is required", e.get("type"), "one error for an empty type, not also its pattern");
        assertEquals("is required (any JSON value, e.g. {})", e.get("payload"));
        assertEquals("must be between -100 and 100", e.get("priority"));
        assertEquals(JobRequest.KEY_RULE, e.get("job_key"));
        assertEquals("give run_at or delay_ms, not both", e.get("run_at"), "the store's own rule, through check()");
        assertEquals(7, e.size(), e.toString());
    }

    @Test
    void aValidJobKeepsItsPayloadAsSubmittedAndItsDefaults() {
        JobSubmission s = read("{\"type\": \"t\", \"payload\": null, \"job_key\": \"k\"}", JobSubmission.class);
        assertEquals("null", s.toRequest("acme").payloadJson(), "JSON null is a payload");
        assertEquals("default", s.toRequest("acme").queue());
        assertEquals(s.toRequest("acme").requestHash(), read("{\"job_key\": \"k\", \"payload\": null, \"type\": \"t\", \"priority\": 0}",
                JobSubmission.class).toRequest("acme").requestHash(), "the defaults filled in, the same request");
        assertNotNull(s.toRequest("acme").requestHash());
        assertNull(read("{\"type\": \"t\", \"payload\": {}}", JobSubmission.class).toRequest("acme").requestHash(),
                "no job_key, nothing to tell a replay from: no hash");
        ApiException tooBig = assertThrows(ApiException.class, () -> read("{\"jobs\": [{\"type\": \"t\", \"payload\": \"" + "x".repeat(200) + "\"}]}", BatchSubmission.class));
        assertEquals(413, tooBig.status);
        assertEquals("jobs[0].payload", tooBig.errors.get(0).field());
    }

    @Test
    void aBatchNamesTheIndexAndItsOwnShape() {
        assertEquals(Map.of("jobs", "is required: an array of jobs"), errors("{}", BatchSubmission.class));
        assertEquals(Map.of("jobs", "is required: an array of jobs"), errors("{\"jobs\": {}}", BatchSubmission.class));
        assertEquals(Map.of("jobs", "must hold 1 to 1000 jobs, not 0"), errors("{\"jobs\": []}", BatchSubmission.class));
        assertEquals(Map.of("jobs[0]", "must be a JSON object", "jobs[1].max_attempts", "must be between 1 and 1000",
                        "batch", "unknown field (expected jobs)"),
                errors("{\"jobs\": [1, {\"type\": \"t\", \"payload\": {}, \"max_attempts\": -1}], \"batch\": true}", BatchSubmission.class));
    }

    @Test
    void tenantLimitsAnswerWithTenantLimitsOwnMessages() {
        assertEquals(Map.of("weight", "must be a whole number between 1 and 1000"), errors("{\"weight\": 1.5}", TenantLimitsChange.class));
        assertEquals(Map.of("weight", "must be a whole number between 1 and 1000"), errors("{\"weight\": 0}", TenantLimitsChange.class));
        assertEquals(Map.of("rate_per_second", "must be a number > 0 and <= 1000000"), errors("{\"rate_per_second\": \"5\"}", TenantLimitsChange.class));
        assertEquals(Map.of("paused", "must be true or false"), errors("{\"paused\": null}", TenantLimitsChange.class));
        assertEquals(Map.of("max_queued", "must be a whole number between 1 and 2147483647"), errors("{\"max_queued\": 3000000000}", TenantLimitsChange.class));
        assertEquals(Map.of("webhook_allow[1]", "must be a string"), errors("{\"webhook_allow\": [\"a.example\", 1]}", TenantLimitsChange.class));
        // WebhookAllowList's own message, naming the entry
        assertTrue(errors("{\"webhook_allow\": [\"a/b\"]}", TenantLimitsChange.class).get("webhook_allow[0]").startsWith("'a/b'"));
        Map<String, Object> given = read("{\"id\": \"the-path-s\", \"rate_per_second\": 5, \"webhook_allow\": [\"Hooks.Example.COM\"]}",
                TenantLimitsChange.class).given();
        assertEquals(Map.of("rate_per_second", 5.0, "webhook_allow", List.of("hooks.example.com")), given);
    }

    /** A new TenantLimit needs a field in the request and in the answers: this fails until it has them. */
    @Test
    void theLimitsClassesHoldEveryTenantLimit() {
        List<String> change = Arrays.stream(TenantLimitsChange.class.getRecordComponents())
                .map(c -> MAPPER.getPropertyNamingStrategy() instanceof PropertyNamingStrategies.NamingBase n ? n.translate(c.getName()) : c.getName()).toList();
        // id, every limit, then the read-only times a GET's answer carries (allowed so that it can be sent back)
        assertEquals("id", change.get(0));
        assertEquals(TenantLimit.fields(), change.subList(1, change.size() - 2), "id, then every limit");
        assertEquals(List.of("created_at", "updated_at"), change.subList(change.size() - 2, change.size()));
        List<String> answer = MAPPER.convertValue(new TenantView.Limits(1, 1, 1, 1, 1, false, List.of(), 1, 60, 1, 1, Map.of(), Map.of()), Map.class).keySet().stream().map(String::valueOf).toList();
        assertEquals(TenantLimit.fields(), answer);
    }
}

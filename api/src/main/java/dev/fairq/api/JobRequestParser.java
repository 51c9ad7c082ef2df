package dev.fairq.api;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobRequest;
import jakarta.ws.rs.core.Response;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Turns a request body into {@link JobRequest}s, collecting every field error (prefixed {@code jobs[i].} in a
 * batch) before anything is written. The tenant is the caller's, from its key: a body cannot name one.
 * Each request carries a hash of its normalised fields, so that a second request with the same job_key can
 * be told apart: identical (a replay) or different (a conflict).
 */
final class JobRequestParser {
    static final Set<String> FIELDS = Set.of("type", "queue", "payload", "priority", "run_at", "delay_ms", "job_key",
            "ordering_key", "max_attempts");
    private static final ObjectMapper CANONICAL = new ObjectMapper().configure(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);
    private static final ObjectMapper MAPPER = new ObjectMapper();

    private final int maxPayloadBytes;

    JobRequestParser(int maxPayloadBytes) {
        this.maxPayloadBytes = maxPayloadBytes;
    }

    /** 400 for a body that is not JSON (or not an object). */
    static JsonNode readBody(String body) {
        if (body == null || body.isBlank()) throw ApiException.badRequest("the request body is empty; send a JSON object");
        JsonNode node;
        try {
            node = MAPPER.readTree(body);
        } catch (JsonProcessingException e) {
            throw ApiException.badRequest("malformed JSON: " + e.getOriginalMessage());
        }
        if (node == null || !node.isObject()) throw ApiException.badRequest("the request body must be a JSON object");
        return node;
    }

    JobRequest parseOne(String tenantId, JsonNode body) {
        List<FieldError> errors = new ArrayList<>();
        JobRequest r = parse(tenantId, body, "", errors);
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        return r;
    }

    List<JobRequest> parseBatch(String tenantId, JsonNode body, int maxJobs) {
        List<FieldError> errors = new ArrayList<>();
        body.fieldNames().forEachRemaining(f -> {
            if (!f.equals("jobs")) errors.add(new FieldError(f, "unknown field (expected jobs)"));
        });
        JsonNode jobs = body.get("jobs");
        if (jobs == null || !jobs.isArray()) {
            errors.add(new FieldError("jobs", "is required: an array of jobs"));
            throw ApiException.invalid(errors);
        }
        if (jobs.isEmpty() || jobs.size() > maxJobs) {
            errors.add(new FieldError("jobs", "must hold 1 to " + maxJobs + " jobs, not " + jobs.size()));
            throw ApiException.invalid(errors);
        }
        List<JobRequest> out = new ArrayList<>(jobs.size());
        for (int i = 0; i < jobs.size(); i++) {
            String prefix = "jobs[" + i + "].";
            if (!jobs.get(i).isObject()) {
                errors.add(new FieldError("jobs[" + i + "]", "must be a JSON object"));
                continue;
            }
            out.add(parse(tenantId, jobs.get(i), prefix, errors));
        }
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        return out;
    }

    private JobRequest parse(String tenantId, JsonNode n, String prefix, List<FieldError> errors) {
        int before = errors.size();
        n.fieldNames().forEachRemaining(f -> {
            if (!FIELDS.contains(f)) {
                String hint = f.equals("tenant") || f.equals("tenant_id") ? "the tenant comes from the API key, not the body"
                        : "unknown field (expected one of " + String.join(", ", FIELDS.stream().sorted().toList()) + ")";
                errors.add(new FieldError(prefix + f, hint));
            }
        });
        String type = text(n, "type", prefix, errors);
        String queue = text(n, "queue", prefix, errors);
        String jobKey = text(n, "job_key", prefix, errors);
        String orderingKey = text(n, "ordering_key", prefix, errors);
        Integer priority = integer(n, "priority", prefix, errors);
        Integer maxAttempts = integer(n, "max_attempts", prefix, errors);
        Long delayMs = null;
        JsonNode d = n.get("delay_ms");
        if (d != null && !d.isNull()) {
            if (d.isIntegralNumber() && d.canConvertToLong()) delayMs = d.asLong();
            else errors.add(new FieldError(prefix + "delay_ms", "must be a whole number of milliseconds"));
        }
        OffsetDateTime runAt = null;
        String runAtText = text(n, "run_at", prefix, errors);
        if (runAtText != null) {
            try {
                runAt = OffsetDateTime.parse(runAtText);
            } catch (DateTimeParseException e) {
                errors.add(new FieldError(prefix + "run_at", "must be an RFC 3339 time such as 2030-01-01T12:00:00Z"));
            }
        }
        JsonNode payload = n.get("payload");
        String payloadJson = null;
        if (payload == null || payload.isMissingNode()) {
            errors.add(new FieldError(prefix + "payload", "is required (any JSON value, e.g. {})"));
        } else {
            payloadJson = payload.toString();
            int bytes = payloadJson.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > maxPayloadBytes) {
                throw new ApiException(Response.Status.REQUEST_ENTITY_TOO_LARGE.getStatusCode(),
                        prefix + "payload is " + bytes + " bytes; the limit is " + maxPayloadBytes,
                        List.of(new FieldError(prefix + "payload", "must be at most " + maxPayloadBytes + " bytes")), Map.of());
            }
        }
        if (jobKey != null && jobKey.startsWith(dev.fairq.scheduler.ScheduleKeys.PREFIX)) {
            errors.add(new FieldError(prefix + "job_key", "job keys starting with '"
                    + dev.fairq.scheduler.ScheduleKeys.PREFIX + "' are reserved for the jobs schedules fire"));
        }
        // The store's own checks too, for the fields not already reported, so one answer names every field.
        JobRequest.Builder b = JobRequest.builder(tenantId, type)
                .queue(queue == null ? JobRequest.DEFAULT_QUEUE : queue)
                .payload(payloadJson)
                .priority(priority == null ? 0 : priority)
                .runAt(runAt)
                .delay(delayMs == null ? null : Duration.ofMillis(delayMs))
                .jobKey(jobKey)
                .orderingKey(orderingKey)
                .maxAttempts(maxAttempts);
        JobRequest unchecked = b.buildUnchecked();
        Set<String> reported = new java.util.HashSet<>();
        for (int i = before; i < errors.size(); i++) reported.add(errors.get(i).field());
        for (FieldError e : unchecked.validate()) {
            FieldError p = e.prefixed(prefix);
            if (!reported.contains(p.field())) errors.add(p);
        }
        if (errors.size() > before) return null;
        return b.requestHash(hash(unchecked, payload)).buildUnchecked();
    }

    /** SHA-256 over the normalised request (defaults filled in, payload with sorted keys, run_at in UTC). */
    private static String hash(JobRequest r, JsonNode payload) {
        try {
            ObjectNode o = CANONICAL.createObjectNode();
            o.put("type", r.type());
            o.put("queue", r.queue());
            o.put("payload", CANONICAL.writeValueAsString(CANONICAL.treeToValue(payload, Object.class)));
            o.put("priority", r.priority());
            o.put("run_at", r.runAt() == null ? null : r.runAt().toInstant().toString());
            o.put("delay_ms", r.delay() == null ? null : r.delay().toMillis());
            o.put("job_key", r.jobKey());
            o.put("ordering_key", r.orderingKey());
            o.put("max_attempts", r.effectiveMaxAttempts());
            return Tokens.sha256(CANONICAL.writeValueAsString(CANONICAL.treeToValue(o, Object.class)));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String text(JsonNode n, String field, String prefix, List<FieldError> errors) {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) return null;
        if (v.getNodeType() != JsonNodeType.STRING) {
            errors.add(new FieldError(prefix + field, "must be a string"));
            return null;
        }
        return v.asText();
    }

    private static Integer integer(JsonNode n, String field, String prefix, List<FieldError> errors) {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) return null;
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            errors.add(new FieldError(prefix + field, "must be a whole number"));
            return null;
        }
        return v.asInt();
    }
}

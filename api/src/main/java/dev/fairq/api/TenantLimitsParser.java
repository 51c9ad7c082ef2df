package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.scheduler.TenantsFile;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.WebhookAllowList;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The limits of a PUT or PATCH body, checked field by field against the same ranges as tenants.yml and the
 * table's CHECK constraints. Returns the fields given, snake_case name -> value.
 */
final class TenantLimitsParser {
    static final Pattern TENANT_ID = TenantsFile.TENANT_ID;
    static final Set<String> FIELDS = Set.of("weight", "rate_per_second", "burst", "max_running", "max_queued",
            "paused", "webhook_allow");

    /** The built-in defaults (as in tenants.yml) for the fields a PUT leaves out. */
    static Map<String, Object> defaults() {
        return TenantsFile.builtInDefaults();
    }

    private TenantLimitsParser() {}

    static void checkId(String id) {
        if (!TENANT_ID.matcher(id).matches()) {
            throw ApiException.invalid("id", "must be 1-63 lower-case letters, digits, '_' or '-', starting with a letter or digit");
        }
    }

    static Map<String, Object> parse(JsonNode body) {
        List<FieldError> errors = new ArrayList<>();
        Map<String, Object> out = new LinkedHashMap<>();
        body.fields().forEachRemaining(e -> {
            String f = e.getKey();
            JsonNode v = e.getValue();
            switch (f) {
                case "id" -> { } // allowed for symmetry with GET; the path names the tenant
                case "weight" -> intIn(out, errors, f, v, 1, 1000);
                case "burst" -> intIn(out, errors, f, v, 1, 1_000_000);
                case "max_running" -> intIn(out, errors, f, v, 1, 100_000);
                case "max_queued" -> intIn(out, errors, f, v, 1, Integer.MAX_VALUE);
                case "rate_per_second" -> {
                    if (!v.isNumber() || !(v.asDouble() > 0 && v.asDouble() <= 1_000_000)) {
                        errors.add(new FieldError(f, "must be a number > 0 and <= 1000000"));
                    } else {
                        out.put(f, v.asDouble());
                    }
                }
                case "paused" -> {
                    if (!v.isBoolean()) errors.add(new FieldError(f, "must be true or false"));
                    else out.put(f, v.asBoolean());
                }
                case "webhook_allow" -> {
                    if (!v.isArray()) {
                        errors.add(new FieldError(f, "must be a list of allow-list entries"));
                        return;
                    }
                    List<String> hosts = new ArrayList<>();
                    for (int i = 0; i < v.size(); i++) {
                        JsonNode h = v.get(i);
                        try {
                            if (!h.isTextual()) throw new IllegalArgumentException("must be a string");
                            WebhookAllowList.parseEntry(h.asText()); // the message names the entry
                            hosts.add(h.asText().trim().toLowerCase(Locale.ROOT));
                        } catch (IllegalArgumentException bad) {
                            errors.add(new FieldError(f + "[" + i + "]", bad.getMessage()));
                        }
                    }
                    out.put(f, List.copyOf(hosts));
                }
                default -> errors.add(new FieldError(f, "unknown field (expected one of "
                        + String.join(", ", FIELDS.stream().sorted().toList()) + ")"));
            }
        });
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        return out;
    }

    private static void intIn(Map<String, Object> out, List<FieldError> errors, String f, JsonNode v, int min, int max) {
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < min || v.asLong() > max) {
            errors.add(new FieldError(f, "must be a whole number between " + min + " and " + max));
        } else {
            out.put(f, v.asInt());
        }
    }
}

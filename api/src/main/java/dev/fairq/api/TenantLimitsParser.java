package dev.fairq.api;

import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.scheduler.TenantsFile;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.Json;
import dev.fairq.schema.TenantLimit;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The limits of a PUT or PATCH body, checked field by field by {@link TenantLimit} (the one declaration of
 * each limit's range, which tenants.yml and the tenants table's CHECK constraints share). Returns the fields
 * given, snake_case name -> value.
 */
final class TenantLimitsParser {
    static final Pattern TENANT_ID = TenantsFile.TENANT_ID;

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
            if (f.equals("id")) return; // allowed for symmetry with GET; the path names the tenant
            TenantLimit limit = TenantLimit.byField(f);
            if (limit == null) {
                errors.add(new FieldError(f, "unknown field (expected one of "
                        + String.join(", ", TenantLimit.fields().stream().sorted().toList()) + ")"));
                return;
            }
            try {
                // floats stay floats and integers integers, so "weight": 1.5 is refused rather than truncated
                out.put(f, limit.accept(Json.MAPPER.convertValue(e.getValue(), Object.class)));
            } catch (TenantLimit.InvalidLimitException x) {
                errors.addAll(x.errors());
            }
        });
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        return out;
    }
}

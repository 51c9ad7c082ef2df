package dev.fairq.api;

import dev.fairq.schema.FieldError;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.util.List;

/**
 * A request body: a record whose components are its JSON fields (snake_case), read by {@link JsonBodyReader}.
 * Each field's rule is declared once, on the component: its Java type (the JSON type it takes), Bean Validation
 * annotations (ranges from schema's JobRequest and TenantLimit constants), {@link WrongType} for the message
 * when the JSON type is wrong, {@link SizeLimited} for a value the configured payload limit applies to.
 */
interface RequestBody {
    /** Rules no annotation states (across fields, or the store's own checks); field names as in the JSON. */
    default List<FieldError> check() {
        return List.of();
    }

    /** The message when the field's JSON value has the wrong type (default: by the Java type, "must be a string"...). */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.FIELD)
    @interface WrongType {
        String value();
    }

    /** A JSON value of at most the configured number of bytes ({@code FAIRQ_MAX_PAYLOAD_BYTES}); larger is a 413. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.FIELD)
    @interface SizeLimited {
    }

    /** Body fields that are refused with this message instead of "unknown field" (e.g. a tenant in a tenant's body). */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.TYPE)
    @interface Refused {
        String[] fields();

        String message();
    }
}

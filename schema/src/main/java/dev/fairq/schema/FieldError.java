package dev.fairq.schema;

/** One problem with one input field; {@code field} is the JSON name (for batches: {@code jobs[3].type}). */
public record FieldError(String field, String message) {
    public FieldError prefixed(String prefix) {
        return new FieldError(prefix + field, message);
    }

    @Override
    public String toString() {
        return field + ": " + message;
    }
}

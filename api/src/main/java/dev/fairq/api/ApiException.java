package dev.fairq.api;

import dev.fairq.schema.FieldError;
import jakarta.ws.rs.core.Response;

import java.util.List;
import java.util.Map;

/** A 4xx answer: a message, the fields at fault (if any) and extra headers. Nothing was written. */
public class ApiException extends RuntimeException {
    final int status;
    final List<FieldError> errors;
    final Map<String, String> headers;

    ApiException(int status, String message, List<FieldError> errors, Map<String, String> headers) {
        super(message);
        this.status = status;
        this.errors = List.copyOf(errors);
        this.headers = Map.copyOf(headers);
    }

    static ApiException of(Response.Status status, String message) {
        return new ApiException(status.getStatusCode(), message, List.of(), Map.of());
    }

    static ApiException badRequest(String message) {
        return of(Response.Status.BAD_REQUEST, message);
    }

    static ApiException notFound(String message) {
        return of(Response.Status.NOT_FOUND, message);
    }

    static ApiException conflict(String message) {
        return of(Response.Status.CONFLICT, message);
    }

    static ApiException preconditionFailed(String message) {
        return of(Response.Status.PRECONDITION_FAILED, message);
    }

    /**
     * Whether a PUT's {@code If-None-Match} asks to create only: {@code *} does (RFC 9110 13.1.2); absent does not.
     * An entity tag is a 400: fairq sends no ETags, so the condition could never be what the caller meant.
     */
    static boolean createOnly(String ifNoneMatch) {
        if (ifNoneMatch == null) return false;
        if (ifNoneMatch.strip().equals("*")) return true;
        throw badRequest("If-None-Match: only * (create only, 412 if it exists) is supported: fairq has no ETags");
    }

    static ApiException invalid(List<FieldError> errors) {
        return new ApiException(422, "invalid fields: " + errors, errors, Map.of());
    }

    static ApiException invalid(String field, String message) {
        return invalid(List.of(new FieldError(field, message)));
    }
}

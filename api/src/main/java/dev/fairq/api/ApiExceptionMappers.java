package dev.fairq.api;

import dev.fairq.schema.FieldError;
import dev.fairq.schema.InvalidJobException;
import dev.fairq.schema.QueueFullException;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.ExceptionMapper;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Error bodies: {@code {"error": "...", "errors": [{"field": "...", "message": "..."}]}}. */
final class ApiExceptionMappers {
    private ApiExceptionMappers() {}

    static Response response(int status, String message, List<FieldError> errors, Map<String, String> headers) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("error", message);
        List<Map<String, String>> list = new ArrayList<>();
        for (FieldError e : errors) list.add(Map.of("field", e.field(), "message", e.message()));
        if (!list.isEmpty()) body.put("errors", list);
        Response.ResponseBuilder b = Response.status(status).type(MediaType.APPLICATION_JSON_TYPE).entity(body);
        headers.forEach(b::header);
        return b.build();
    }

    static final class Api implements ExceptionMapper<ApiException> {
        @Override
        public Response toResponse(ApiException e) {
            return response(e.status, e.getMessage(), e.errors, e.headers);
        }
    }

    /** The store validates again before it writes: a field it rejects is still a 422 naming the field. */
    static final class InvalidJob implements ExceptionMapper<InvalidJobException> {
        @Override
        public Response toResponse(InvalidJobException e) {
            return response(422, "invalid fields: " + e.errors(), e.errors(), Map.of());
        }
    }

    static final class QueueFull implements ExceptionMapper<QueueFullException> {
        @Override
        public Response toResponse(QueueFullException e) {
            return response(429, "the tenant has " + e.queued() + " jobs queued; its max_queued is " + e.maxQueued(),
                    List.of(), Map.of("Retry-After", "5"));
        }
    }
}

package dev.fairq.api;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobRequest;
import dev.fairq.schema.Json;
import dev.fairq.schema.TenantLimit;
import jakarta.validation.ConstraintViolation;
import jakarta.validation.Path;
import jakarta.validation.Validator;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.MultivaluedMap;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.MessageBodyReader;
import org.hibernate.validator.engine.HibernateConstraintViolation;

import java.io.IOException;
import java.io.InputStream;
import java.lang.annotation.Annotation;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a {@link RequestBody} record strictly and answers every problem at once, before anything is written:
 * 400 when the body is not a JSON object; 413 when a {@link RequestBody.SizeLimited} value is too large; else
 * 422 naming each field at fault ({@code jobs[3].type} in a batch): unknown fields (a typo such as
 * {@code runat} is never ignored), values of the wrong JSON type (no coercion: {@code "5"} is not a number,
 * {@code 1.5} not a whole number), then the Bean Validation constraints, then {@link RequestBody#check}. One
 * error per field, the first in declaration order.
 *
 * <p>Jackson alone stops at the first problem and coerces scalars, so the binding goes field by field: the
 * JSON type is checked here, the value converted by the application's mapper.
 */
@Consumes({MediaType.APPLICATION_JSON, JsonBodyReader.MERGE_PATCH})
final class JsonBodyReader implements MessageBodyReader<RequestBody> {
    /** RFC 7386's media type: the PATCHes of tenants and schedules are merge patches, and take it too. */
    static final String MERGE_PATCH = "application/merge-patch+json";
    static final long MAX_BODY_BYTES = 256L * 1024 * 1024;
    private static final PropertyNamingStrategies.NamingBase SNAKE =
            (PropertyNamingStrategies.NamingBase) PropertyNamingStrategies.SNAKE_CASE;
    static final String TIME_RULE = "must be an RFC 3339 time such as 2030-01-01T12:00:00Z";

    private final ObjectMapper mapper;
    private final Validator validator;
    private final int maxPayloadBytes;

    JsonBodyReader(ObjectMapper mapper, Validator validator, int maxPayloadBytes) {
        this.mapper = mapper;
        this.validator = validator;
        this.maxPayloadBytes = maxPayloadBytes;
    }

    @Override
    public boolean isReadable(Class<?> type, Type genericType, Annotation[] annotations, MediaType mediaType) {
        return RequestBody.class.isAssignableFrom(type) && type.isRecord();
    }

    @Override
    public RequestBody readFrom(Class<RequestBody> type, Type genericType, Annotation[] annotations, MediaType mediaType,
                                MultivaluedMap<String, String> headers, InputStream entity) throws IOException {
        return read(readObject(utf8(readCapped(entity, maxPayloadBytes))), type);
    }

    /**
     * The body's bytes, or a 413 without reading past the cap: the largest body there is reason to send, a full batch
     * of full payloads, each with its other fields (at most 256 MiB: past it a body is refused unread whatever
     * FAIRQ_MAX_PAYLOAD_BYTES allows a payload). Every JSON body is read through here.
     */
    static byte[] readCapped(InputStream entity, int maxPayloadBytes) throws IOException {
        long cap = Math.min((long) BatchSubmission.MAX_BATCH * (maxPayloadBytes + 8 * 1024), MAX_BODY_BYTES);
        byte[] bytes;
        try {
            bytes = entity.readNBytes((int) Math.min(cap + 1, Integer.MAX_VALUE - 16));
        } catch (RuntimeException | java.util.zip.ZipException e) {
            // Jetty inflates a body sent with Content-Encoding: gzip as it is read, and throws (a RuntimeException
            // around a ZipException) when the bytes are not gzip: the client's fault, a 400 rather than a 500
            if (!(e instanceof java.util.zip.ZipException) && !(e.getCause() instanceof java.util.zip.ZipException)) throw e;
            throw ApiException.badRequest("the request body is not valid gzip (it was sent with Content-Encoding: gzip)");
        }
        if (bytes.length > cap) {
            throw new ApiException(Response.Status.REQUEST_ENTITY_TOO_LARGE.getStatusCode(),
                    "the request body is over " + cap + " bytes (the largest there is reason to send: a batch of "
                            + BatchSubmission.MAX_BATCH + " jobs of at most " + maxPayloadBytes + " payload bytes each)",
                    List.of(), Map.of());
        }
        return bytes;
    }

    /** The body as text: 400 when it is not UTF-8 (RFC 8259), rather than storing U+FFFD for the bytes at fault. */
    static String utf8(byte[] body) {
        if (body == null) return "";
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(body)).toString();
        } catch (CharacterCodingException e) {
            throw ApiException.badRequest("the request body is not UTF-8 (JSON must be)");
        }
    }

    /**
     * One JSON value and nothing after it ({@code {...} {...}} would otherwise be read as its first object), each
     * field name once (otherwise the last would silently win).
     */
    private static final ObjectReader STRICT_TREE = Json.EXACT // a payload's numbers as sent (see Json.EXACT)
            .with(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .with(StreamReadFeature.STRICT_DUPLICATE_DETECTION);

    /**
     * 400 for a body that is not JSON, or not an object (or has trailing content, or a field given twice); 422
     * naming the field for a string holding an unpaired surrogate, anywhere in the body (see
     * {@link JobRequest#SURROGATE_RULE}).
     */
    static JsonNode readObject(String body) {
        if (body == null || body.isBlank()) throw ApiException.badRequest("the request body is empty; send a JSON object");
        JsonNode node = readValue(body);
        if (node == null || !node.isObject()) throw ApiException.badRequest("the request body must be a JSON object");
        return node;
    }

    /** Any one JSON value, read as strictly as a body (the command line's --payload and --json too). */
    static JsonNode readValue(String body) {
        JsonNode node;
        try {
            node = STRICT_TREE.readValue(body);
        } catch (JsonParseException e) {
            String message = e.getOriginalMessage();
            if (message.startsWith("Duplicate field") && e.getProcessor() != null) {
                String at = path(e.getProcessor().getParsingContext());
                throw new ApiException(400, "malformed JSON: " + message, List.of(new FieldError(at, "is given more than once")), Map.of());
            }
            throw ApiException.badRequest("malformed JSON: " + message);
        } catch (StreamConstraintsException e) {
            // Jackson's own bounds: a string of 20,000,000 characters is too large (413); nesting 1,000 deep or a
            // number of 1,000 digits is malformed for any field (400)
            if (e.getOriginalMessage().startsWith("String value length")) {
                throw new ApiException(Response.Status.REQUEST_ENTITY_TOO_LARGE.getStatusCode(),
                        "the request body is too large: " + e.getOriginalMessage(), List.of(), Map.of());
            }
            throw ApiException.badRequest("malformed JSON: " + e.getOriginalMessage());
        } catch (MismatchedInputException e) {
            if (e.getOriginalMessage().startsWith("Trailing token")) {
                throw ApiException.badRequest("malformed JSON: content after the JSON object; send one JSON object");
            }
            throw ApiException.badRequest("malformed JSON: " + e.getOriginalMessage());
        } catch (JsonProcessingException e) {
            throw ApiException.badRequest("malformed JSON: " + e.getOriginalMessage());
        }
        // a lone surrogate can only come from an escape: a UTF-8 body decodes a bad sequence as U+FFFD
        if (body.contains("\\u")) {
            String at = JobRequest.pathOf(node, "", t -> JobRequest.unpairedSurrogate(t) >= 0);
            if (at != null) throw ApiException.invalid(at.isEmpty() ? "(body)" : at, JobRequest.SURROGATE_RULE);
        }
        return node;
    }

    /** A parser's place as the API names fields: {@code jobs[1].type}. */
    private static String path(JsonStreamContext c) {
        List<String> parts = new ArrayList<>();
        for (; c != null && !c.inRoot(); c = c.getParent()) {
            if (c.inArray()) parts.add("[" + Math.max(c.getCurrentIndex(), 0) + "]");
            else if (c.getCurrentName() != null) parts.add((c.getParent() != null && !c.getParent().inRoot() ? "." : "") + c.getCurrentName());
        }
        java.util.Collections.reverse(parts);
        String p = String.join("", parts);
        return p.isEmpty() ? "(body)" : p;
    }

    /** Jersey hands a resource null for an empty body: the same 400 as a blank one. */
    static <T extends RequestBody> T required(T body) {
        if (body == null) throw ApiException.badRequest("the request body is empty; send a JSON object");
        return body;
    }

    <T extends RequestBody> T read(JsonNode body, Class<T> type) {
        List<FieldError> errors = new ArrayList<>();
        List<FieldError> checks = new ArrayList<>();
        T value = bind(body, type, "", errors, checks);
        Set<String> reported = new HashSet<>();
        for (FieldError e : errors) reported.add(e.field());
        for (FieldError e : violations(value)) if (reported.add(e.field())) errors.add(e);
        for (FieldError e : checks) if (reported.add(e.field())) errors.add(e);
        if (!errors.isEmpty()) throw ApiException.invalid(errors);
        return value;
    }

    private <T> T bind(JsonNode node, Class<T> type, String prefix, List<FieldError> errors, List<FieldError> checks) {
        RecordComponent[] components = type.getRecordComponents();
        Map<String, Integer> byName = new LinkedHashMap<>();
        for (int i = 0; i < components.length; i++) byName.put(jsonName(components[i]), i);
        JsonIgnoreProperties ignored = type.getAnnotation(JsonIgnoreProperties.class);
        Set<String> ignore = ignored == null ? Set.of() : Set.of(ignored.value());
        RequestBody.Refused refused = type.getAnnotation(RequestBody.Refused.class);
        Object[] args = new Object[components.length];
        node.fields().forEachRemaining(e -> {
            String name = e.getKey();
            if (ignore.contains(name)) return;
            Integer i = byName.get(name);
            if (i != null) {
                args[i] = value(e.getValue(), components[i], prefix + name, errors, checks);
            } else if (refused != null && Arrays.asList(refused.fields()).contains(name)) {
                errors.add(new FieldError(prefix + name, refused.message()));
            } else {
                List<String> known = byName.keySet().stream().sorted().toList();
                errors.add(new FieldError(prefix + name, known.size() == 1 ? "unknown field (expected " + known.get(0) + ")"
                        : "unknown field (expected one of " + String.join(", ", known) + ")"));
            }
        });
        T value = construct(type, components, args);
        if (value instanceof RequestBody r) for (FieldError e : r.check()) checks.add(e.prefixed(prefix));
        return value;
    }

    /** The field's value, or null (and an error) when its JSON type is wrong. */
    private Object value(JsonNode v, RecordComponent c, String field, List<FieldError> errors, List<FieldError> checks) {
        Field f = field(c);
        Class<?> raw = c.getType();
        if (JsonNode.class.isAssignableFrom(raw)) {
            if (f.isAnnotationPresent(RequestBody.SizeLimited.class)) {
                int bytes = v.toString().getBytes(StandardCharsets.UTF_8).length;
                if (bytes > maxPayloadBytes) {
                    throw new ApiException(Response.Status.REQUEST_ENTITY_TOO_LARGE.getStatusCode(),
                            field + " is " + bytes + " bytes; the limit is " + maxPayloadBytes,
                            List.of(new FieldError(field, "must be at most " + maxPayloadBytes + " bytes")), Map.of());
                }
            }
            return v; // JSON null is the value null, as submitted
        }
        Limit limit = f.getAnnotation(Limit.class);
        if (v.isNull()) {
            // a limit given as null is a wrong value, not a limit left out
            if (limit != null) wrong(limit.value(), v, field, errors);
            return null;
        }
        int before = errors.size();
        Object out = convert(v, raw, c.getGenericType(), field, wrongType(f, raw, v), errors, checks);
        if (limit != null && errors.size() > before) {
            // a tenant limit's own message says what it takes ("must be a whole number between 1 and 1000")
            errors.subList(before, errors.size()).clear();
            wrong(limit.value(), v, field, errors);
        } else if (limit != null && out != null && limit.value().kind() == TenantLimit.Kind.KEY_MAP) {
            // every bad entry of a map limit, each under its own name: Bean Validation folds violations
            // with the same message and path into one, so {"x": -1, "y": 1.5} had named x only
            try {
                limit.value().accept(out);
            } catch (TenantLimit.InvalidLimitException e) {
                String prefix = field.substring(0, field.length() - limit.value().field().length());
                Set<String> named = new HashSet<>();
                for (FieldError fe : e.errors()) {
                    if (named.add(fe.field())) errors.add(new FieldError(prefix + fe.field(), fe.message()));
                }
            }
        }
        return out;
    }

    private Object convert(JsonNode v, Class<?> raw, Type generic, String field, String wrong, List<FieldError> errors,
                           List<FieldError> checks) {
        if (raw == String.class || raw == OffsetDateTime.class) {
            if (!v.isTextual()) return error(errors, field, "must be a string");
            if (raw == String.class) return v.textValue();
            try {
                return OffsetDateTime.parse(v.textValue());
            } catch (DateTimeParseException e) {
                return error(errors, field, wrong);
            }
        }
        if (raw == Map.class) { // a tenant's key map: its limit checks the entries (keys and whole numbers)
            if (!v.isObject()) return error(errors, field, wrong);
            return mapper.convertValue(v, LinkedHashMap.class);
        }
        if (raw == List.class) {
            if (!v.isArray()) return error(errors, field, wrong);
            Type element = ((ParameterizedType) generic).getActualTypeArguments()[0];
            Class<?> elementClass = (Class<?>) element;
            List<Object> list = new ArrayList<>(v.size());
            for (int i = 0; i < v.size(); i++) {
                String at = field + "[" + i + "]";
                JsonNode e = v.get(i);
                if (elementClass.isRecord()) {
                    if (!e.isObject()) list.add(error(errors, at, "must be a JSON object"));
                    else list.add(bind(e, elementClass, at + ".", errors, checks));
                } else {
                    list.add(convert(e, elementClass, element, at, wrongType(elementClass), errors, checks));
                }
            }
            return list;
        }
        boolean ok;
        if (raw == Integer.class) ok = v.isIntegralNumber() && v.canConvertToInt();
        else if (raw == Long.class) ok = v.isIntegralNumber() && v.canConvertToLong();
        else if (raw == Double.class) ok = v.isNumber();
        else if (raw == Boolean.class) ok = v.isBoolean();
        else throw new IllegalStateException("a request field of type " + raw + " (use a boxed type, String, List or JsonNode)");
        if (!ok) return error(errors, field, wrong);
        return mapper.convertValue(v, raw);
    }

    private static Object error(List<FieldError> errors, String field, String message) {
        errors.add(new FieldError(field, message));
        return null;
    }

    private static void wrong(TenantLimit limit, JsonNode v, String field, List<FieldError> errors) {
        try {
            limit.accept(Json.MAPPER.convertValue(v, Object.class));
            errors.add(new FieldError(field, "is not valid"));
        } catch (TenantLimit.InvalidLimitException e) {
            String prefix = field.substring(0, field.length() - limit.field().length());
            errors.add(new FieldError(prefix + e.field(), e.getMessage()));
        }
    }

    /**
     * What a value the field cannot take as its type is told. A whole number too large for the field's Integer or
     * Long ({@code "priority": 3000000000}) is a whole number out of its range: the bound's own message ("must be
     * between -100 and 100"), as a tenant limit's, not "must be a whole number", which it is.
     */
    private static String wrongType(Field f, Class<?> raw, JsonNode v) {
        if ((raw == Integer.class || raw == Long.class) && v.isIntegralNumber()) {
            jakarta.validation.constraints.Min min = f.getAnnotation(jakarta.validation.constraints.Min.class);
            jakarta.validation.constraints.Max max = f.getAnnotation(jakarta.validation.constraints.Max.class);
            String bound = v.bigIntegerValue().signum() < 0 ? (min == null ? null : min.message())
                    : (max == null ? null : max.message());
            // a message written on the field, not Bean Validation's own template
            if (bound != null && !bound.startsWith("{")) return bound;
        }
        return wrongType(f, raw);
    }

    private static String wrongType(Field f, Class<?> raw) {
        RequestBody.WrongType w = f.getAnnotation(RequestBody.WrongType.class);
        return w != null ? w.value() : wrongType(raw);
    }

    private static String wrongType(Class<?> raw) {
        if (raw == Integer.class || raw == Long.class) return "must be a whole number";
        if (raw == Double.class) return "must be a number";
        if (raw == Boolean.class) return "must be true or false";
        if (raw == OffsetDateTime.class) return TIME_RULE;
        if (raw == List.class) return "must be an array";
        if (raw == Map.class) return "must be an object";
        return "must be a string";
    }

    /** Bean Validation's answer in the API's terms: JSON field names, one error per field, in declaration order. */
    private List<FieldError> violations(Object value) {
        record Found(String field, int[] order, String message) {}
        List<Found> found = new ArrayList<>();
        for (ConstraintViolation<Object> v : validator.validate(value)) {
            StringBuilder path = new StringBuilder();
            List<Integer> order = new ArrayList<>();
            Class<?> bean = value.getClass();
            Field leaf = null;
            for (Path.Node n : v.getPropertyPath()) {
                if (n.isInIterable() && n.getIndex() != null) {
                    path.append('[').append(n.getIndex()).append(']');
                    order.add(n.getIndex());
                    if (leaf != null) bean = elementClass(leaf);
                }
                if (n.getName() == null) continue;
                leaf = declaredField(bean, n.getName());
                if (path.length() > 0) path.append('.');
                path.append(leaf == null ? SNAKE.translate(n.getName()) : jsonName(leaf));
                order.add(componentIndex(bean, n.getName()));
            }
            @SuppressWarnings("unchecked")
            Object dynamic = ((HibernateConstraintViolation<Object>) v.unwrap(HibernateConstraintViolation.class))
                    .getDynamicPayload(String.class);
            String field = path.toString();
            if (dynamic != null) field = field.substring(0, field.lastIndexOf('.') + 1) + dynamic;
            order.add(annotationIndex(leaf, v.getConstraintDescriptor().getAnnotation()));
            if (dynamic instanceof String d && d.endsWith("]") && d.contains("[")) { // a list limit's entries in order
                order.add(Integer.parseInt(d.substring(d.lastIndexOf('[') + 1, d.length() - 1)));
            }
            found.add(new Found(field, order.stream().mapToInt(Integer::intValue).toArray(), v.getMessage()));
        }
        found.sort(Comparator.comparing(Found::order, Arrays::compare));
        List<FieldError> out = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (Found f : found) if (seen.add(f.field())) out.add(new FieldError(f.field(), f.message()));
        return out;
    }

    private static Class<?> elementClass(Field list) {
        Type t = list.getGenericType();
        return t instanceof ParameterizedType p && p.getActualTypeArguments()[0] instanceof Class<?> c ? c : Object.class;
    }

    private static Field declaredField(Class<?> bean, String name) {
        try {
            return bean.getDeclaredField(name);
        } catch (NoSuchFieldException e) {
            return null;
        }
    }

    private static int componentIndex(Class<?> bean, String name) {
        RecordComponent[] cs = bean.getRecordComponents();
        if (cs != null) for (int i = 0; i < cs.length; i++) if (cs[i].getName().equals(name)) return i;
        return Integer.MAX_VALUE;
    }

    private static int annotationIndex(Field field, Annotation a) {
        if (field == null) return Integer.MAX_VALUE;
        Annotation[] all = field.getDeclaredAnnotations();
        for (int i = 0; i < all.length; i++) if (all[i].annotationType() == a.annotationType()) return i;
        return Integer.MAX_VALUE;
    }

    private static Field field(RecordComponent c) {
        try {
            return c.getDeclaringRecord().getDeclaredField(c.getName());
        } catch (NoSuchFieldException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String jsonName(RecordComponent c) {
        return jsonName(field(c));
    }

    private static String jsonName(Field f) {
        JsonProperty p = f.getAnnotation(JsonProperty.class);
        return p != null && !p.value().isEmpty() ? p.value() : SNAKE.translate(f.getName());
    }

    private static <T> T construct(Class<T> type, RecordComponent[] components, Object[] args) {
        try {
            Constructor<T> c = type.getDeclaredConstructor(
                    Arrays.stream(components).map(RecordComponent::getType).toArray(Class<?>[]::new));
            c.setAccessible(true);
            return c.newInstance(args);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("cannot construct " + type.getName(), e);
        }
    }
}

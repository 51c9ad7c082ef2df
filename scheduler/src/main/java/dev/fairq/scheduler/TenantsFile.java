package dev.fairq.scheduler;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.fairq.schema.FieldError;
import dev.fairq.schema.JobStore;
import dev.fairq.schema.Json;
import dev.fairq.schema.TenantLimit;
import dev.fairq.schema.TenantLimits;
import dev.fairq.schema.TenantStore;
import org.jooq.DSLContext;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.regex.Pattern;

/**
 * {@code tenants.yml}: the tenants an installation starts with and the defaults for their limits.
 *
 * <pre>
 * defaults:            # optional; these are the built-in defaults
 *   weight: 1
 *   rate_per_second: 100
 *   burst: 200
 *   max_running: 20
 *   max_queued: 100000
 * tenants:
 *   - id: acme
 *     weight: 3
 *     webhook_allow: [hooks.acme.example]
 *     schedules:        # optional: the tenant's recurring schedules (ScheduleDefinition's fields, plus name)
 *       - name: nightly-report
 *         cron: "30 2 * * *"
 *         time_zone: Europe/Berlin
 *         job: {type: report, payload: {format: pdf}}
 *   - id: globex
 *     paused: true
 * </pre>
 *
 * Validated before anything is written: an unknown key, a wrong type, a value out of range or a duplicate
 * id fails start-up with the line and the field at fault. {@link #seed} inserts the tenants the database
 * does not have yet; a tenant that exists keeps its stored limits, because those may have been changed live
 * through the admin API since (the database is the source of truth once a tenant exists). Schedules are seeded
 * the same way: a schedule the tenant does not have is created, one it has keeps its stored definition.
 */
public final class TenantsFile {
    /** What a tenant id may be (the tenants table checks the same). */
    public static final Pattern TENANT_ID = dev.fairq.schema.JobRequest.TENANT_ID;

    /** A tenants.yml problem, with where it is. */
    public static final class InvalidTenantsFileException extends IllegalArgumentException {
        public InvalidTenantsFileException(String source, int line, String field, String message) {
            super(source + ":" + line + ": " + field + ": " + message);
        }
    }

    private final List<TenantLimits> tenants;
    /** Per tenant id, its schedules by name, in file order. */
    private final Map<String, Map<String, ScheduleDefinition>> schedules;
    /** The largest template payload the schedules were checked with, and are seeded with. */
    private final int maxPayloadBytes;

    private TenantsFile(List<TenantLimits> tenants, Map<String, Map<String, ScheduleDefinition>> schedules, int maxPayloadBytes) {
        this.tenants = List.copyOf(tenants);
        this.schedules = schedules;
        this.maxPayloadBytes = maxPayloadBytes;
    }

    /** The schedules declared per tenant id (tenants without any are left out). */
    public Map<String, Map<String, ScheduleDefinition>> schedules() {
        return schedules;
    }

    public List<TenantLimits> tenants() {
        return tenants;
    }

    public static TenantsFile load(Path path) throws IOException {
        return load(path, ScheduleService.DEFAULT_MAX_PAYLOAD_BYTES, (type, payload) -> Optional.empty());
    }

    /**
     * The file with its schedules checked as the API checks a schedule: by the process's largest payload
     * (FAIRQ_MAX_PAYLOAD_BYTES) and the API's template check (the http type's payload rules), so that a schedule
     * the API would refuse with a 422 stops start-up instead of firing jobs that die.
     */
    public static TenantsFile load(Path path, int maxPayloadBytes, BiFunction<String, String, Optional<FieldError>> templateCheck)
            throws IOException {
        try (Reader reader = Files.newBufferedReader(path)) {
            return parse(reader, path.toString(), maxPayloadBytes, templateCheck);
        }
    }

    public static TenantsFile parse(String yaml) {
        return parse(yaml, ScheduleService.DEFAULT_MAX_PAYLOAD_BYTES, (type, payload) -> Optional.empty());
    }

    public static TenantsFile parse(String yaml, int maxPayloadBytes, BiFunction<String, String, Optional<FieldError>> templateCheck) {
        return parse(new StringReader(yaml), "tenants.yml", maxPayloadBytes, templateCheck);
    }

    static TenantsFile parse(Reader reader, String source, int maxPayloadBytes,
                             BiFunction<String, String, Optional<FieldError>> templateCheck) {
        Node root;
        try {
            root = new Yaml(new LoaderOptions()).compose(reader);
        } catch (YAMLException e) {
            // a read that failed is not a YAML problem: it had been "not valid YAML: java.io.IOException: Is a directory"
            // and "...: java.nio.charset.MalformedInputException: Input length = 1"
            if (e.getCause() instanceof java.nio.charset.CharacterCodingException c) {
                throw new IllegalArgumentException(source + ": not UTF-8 text", c);
            }
            if (e.getCause() instanceof IOException io) {
                throw new IllegalArgumentException(source + ": cannot be read: " + io.getMessage(), io);
            }
            throw new IllegalArgumentException(source + ": not valid YAML: " + e.getMessage(), e);
        }
        if (root == null) return new TenantsFile(List.of(), Map.of(), maxPayloadBytes);
        MappingNode top = mapping(root, source, "(top level)");
        Map<String, Object> defaults = builtInDefaults();
        SequenceNode list = null;
        for (NodeTuple t : top.getValue()) {
            String key = key(t, source, "(top level)");
            switch (key) {
                case "defaults" -> defaults.putAll(limits(mapping(t.getValueNode(), source, "defaults"), source, "defaults", false));
                case "tenants" -> {
                    if (!(t.getValueNode() instanceof SequenceNode s)) {
                        throw error(source, t.getValueNode(), "tenants", "must be a list of tenants");
                    }
                    list = s;
                }
                default -> throw error(source, t.getKeyNode(), key, "unknown key (expected defaults or tenants)");
            }
        }
        List<TenantLimits> out = new ArrayList<>();
        Map<String, Map<String, ScheduleDefinition>> schedules = new LinkedHashMap<>();
        Map<String, Integer> seen = new HashMap<>();
        if (list != null) {
            for (int i = 0; i < list.getValue().size(); i++) {
                String where = "tenants[" + i + "]";
                MappingNode m = mapping(list.getValue().get(i), source, where);
                Map<String, Object> values = new LinkedHashMap<>(defaults);
                values.putAll(limits(m, source, where, true));
                String id = (String) values.get("id");
                if (id == null) throw error(source, m, where + ".id", "is required");
                int line = m.getStartMark().getLine() + 1;
                Integer previous = seen.putIfAbsent(id, line);
                if (previous != null) {
                    throw error(source, m, where + ".id", "duplicate tenant '" + id + "' (first defined on line " + previous + ")");
                }
                out.add(toLimits(values));
                Node declared = valueOf(m, "schedules");
                if (declared != null) {
                    schedules.put(id, schedules(declared, source, where + ".schedules", maxPayloadBytes, templateCheck));
                }
            }
        }
        return new TenantsFile(out, schedules, maxPayloadBytes);
    }

    /** A tenant's {@code schedules:} list, each checked as the API checks a schedule (errors name line and field). */
    private static Map<String, ScheduleDefinition> schedules(Node node, String source, String where, int maxPayloadBytes,
                                                             BiFunction<String, String, Optional<FieldError>> templateCheck) {
        if (!(node instanceof SequenceNode list)) throw error(source, node, where, "must be a list of schedules");
        Map<String, ScheduleDefinition> out = new LinkedHashMap<>();
        for (int i = 0; i < list.getValue().size(); i++) {
            String at = where + "[" + i + "]";
            MappingNode m = mapping(list.getValue().get(i), source, at);
            Node nameNode = valueOf(m, "name");
            if (nameNode == null) throw error(source, m, at + ".name", "is required");
            String name = scalar(nameNode, source, at + ".name");
            if (!ScheduleDefinition.checkName(name).isEmpty()) {
                throw error(source, nameNode, at + ".name", ScheduleDefinition.checkName(name).get(0).message());
            }
            if (out.containsKey(name)) throw error(source, nameNode, at + ".name", "duplicate schedule '" + name + "'");
            ObjectNode body = (ObjectNode) json(m, source, at);
            body.remove("name");
            try {
                ScheduleDefinition d = ScheduleDefinition.fromJson(body);
                ScheduleDefinition.Resolved r = d.resolve(maxPayloadBytes);
                Optional<FieldError> template = templateCheck.apply(r.jobType(), r.jobPayloadJson());
                if (template.isPresent()) throw new InvalidScheduleException(List.of(template.get().prefixed("job.")));
                out.put(name, d);
            } catch (InvalidScheduleException e) {
                dev.fairq.schema.FieldError first = e.errors().get(0);
                throw error(source, nodeAt(m, first.field()), at + "." + first.field(), first.message());
            }
        }
        return out;
    }

    /** The value of {@code key} in a mapping, or null. */
    private static Node valueOf(MappingNode m, String key) {
        for (NodeTuple t : m.getValue()) {
            if (t.getKeyNode() instanceof ScalarNode k && k.getValue().equals(key)) return t.getValueNode();
        }
        return null;
    }

    /** The node of a dotted field ({@code job.type}) for its line; the mapping itself when there is none. */
    private static Node nodeAt(MappingNode m, String field) {
        Node at = m;
        for (String part : field.split("\\.")) {
            Node next = at instanceof MappingNode mm ? valueOf(mm, part) : null;
            if (next == null) return at;
            at = next;
        }
        return at;
    }

    /**
     * A YAML node as JSON: scalars by their resolved YAML type (so {@code priority: 5} is a number). Every mapping
     * in it, a payload's too, is checked as the API checks a body: a repeated key is an error (JSON has no way to
     * carry both), and so is a key that is not text ({@code ~: 1} would have become the key "~").
     */
    private static final JsonNodeFactory EXACT = JsonNodeFactory.withExactBigDecimals(true);

    private static JsonNode json(Node n, String source, String at) {
        return json(n, source, at, java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>()));
    }

    /**
     * {@code within}: the mappings and lists being read around {@code n}. An alias inside its own anchor
     * ({@code &p {again: *p}}) is one of them again: it had recursed to a StackOverflowError and its trace.
     */
    private static JsonNode json(Node n, String source, String at, Set<Node> within) {
        if ((n instanceof MappingNode || n instanceof SequenceNode) && !within.add(n)) {
            throw error(source, n, at, "contains itself (a YAML alias inside its own anchor)");
        }
        if (n instanceof MappingNode m) {
            noRepeatedKey(m, source, at + ".");
            ObjectNode o = Json.MAPPER.createObjectNode();
            for (NodeTuple t : m.getValue()) {
                String key = key(t, source, at);
                o.set(key, json(t.getValueNode(), source, at + "." + key, within));
            }
            within.remove(n);
            return o;
        }
        if (n instanceof SequenceNode s) {
            ArrayNode a = Json.MAPPER.createArrayNode();
            for (int i = 0; i < s.getValue().size(); i++) a.add(json(s.getValue().get(i), source, at + "[" + i + "]", within));
            within.remove(n);
            return a;
        }
        ScalarNode sc = (ScalarNode) n;
        String v = sc.getValue();
        Tag tag = sc.getTag();
        try {
            // numbers as written, as the API keeps a payload's: a long or a double had made 1.50 1.5, cut
            // 0.12345678901234567890123 to 17 digits, and turned a 23-digit integer and 1e400 into text
            if (Tag.INT.equals(tag)) return EXACT.numberNode(new java.math.BigInteger(v));
            if (Tag.FLOAT.equals(tag)) return EXACT.numberNode(new java.math.BigDecimal(v));
        } catch (NumberFormatException e) {
            return JsonNodeFactory.instance.textNode(v); // 0x1F, 1_000 and the like: left as text, refused as such
        }
        if (Tag.BOOL.equals(tag)) {
            // YAML 1.1 also tags yes/no/on/off as booleans, which Boolean.parseBoolean read as false: 'paused: yes'
            // stored a schedule that fires. Only true and false are booleans here (YAML 1.2, JSON); the others stay
            // text, which a schedule's field refuses ("must be true or false") and a payload keeps as written
            if (v.equalsIgnoreCase("true") || v.equalsIgnoreCase("false")) {
                return JsonNodeFactory.instance.booleanNode(Boolean.parseBoolean(v));
            }
            return JsonNodeFactory.instance.textNode(v);
        }
        if (Tag.NULL.equals(tag)) return JsonNodeFactory.instance.nullNode();
        return JsonNodeFactory.instance.textNode(v);
    }

    /** Inserts the tenants that do not exist yet, then their schedules that do not; returns how many tenants were inserted. */
    public int seed(DSLContext ctx) {
        int inserted = new TenantStore().seed(ctx, tenants);
        ScheduleService service = new ScheduleService(new JobStore(), maxPayloadBytes);
        schedules.forEach((tenant, defs) -> service.seed(ctx, tenant, defs));
        return inserted;
    }

    /** The limits a tenant gets for what neither its entry nor {@code defaults:} says (a fresh, mutable map). */
    public static Map<String, Object> builtInDefaults() {
        return TenantLimit.defaults();
    }

    private static TenantLimits toLimits(Map<String, Object> v) {
        return TenantLimits.of((String) v.get("id"), v);
    }

    private static Map<String, Object> limits(MappingNode m, String source, String where, boolean allowId) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (NodeTuple t : m.getValue()) {
            String key = key(t, source, where);
            String field = where + "." + key;
            Node v = t.getValueNode();
            if (key.equals("schedules") && allowId) continue; // read by schedules()
            if (key.equals("id") && allowId) {
                String id = scalar(v, source, field);
                if (!TENANT_ID.matcher(id).matches()) {
                    throw error(source, v, field, dev.fairq.schema.JobRequest.TENANT_ID_RULE);
                }
                out.put("id", id);
                continue;
            }
            TenantLimit limit = TenantLimit.byField(key);
            if (limit == null) {
                String limits = String.join(", ", TenantLimit.fields().stream().sorted().toList());
                // defaults take the limits only: its id and schedules had been refused as unknown, "expected one of id, ..."
                if (!allowId && (key.equals("id") || key.equals("schedules"))) {
                    throw error(source, t.getKeyNode(), field, "belongs to a tenant, not to defaults (expected one of " + limits + ")");
                }
                throw error(source, t.getKeyNode(), field, "unknown key (expected one of "
                        + (allowId ? "id, schedules, " : "") + limits + ")");
            }
            try {
                out.put(key, limit.accept(yamlValue(limit, v, source, field)));
            } catch (TenantLimit.InvalidLimitException e) {
                throw error(source, at(v, e.field()), where + "." + e.field(), e.getMessage());
            }
        }
        return out;
    }

    /** The node a field error points at: a list's entry for {@code webhook_allow[2]}, else the value. */
    private static Node at(Node v, String field) {
        int open = field.indexOf('[');
        if (open < 0 || !(v instanceof SequenceNode seq)) return v;
        int i = Integer.parseInt(field.substring(open + 1, field.length() - 1));
        return i < seq.getValue().size() ? seq.getValue().get(i) : v;
    }

    /**
     * A YAML value as the Java value {@link TenantLimit#accept} checks. Text that does not parse as the
     * limit's kind is passed on as text, which accept rejects with the limit's own message.
     */
    private static Object yamlValue(TenantLimit limit, Node v, String source, String field) {
        if (limit.kind() == TenantLimit.Kind.KEY_MAP) {
            if (!(v instanceof MappingNode m)) return scalar(v, source, field);
            noRepeatedKey(m, source, field + ".");
            Map<String, Object> entries = new LinkedHashMap<>();
            for (NodeTuple t : m.getValue()) {
                String text = scalar(t.getValueNode(), source, field);
                Object value;
                try {
                    value = Long.parseLong(text);
                } catch (NumberFormatException e) {
                    value = text; // accept names the entry and what it takes
                }
                entries.put(key(t, source, field), value);
            }
            return entries;
        }
        if (limit.kind() == TenantLimit.Kind.HOST_LIST) {
            if (!(v instanceof SequenceNode seq)) return scalar(v, source, field);
            List<Object> items = new ArrayList<>();
            for (Node item : seq.getValue()) items.add(scalar(item, source, field));
            return items;
        }
        String text = scalar(v, source, field);
        try {
            return switch (limit.kind()) {
                case WHOLE -> Long.parseLong(text);
                case POSITIVE_NUMBER -> Double.parseDouble(text);
                case BOOLEAN -> text.equals("true") ? Boolean.TRUE : text.equals("false") ? Boolean.FALSE : text;
                case HOST_LIST, KEY_MAP -> text;
            };
        } catch (NumberFormatException e) {
            return text;
        }
    }

    private static String scalar(Node v, String source, String field) {
        if (!(v instanceof ScalarNode s)) throw error(source, v, field, "must be a single value");
        return s.getValue();
    }

    /** A mapping's key as text; a key that is a list, a mapping or null ({@code ~}, {@code null}) is an error. */
    private static String key(NodeTuple t, String source, String where) {
        Node k = t.getKeyNode();
        if (!(k instanceof ScalarNode s)) throw error(source, k, where, "a key must be a single value, not a list or a mapping");
        if (Tag.NULL.equals(s.getTag())) throw error(source, k, where, "a key must be text, not null ('" + s.getValue() + "')");
        return s.getValue();
    }

    private static MappingNode mapping(Node n, String source, String field) {
        if (!(n instanceof MappingNode m)) throw error(source, n, field, "must be a mapping of keys to values");
        noRepeatedKey(m, source, field.equals("(top level)") ? "" : field + ".");
        return m;
    }

    /**
     * A key given twice in one mapping is an error, as a repeated field is for the API (400 "is given more than
     * once"): SnakeYAML's composer keeps both, and the later one silently won ({@code {stripe-api: 5, stripe-api: 1}}
     * set the limit to 1).
     */
    private static void noRepeatedKey(MappingNode m, String source, String prefix) {
        Set<String> seen = new HashSet<>();
        for (NodeTuple t : m.getValue()) {
            if (t.getKeyNode() instanceof ScalarNode k && !seen.add(k.getValue())) {
                throw error(source, k, prefix + k.getValue(), "is given more than once");
            }
        }
    }

    private static InvalidTenantsFileException error(String source, Node at, String field, String message) {
        return new InvalidTenantsFileException(source, at.getStartMark().getLine() + 1, field, message);
    }
}

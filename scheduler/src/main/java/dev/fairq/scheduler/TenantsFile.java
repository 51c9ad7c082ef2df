package dev.fairq.scheduler;

import dev.fairq.schema.TenantLimits;
import dev.fairq.schema.WebhookAllowList;
import org.jooq.DSLContext;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;

import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 *   - id: globex
 *     paused: true
 * </pre>
 *
 * Validated before anything is written: an unknown key, a wrong type, a value out of range or a duplicate
 * id fails start-up with the line and the field at fault. {@link #seed} inserts the tenants the database
 * does not have yet; a tenant that exists keeps its stored limits, because those may have been changed live
 * through the admin API since (the database is the source of truth once a tenant exists).
 */
public final class TenantsFile {
    /** What a tenant id may be (the tenants table checks the same). */
    public static final Pattern TENANT_ID = Pattern.compile("[a-z0-9][a-z0-9_-]{0,62}");
    private static final Set<String> LIMIT_KEYS = Set.of("weight", "rate_per_second", "burst", "max_running",
            "max_queued", "paused", "webhook_allow");

    /** A tenants.yml problem, with where it is. */
    public static final class InvalidTenantsFileException extends IllegalArgumentException {
        public InvalidTenantsFileException(String source, int line, String field, String message) {
            super(source + ":" + line + ": " + field + ": " + message);
        }
    }

    private final List<TenantLimits> tenants;

    private TenantsFile(List<TenantLimits> tenants) {
        this.tenants = List.copyOf(tenants);
    }

    public List<TenantLimits> tenants() {
        return tenants;
    }

    public static TenantsFile load(Path path) throws IOException {
        try (Reader reader = Files.newBufferedReader(path)) {
            return parse(reader, path.toString());
        }
    }

    public static TenantsFile parse(String yaml) {
        return parse(new StringReader(yaml), "tenants.yml");
    }

    static TenantsFile parse(Reader reader, String source) {
        Node root;
        try {
            root = new Yaml(new LoaderOptions()).compose(reader);
        } catch (YAMLException e) {
            throw new IllegalArgumentException(source + ": not valid YAML: " + e.getMessage(), e);
        }
        if (root == null) return new TenantsFile(List.of());
        MappingNode top = mapping(root, source, "(top level)");
        Map<String, Object> defaults = builtInDefaults();
        SequenceNode list = null;
        for (NodeTuple t : top.getValue()) {
            String key = key(t, source);
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
            }
        }
        return new TenantsFile(out);
    }

    /** Inserts the tenants that do not exist yet; returns how many were inserted. */
    public int seed(DSLContext ctx) {
        int inserted = 0;
        for (TenantLimits t : tenants) {
            inserted += ctx.execute("""
                    INSERT INTO tenants (id, weight, rate_per_second, burst, max_running, max_queued, paused, webhook_allow)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?::text[])
                    ON CONFLICT (id) DO NOTHING""", t.id(), t.weight(), t.ratePerSecond(), t.burst(), t.maxRunning(),
                    t.maxQueued(), t.paused(), t.webhookAllow().toArray(String[]::new));
        }
        return inserted;
    }

    /** The limits a tenant gets for what neither its entry nor {@code defaults:} says (a fresh, mutable map). */
    public static Map<String, Object> builtInDefaults() {
        Map<String, Object> d = new LinkedHashMap<>();
        d.put("weight", 1);
        d.put("rate_per_second", 100.0);
        d.put("burst", 200);
        d.put("max_running", 20);
        d.put("max_queued", 100_000);
        d.put("paused", false);
        d.put("webhook_allow", List.of());
        return d;
    }

    private static TenantLimits toLimits(Map<String, Object> v) {
        @SuppressWarnings("unchecked")
        List<String> allow = (List<String>) v.get("webhook_allow");
        return new TenantLimits((String) v.get("id"), (Integer) v.get("weight"), (Double) v.get("rate_per_second"),
                (Integer) v.get("burst"), (Integer) v.get("max_running"), (Integer) v.get("max_queued"),
                (Boolean) v.get("paused"), allow);
    }

    private static Map<String, Object> limits(MappingNode m, String source, String where, boolean allowId) {
        Map<String, Object> out = new LinkedHashMap<>();
        for (NodeTuple t : m.getValue()) {
            String key = key(t, source);
            String field = where + "." + key;
            Node v = t.getValueNode();
            if (key.equals("id") && allowId) {
                String id = scalar(v, source, field);
                if (!TENANT_ID.matcher(id).matches()) {
                    throw error(source, v, field, "must be 1-63 lower-case letters, digits, '_' or '-', starting with a letter or digit");
                }
                out.put("id", id);
                continue;
            }
            if (!LIMIT_KEYS.contains(key)) {
                throw error(source, t.getKeyNode(), field, "unknown key (expected one of id, " + String.join(", ", LIMIT_KEYS.stream().sorted().toList()) + ")");
            }
            switch (key) {
                case "weight" -> out.put(key, intIn(v, source, field, 1, 1000));
                case "burst" -> out.put(key, intIn(v, source, field, 1, 1_000_000));
                case "max_running" -> out.put(key, intIn(v, source, field, 1, 100_000));
                case "max_queued" -> out.put(key, intIn(v, source, field, 1, Integer.MAX_VALUE));
                case "rate_per_second" -> {
                    double d;
                    try {
                        d = Double.parseDouble(scalar(v, source, field));
                    } catch (NumberFormatException e) {
                        throw error(source, v, field, "must be a number");
                    }
                    if (!(d > 0 && d <= 1_000_000)) throw error(source, v, field, "must be > 0 and <= 1000000");
                    out.put(key, d);
                }
                case "paused" -> {
                    String s = scalar(v, source, field);
                    if (!s.equals("true") && !s.equals("false")) throw error(source, v, field, "must be true or false");
                    out.put(key, Boolean.parseBoolean(s));
                }
                case "webhook_allow" -> {
                    if (!(v instanceof SequenceNode seq)) throw error(source, v, field, "must be a list of allow-list entries");
                    List<String> hosts = new ArrayList<>();
                    for (int i = 0; i < seq.getValue().size(); i++) {
                        Node h = seq.getValue().get(i);
                        String host = scalar(h, source, field + "[" + i + "]");
                        try {
                            WebhookAllowList.parseEntry(host);
                        } catch (IllegalArgumentException e) {
                            throw error(source, h, field + "[" + i + "]", e.getMessage());
                        }
                        hosts.add(host.trim().toLowerCase(java.util.Locale.ROOT));
                    }
                    out.put(key, List.copyOf(hosts));
                }
                default -> throw new IllegalStateException(key);
            }
        }
        return out;
    }

    private static int intIn(Node v, String source, String field, int min, int max) {
        String s = scalar(v, source, field);
        long n;
        try {
            n = Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw error(source, v, field, "must be a whole number");
        }
        if (n < min || n > max) throw error(source, v, field, "must be between " + min + " and " + max);
        return (int) n;
    }

    private static String scalar(Node v, String source, String field) {
        if (!(v instanceof ScalarNode s)) throw error(source, v, field, "must be a single value");
        return s.getValue();
    }

    private static String key(NodeTuple t, String source) {
        return scalar(t.getKeyNode(), source, "(key)");
    }

    private static MappingNode mapping(Node n, String source, String field) {
        if (!(n instanceof MappingNode m)) throw error(source, n, field, "must be a mapping of keys to values");
        return m;
    }

    private static InvalidTenantsFileException error(String source, Node at, String field, String message) {
        return new InvalidTenantsFileException(source, at.getStartMark().getLine() + 1, field, message);
    }
}

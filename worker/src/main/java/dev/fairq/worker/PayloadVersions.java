package dev.fairq.worker;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import dev.fairq.schema.Json;
import dev.fairq.schema.JobRequest;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.UnaryOperator;

/**
 * The payload versions a handler reads, and the upcasters that bring older payloads to a version it reads
 * (seed 003). {@code PayloadVersions.reads(2).upcast(1, p -> ...)}: the handler gets version-2 payloads as they
 * are and version-1 payloads turned into version 2 first; {@link JobContext#payloadVersion()} says which it got.
 * A job whose version the handler neither reads nor can upcast to one it reads fails permanently (dead at once,
 * never retried: no other attempt of this worker would read it either), its {@code last_error} naming the
 * version; explain then answers {@code unknown_payload_version}.
 *
 * <p>Upcasters step one version at a time (v to v + 1) and chain: a handler reading 3 with upcasters from 1 and
 * 2 reads version-1 payloads. An upcaster that throws fails the attempt permanently too (its bug, not the job's
 * luck). Immutable: each call returns a new value.
 */
public final class PayloadVersions {
    /** What a handler registered without versions reads: version 1, the payloads submitted without one. */
    public static final PayloadVersions V1 = new PayloadVersions(Set.of(1), Map.of());

    /** The start of {@link #UNKNOWN}'s error text; explain recognises a dead job's last_error by it. */
    public static final String UNKNOWN = "unknown payload_version";

    private final Set<Integer> reads;
    private final Map<Integer, UnaryOperator<JsonNode>> upcasters;

    private PayloadVersions(Set<Integer> reads, Map<Integer, UnaryOperator<JsonNode>> upcasters) {
        this.reads = Set.copyOf(reads);
        this.upcasters = Map.copyOf(upcasters);
    }

    /** A handler that reads these versions (at least one). */
    public static PayloadVersions reads(int... versions) {
        if (versions.length == 0) throw new IllegalArgumentException("a handler reads at least one payload version");
        Set<Integer> set = new TreeSet<>();
        for (int v : versions) set.add(check(v));
        return new PayloadVersions(set, Map.of());
    }

    /** Adds the upcaster from {@code fromVersion} to {@code fromVersion + 1}. */
    public PayloadVersions upcast(int fromVersion, UnaryOperator<JsonNode> toNext) {
        check(fromVersion);
        check(fromVersion + 1);
        if (upcasters.containsKey(fromVersion)) {
            throw new IllegalArgumentException("an upcaster from payload version " + fromVersion + " is already registered");
        }
        Map<Integer, UnaryOperator<JsonNode>> next = new TreeMap<>(upcasters);
        next.put(fromVersion, toNext);
        return new PayloadVersions(reads, next);
    }

    public Set<Integer> readVersions() {
        return new TreeSet<>(reads);
    }

    public Set<Integer> upcastFrom() {
        return new TreeSet<>(upcasters.keySet());
    }

    /** A payload as the handler gets it. */
    public record Read(int version, String json) {}

    /**
     * The payload as the handler reads it: upcast step by step to the highest version the chain reaches that the
     * handler reads (as is when that is its own); {@link PermanentJobException} naming the version when none is.
     */
    public Read read(String type, int version, String json) throws PermanentJobException {
        // the highest version the chain reaches that the handler reads, not the first: with reads(2, 3) and an
        // upcaster from 2, a version-2 payload is brought to 3 (api/README, "Contract notes for the handler toolkit")
        int target = reads.contains(version) ? version : -1;
        for (int c = version; upcasters.containsKey(c); c++) {
            if (reads.contains(c + 1)) target = c + 1;
        }
        if (target < 0) {
            throw new PermanentJobException(UNKNOWN + " " + version + " for type '" + type + "': its handler reads "
                    + readVersions() + (upcasters.isEmpty() ? "" : " and upcasts from " + upcastFrom()));
        }
        if (target == version) return new Read(version, json);
        int v = version;
        JsonNode node = null;
        while (v < target) {
            try {
                if (node == null) node = Json.EXACT.readTree(json); // numbers through upcasting as stored
                node = upcasters.get(v).apply(node);
            } catch (JsonProcessingException | RuntimeException | AssertionError | LinkageError | StackOverflowError e) {
                // an Error of the upcaster's own code (an assert, a missing class, a runaway recursion) is its bug too:
                // retried, it fails the same way every attempt (only a JVM short of memory is left to the worker)
                throw new PermanentJobException("upcasting the payload of type '" + type + "' from payload_version " + v
                        + " to " + (v + 1) + " failed: " + e, e);
            }
            if (node == null) throw new PermanentJobException("the upcaster of type '" + type + "' from payload_version "
                    + v + " returned no payload");
            v++;
        }
        try {
            return new Read(v, Json.MAPPER.writeValueAsString(node));
        } catch (JsonProcessingException e) {
            throw new PermanentJobException("the upcast payload of type '" + type + "' is not JSON: " + e, e);
        }
    }

    private static int check(int v) {
        if (v < JobRequest.MIN_PAYLOAD_VERSION || v > JobRequest.MAX_PAYLOAD_VERSION) {
            throw new IllegalArgumentException("payload versions are " + JobRequest.MIN_PAYLOAD_VERSION + " to "
                    + JobRequest.MAX_PAYLOAD_VERSION + ", not " + v);
        }
        return v;
    }

    @Override
    public String toString() {
        return "reads " + readVersions() + (upcasters.isEmpty() ? "" : ", upcasts from " + upcastFrom());
    }
}

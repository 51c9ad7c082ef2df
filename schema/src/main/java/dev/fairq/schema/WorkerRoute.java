package dev.fairq.schema;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What one worker process can run, as it registers in the worker registry (the {@code workers} table): the
 * queues it serves, the job types it has handlers for, and the threads it reserves for some queues.
 *
 * @param queues   the queues it serves; null: every queue
 * @param types    the types it has handlers for; null: every type (a tool, or a process of an older release)
 * @param reserved threads kept for jobs of a queue (queue to threads): jobs of other queues never take them
 */
public record WorkerRoute(Set<String> queues, Set<String> types, Map<String, Integer> reserved) {
    /** Serves everything, reserves nothing. */
    public static final WorkerRoute ANY = new WorkerRoute(null, null, Map.of());

    public WorkerRoute {
        queues = queues == null ? null : Set.copyOf(new TreeSet<>(queues));
        types = types == null ? null : Set.copyOf(new TreeSet<>(types));
        reserved = reserved == null ? Map.of() : Map.copyOf(new TreeMap<>(reserved));
    }

    public static WorkerRoute of(Collection<String> queues, Collection<String> types, Map<String, Integer> reserved) {
        return new WorkerRoute(queues == null ? null : Set.copyOf(queues), types == null ? null : Set.copyOf(types), reserved);
    }

    static WorkerRoute of(String[] queues, String[] types, String reservedJson) {
        Map<String, Integer> reserved;
        try {
            reserved = reservedJson == null ? Map.of() : Json.MAPPER.readValue(reservedJson, new TypeReference<Map<String, Integer>>() {});
        } catch (JsonProcessingException e) {
            reserved = Map.of(); // written by fairq itself; an operator's hand edit only loses the reservation's display
        }
        return new WorkerRoute(queues == null ? null : new TreeSet<>(List.of(queues)),
                types == null ? null : new TreeSet<>(List.of(types)), reserved);
    }

    /** True when this worker can run a job of this queue and type. */
    public boolean serves(String queue, String type) {
        return (queues == null || queues.contains(queue)) && (types == null || types.contains(type));
    }

    NamedSql.Binding bind(NamedSql.Binding b) {
        try {
            return b.set("queues", queues == null ? null : sorted(queues))
                    .set("types", types == null ? null : sorted(types))
                    .set("reserved", Json.MAPPER.writeValueAsString(new TreeMap<>(reserved)));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String[] sorted(Set<String> s) {
        return new TreeSet<>(s).toArray(String[]::new);
    }

    /** A live worker process: its id, threads and route. */
    public record Live(String workerId, int capacity, WorkerRoute route) {}

    /**
     * Whether some live worker can run a job of this queue and type. With no live worker at all there is
     * nobody to route to, and the answer is true: jobs then wait for workers as they always did, admitted
     * (parking the whole backlog while every worker restarts would only make the restart slow).
     */
    public static boolean anyServes(List<Live> live, String queue, String type) {
        if (live.isEmpty()) return true;
        for (Live w : live) if (w.route().serves(queue, type)) return true;
        return false;
    }
}

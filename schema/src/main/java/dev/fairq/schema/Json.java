package dev.fairq.schema;

import com.fasterxml.jackson.databind.ObjectMapper;

/** The one shared Jackson mapper of the core (thread safe once configured). */
public final class Json {
    public static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {}
}

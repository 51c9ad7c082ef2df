package dev.fairq.schema;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.cfg.JsonNodeFeature;

/** The one shared Jackson mapper of the core (thread safe once configured). */
public final class Json {
    public static final ObjectMapper MAPPER = new ObjectMapper();

    /**
     * Reads a tree with its numbers as written: a payload's 0.12345678901234567890123 or 1e400 (jsonb keeps them
     * exactly) would lose digits, or become "Infinity", as doubles.
     */
    public static final ObjectReader EXACT = MAPPER.readerFor(JsonNode.class)
            .with(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .without(JsonNodeFeature.STRIP_TRAILING_BIGDECIMAL_ZEROES);

    private Json() {}
}

package dev.fairq.api;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SECURITY.md names, for each guard, the tests that hold it: every one of them must exist (a test, or a test
 * method, that is renamed or removed fails here until the document follows), and it covers the parts the issue asked.
 */
class SecurityDocTest {
    private static final Path ROOT = Path.of("..");

    @Test
    void everyTestSecurityMdNamesExists() throws IOException {
        String doc = Files.readString(ROOT.resolve("SECURITY.md"));
        for (String section : List.of("## Threat model", "## What each guard covers", "## What remains", "## Reporting a vulnerability")) {
            assertTrue(doc.contains(section), "SECURITY.md has " + section);
        }
        Map<String, Path> tests;
        tests = new java.util.HashMap<>();
        try (Stream<Path> modules = Files.list(ROOT)) {
            for (Path testSources : modules.map(m -> m.resolve("src/test/java")).filter(Files::isDirectory).toList()) {
                try (Stream<Path> files = Files.walk(testSources)) { // sources only: target/ changes while tests run
                    files.filter(p -> p.toString().endsWith(".java"))
                            .forEach(p -> tests.putIfAbsent(p.getFileName().toString().replace(".java", ""), p));
                }
            }
        }
        Matcher m = Pattern.compile("`([A-Z][A-Za-z]*(?:Test|IT))(?:\\.([a-zA-Z]+))?`").matcher(doc);
        List<String> named = new ArrayList<>();
        while (m.find()) {
            String cls = m.group(1);
            named.add(cls);
            assertTrue(tests.containsKey(cls), "SECURITY.md names " + cls + ", which does not exist");
            if (m.group(2) != null) {
                assertTrue(Files.readString(tests.get(cls)).contains("void " + m.group(2) + "("),
                        "SECURITY.md names " + cls + "." + m.group(2) + ", which does not exist");
            }
        }
        for (String must : List.of("HttpSsrfTest", "BadInputTest", "GeneratedInputPropertyTest", "ApiRateLimitTest",
                "AdminTokensTest", "AdminPortTest", "EmbeddedDatabaseTest")) {
            assertTrue(named.contains(must), "SECURITY.md names " + must);
        }
        assertEquals(-1, doc.indexOf("TODO"));
    }
}

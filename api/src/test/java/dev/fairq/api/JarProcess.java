package dev.fairq.api;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/** {@code java -jar fairq.jar ARGS} in its own JVM, with only the given FAIRQ_ variables; its output (stdout and stderr) collected line by line as it comes. */
record JarProcess(Process process, List<String> lines) {
    static JarProcess start(Path dir, String heap, Map<String, String> env, String... args) throws java.io.IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                heap, "-jar", Path.of(System.getProperty("fairq.jar", "target/fairq.jar")).toAbsolutePath().toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        if (dir != null) pb.directory(dir.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("FAIRQ_"));
        pb.environment().putAll(env);
        Process p = pb.start();
        List<String> lines = new CopyOnWriteArrayList<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) lines.add(line);
            } catch (Exception ignored) {
                // the process ended
            }
        });
        reader.setDaemon(true);
        reader.start();
        return new JarProcess(p, lines);
    }
}

package org.ferrocket.interop.grpc;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;

/**
 * One `ferrocket proxy` (the stand-alone gRPC endpoint) on a free 127.0.0.1
 * port in front of a test's name server, its output in a log file under
 * the interop home. Stopped by the pid it started: SIGTERM, then SIGKILL.
 */
final class FerrocketProxy implements AutoCloseable {
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);
    private static final int PORT_TRIES_MAX = 5;

    private final Process process;
    private final int port;
    private final Path logFile;

    private FerrocketProxy(Process process, int port, Path logFile) {
        this.process = process;
        this.port = port;
        this.logFile = logFile;
    }

    static FerrocketProxy start(Ferrocket server) throws Exception {
        return start(server, List.of());
    }

    /** A proxy with settings (`key=value`, each passed as `--set`). */
    static FerrocketProxy start(Ferrocket server, List<String> settings) throws Exception {
        String last = "";
        for (int attempt = 1; attempt <= PORT_TRIES_MAX; attempt++) {
            int port = Ferrocket.freeLoopbackPort();
            Path dir = Ferrocket.home().resolve("servers").resolve(Names.unique("proxy"));
            Files.createDirectories(dir);
            Path log = dir.resolve("proxy.log");
            List<String> command = new ArrayList<>(List.of(Ferrocket.binary().toString(), "proxy",
                "--namesrv-addr", server.namesrvAddr(), "--listen-addr", "127.0.0.1",
                "--listen-port", Integer.toString(port)));
            for (String setting : settings) {
                command.add("--set");
                command.add(setting);
            }
            ProcessBuilder builder = new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            builder.environment().put("RUST_LOG", System.getenv().getOrDefault("RUST_LOG", "info"));
            builder.environment().put("NO_COLOR", "1");
            FerrocketProxy proxy = new FerrocketProxy(builder.start(), port, log);
            try {
                if (proxy.waitReady()) {
                    return proxy;
                }
                last = proxy.logText();
                proxy.close();
            } catch (Exception e) {
                proxy.close();
                throw e;
            }
        }
        throw new IllegalStateException("proxy found no free port in " + PORT_TRIES_MAX + " tries: " + last);
    }

    /** True once listening; false when the port was taken. */
    private boolean waitReady() throws Exception {
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        String needle = "ferrocket proxy listening on " + address();
        while (true) {
            String log = logText();
            if (log.contains(needle)) {
                return true;
            }
            if (!process.isAlive()) {
                if (log.contains("in use") || log.contains("os error 98")) {
                    return false;
                }
                throw new IllegalStateException("proxy exited with " + process.exitValue()
                    + " before listening; its output:\n" + log);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("proxy did not listen within " + READY_TIMEOUT + ":\n" + log);
            }
            Thread.sleep(50);
        }
    }

    String address() {
        return "127.0.0.1:" + port;
    }

    String logText() {
        try {
            return new String(Files.readAllBytes(logFile), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    @Override
    public void close() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy(); // SIGTERM to exactly this pid
        try {
            if (!process.waitFor(15, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(15, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}

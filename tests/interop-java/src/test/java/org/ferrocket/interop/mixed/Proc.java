package org.ferrocket.interop.mixed;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One server process of a mixed cluster (a Ferrocket name server or
 * broker, or an Apache RocketMQ one started through
 * scripts/peers/run-apache-rocketmq.sh --foreground, which execs java: the
 * pid is the JVM's). Output goes to a log file in its work directory (kept);
 * its data directory is deleted by {@link #close()}, which stops exactly
 * the pid started: SIGTERM, then SIGKILL after the grace period.
 */
public final class Proc implements AutoCloseable {
    static final Duration READY_TIMEOUT = Duration.ofSeconds(90);
    static final int LOG_TAIL_LINES = 60;

    /** Every process started and not yet stopped, stopped at JVM exit too. */
    private static final Map<Long, Proc> LIVE = new ConcurrentHashMap<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.values().forEach(Proc::close)));
    }

    private final String name;
    private final Process process;
    private final Path workDir;
    private final Path dataDir;
    private final Path logFile;
    private final int port;
    private final Duration stopGrace;

    private Proc(String name, Process process, Path workDir, Path dataDir, Path logFile, int port,
        Duration stopGrace) {
        this.name = name;
        this.process = process;
        this.workDir = workDir;
        this.dataDir = dataDir;
        this.logFile = logFile;
        this.port = port;
        this.stopGrace = stopGrace;
    }

    /** Starts `command` in `workDir` (created), output to workDir/NAME.log. */
    static Proc launch(String name, List<String> command, Path workDir, Path dataDir, int port,
        Map<String, String> env, Duration stopGrace) throws IOException {
        Files.createDirectories(workDir);
        Path log = workDir.resolve(name + ".log");
        ProcessBuilder builder = new ProcessBuilder(command)
            .directory(workDir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        builder.environment().put("HOME", workDir.toString());
        builder.environment().put("NO_COLOR", "1");
        builder.environment().putAll(env);
        Proc proc = new Proc(name, builder.start(), workDir, dataDir, log, port, stopGrace);
        LIVE.put(proc.pid(), proc);
        return proc;
    }

    /** Waits until the process accepts connections on its port (and `logLine`, if given, is logged). */
    Proc waitReady(String logLine) throws Exception {
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        while (!(listening() && (logLine == null || logText().contains(logLine)))) {
            if (!process.isAlive()) {
                throw new IllegalStateException(this + " exited with " + process.exitValue()
                    + " before it listened; its log tail:\n" + logTail());
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(this + " did not listen within " + READY_TIMEOUT
                    + "; its log tail:\n" + logTail());
            }
            Thread.sleep(100);
        }
        return this;
    }

    private boolean listening() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    public String addr() {
        return "127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    public long pid() {
        return process.pid();
    }

    public boolean alive() {
        return process.isAlive();
    }

    public Path workDir() {
        return workDir;
    }

    public String logText() {
        try {
            return new String(Files.readAllBytes(logFile), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    public String logTail() {
        String[] lines = logText().split("\n", -1);
        int from = Math.max(0, lines.length - LOG_TAIL_LINES);
        return String.join("\n", Arrays.copyOfRange(lines, from, lines.length));
    }

    /** SIGKILL now: a crash, not a shutdown (the data directory stays until close). */
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /**
     * Stops the pid this object started (SIGTERM, SIGKILL after `grace`),
     * keeping its data directory: a clean shutdown before another server
     * opens the same store.
     */
    public synchronized void stop(Duration grace) throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor(30, TimeUnit.SECONDS);
                throw new IllegalStateException(this + " did not stop within " + grace + "; killed");
            }
        }
        LIVE.remove(process.pid());
    }

    /** Stops the pid this object started, then deletes its data directory. */
    @Override
    public synchronized void close() {
        if (process.isAlive()) {
            process.destroy(); // SIGTERM to exactly this pid
            try {
                if (!process.waitFor(stopGrace.toMillis(), TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly();
                    process.waitFor(30, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        LIVE.remove(process.pid());
        deleteTree(dataDir);
    }

    static void deleteTree(Path root) {
        if (root == null || !Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> {
                try {
                    Files.deleteIfExists(path);
                } catch (IOException e) {
                    System.err.println("could not delete " + path + ": " + e);
                }
            });
        } catch (IOException e) {
            System.err.println("could not delete " + root + ": " + e);
        }
    }

    @Override
    public String toString() {
        return name + " (pid " + pid() + ", " + addr() + ", log " + logFile + ")";
    }
}

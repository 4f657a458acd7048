package org.ferrocket.interop;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One real `ferrocket start` (a name server and a broker as children of one
 * supervisor process) on free 127.0.0.1 ports. Started from FERROCKET_BIN,
 * its output goes to a log file under FERROCKET_INTEROP_HOME (kept), its
 * data to a directory that {@link #close()} deletes. Stopped by the pid it
 * started: SIGTERM, then SIGKILL after a grace period (the supervisor stops
 * its children; they also get SIGTERM when it dies).
 */
public final class Ferrocket implements AutoCloseable {
    static final Duration READY_TIMEOUT = Duration.ofSeconds(60);
    static final Duration STOP_GRACE = Duration.ofSeconds(15);
    static final int PORT_TRIES_MAX = 5;
    static final int LOG_TAIL_LINES = 80;
    /** Small CommitLog segments: a test broker preallocates 64 MiB, not 1 GiB. */
    static final String SEGMENT_BYTES = "67108864";

    /** Every server started and not yet stopped, stopped at JVM exit too. */
    private static final Map<Long, Ferrocket> LIVE = new ConcurrentHashMap<>();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.values().forEach(Ferrocket::close)));
    }

    private final String name;
    private final Process process;
    private final int namesrvPort;
    private final int brokerPort;
    private final Path workDir;
    private final Path dataDir;
    private final Path logFile;

    private Ferrocket(String name, Process process, int namesrvPort, int brokerPort, Path workDir) {
        this.name = name;
        this.process = process;
        this.namesrvPort = namesrvPort;
        this.brokerPort = brokerPort;
        this.workDir = workDir;
        this.dataDir = workDir.resolve("data");
        this.logFile = workDir.resolve("ferrocket.log");
    }

    public static Path binary() {
        String bin = env("FERROCKET_BIN");
        if (bin == null) {
            bin = env("FERROCKET_BIN_DEFAULT");
        }
        if (bin == null || !Files.isExecutable(Paths.get(bin))) {
            throw new IllegalStateException("ferrocket binary not found at " + bin
                + "; build it (cargo build --bin ferrocket) or set FERROCKET_BIN");
        }
        return Paths.get(bin).toAbsolutePath();
    }

    public static Path home() {
        String home = env("FERROCKET_INTEROP_HOME");
        if (home == null) {
            home = env("FERROCKET_INTEROP_HOME_DEFAULT");
        }
        if (home == null) {
            home = System.getProperty("java.io.tmpdir") + "/ferrocket-interop-java";
        }
        return Paths.get(home).toAbsolutePath();
    }

    private static String env(String key) {
        String value = System.getenv(key);
        return value == null || value.isEmpty() ? null : value;
    }

    /** Starts a name server and broker with extra broker settings (`key=value`). */
    public static Ferrocket start(String name, List<String> brokerSettings) throws Exception {
        Exception last = null;
        for (int attempt = 1; attempt <= PORT_TRIES_MAX; attempt++) {
            int namesrvPort = freePort(-1);
            int brokerPort = freePairBase(namesrvPort);
            Path workDir = home().resolve("servers").resolve(Names.unique(name));
            Ferrocket server = launch(name, namesrvPort, brokerPort, workDir, brokerSettings);
            try {
                server.waitReady();
                return server;
            } catch (PortTaken e) {
                server.close();
                last = e;
            } catch (Exception e) {
                server.close();
                throw e;
            }
        }
        throw new IllegalStateException("no free ports in " + PORT_TRIES_MAX + " tries", last);
    }

    private static Ferrocket launch(String name, int namesrvPort, int brokerPort, Path workDir,
        List<String> brokerSettings) throws IOException {
        Files.createDirectories(workDir);
        List<String> command = new ArrayList<>(List.of(binary().toString(), "start",
            "--listen-addr", "127.0.0.1",
            "--namesrv-port", Integer.toString(namesrvPort),
            "--broker-port", Integer.toString(brokerPort),
            "--data-dir", workDir.resolve("data").toString(),
            "--broker-set", "mappedFileSizeCommitLog=" + SEGMENT_BYTES,
            // Test data must not depend on how full the host's disk is.
            "--broker-set", "diskSpaceCleanForciblyRatio=100"));
        for (String setting : brokerSettings) {
            command.add("--broker-set");
            command.add(setting);
        }
        ProcessBuilder builder = new ProcessBuilder(command)
            .directory(workDir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(workDir.resolve("ferrocket.log").toFile()))
            .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
        builder.environment().put("RUST_LOG", System.getenv().getOrDefault("RUST_LOG", "info"));
        builder.environment().put("NO_COLOR", "1");
        builder.environment().put("HOME", workDir.toString());
        Ferrocket server = new Ferrocket(name, builder.start(), namesrvPort, brokerPort, workDir);
        LIVE.put(server.process.pid(), server);
        return server;
    }

    /** A 127.0.0.1 port free now, for servers other tests start themselves. */
    public static int freeLoopbackPort() throws IOException {
        return freePort(-1);
    }

    /** A port free now (and not `other`). */
    static int freePort(int other) throws IOException {
        while (true) {
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                int port = socket.getLocalPort();
                if (port != other && port != other + 1) {
                    return port;
                }
            }
        }
    }

    /** A port P with P and P + 1 (the broker's HA port) free now. */
    static int freePairBase(int avoid) throws IOException {
        for (int i = 0; i < 50; i++) {
            int port = freePort(avoid);
            if (port >= 65535 || port + 1 == avoid) {
                continue;
            }
            try (ServerSocket ha = new ServerSocket(port + 1, 1, InetAddress.getLoopbackAddress())) {
                return port;
            } catch (IOException taken) {
                // try another
            }
        }
        throw new IOException("found no two adjacent free ports");
    }

    /** Raised when a server could not bind its port: try other ports. */
    static final class PortTaken extends Exception {
        PortTaken(String message) {
            super(message);
        }
    }

    private void waitReady() throws Exception {
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        String namesrvUp = "ferrocket namesrv listening on " + namesrvAddr();
        String brokerUp = "ferrocket broker listening on " + brokerAddr();
        while (true) {
            String log = logText();
            if (log.contains(namesrvUp) && log.contains(brokerUp)) {
                break;
            }
            if (!process.isAlive()) {
                if (log.contains("in use") || log.contains("os error 98")) {
                    throw new PortTaken(log);
                }
                throw new IllegalStateException("ferrocket exited with " + process.exitValue()
                    + " before listening; its output:\n" + log);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("ferrocket did not listen within " + READY_TIMEOUT
                    + "; its output:\n" + log);
            }
            Thread.sleep(50);
        }
        // The first route lookup must not race the broker's first registration.
        while (!admin(false, "cluster", "list").contains(brokerAddr())) {
            if (System.nanoTime() > deadline || !process.isAlive()) {
                throw new IllegalStateException("broker " + brokerAddr() + " did not register with "
                    + namesrvAddr() + "; its output:\n" + logTail());
            }
            Thread.sleep(100);
        }
    }

    public String namesrvAddr() {
        return "127.0.0.1:" + namesrvPort;
    }

    public String brokerAddr() {
        return "127.0.0.1:" + brokerPort;
    }

    public long pid() {
        return process.pid();
    }

    /** Runs `ferrocket admin -n NAMESRV ARGS`; returns its output. */
    public String admin(boolean check, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(binary().toString(), "admin", "-n", namesrvAddr()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().put("NO_COLOR", "1");
        Process admin = builder.start();
        admin.getOutputStream().close();
        byte[] out = admin.getInputStream().readAllBytes();
        if (!admin.waitFor(60, TimeUnit.SECONDS)) {
            admin.destroyForcibly();
            throw new IOException("ferrocket admin " + String.join(" ", args) + " hung");
        }
        String text = new String(out, StandardCharsets.UTF_8);
        if (check && admin.exitValue() != 0) {
            throw new IOException("ferrocket admin " + String.join(" ", args) + " failed ("
                + admin.exitValue() + "):\n" + text);
        }
        return text;
    }

    /** Creates `topic` with `queues` queues and waits until the name server routes it. */
    public String createTopic(String topic, int queues) throws Exception {
        return createTopic(topic, queues, new String[0]);
    }

    /**
     * {@link #createTopic(String, int)} with `ferrocket admin` options for
     * the broker call (`--tls`, `--access-key K --secret-key S`).
     */
    public String createTopic(String topic, int queues, String... adminOptions) throws Exception {
        return createTopic(topic, queues, List.of(adminOptions), List.of());
    }

    /**
     * {@link #createTopic(String, int, String...)} with options of `topic
     * create` itself (`--attributes +message.type=PRIORITY`).
     */
    public String createTopic(String topic, int queues, List<String> adminOptions, List<String> topicOptions)
        throws Exception {
        List<String> args = new ArrayList<>(adminOptions);
        args.addAll(List.of("topic", "create", "--topic", topic, "--broker-addr", brokerAddr(),
            "-r", Integer.toString(queues), "-w", Integer.toString(queues)));
        args.addAll(topicOptions);
        admin(true, args.toArray(new String[0]));
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (true) {
            String route = admin(false, "topic", "route", "--topic", topic);
            if (route.contains(brokerAddr())) {
                return topic;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("topic " + topic + " has no route after 30 s: " + route);
            }
            Thread.sleep(100);
        }
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
        return String.join("\n", java.util.Arrays.copyOfRange(lines, from, lines.length));
    }

    public Path logFile() {
        return logFile;
    }

    /** Stops the process this object started (by its pid) and deletes its data. */
    @Override
    public synchronized void close() {
        if (process.isAlive()) {
            process.destroy(); // SIGTERM to exactly this pid
            try {
                if (!process.waitFor(STOP_GRACE.toSeconds(), TimeUnit.SECONDS)) {
                    System.err.println("ferrocket " + name + " (pid " + pid() + ") ignored SIGTERM; killing it");
                    process.destroyForcibly();
                    process.waitFor(STOP_GRACE.toSeconds(), TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        LIVE.remove(process.pid());
        deleteTree(dataDir);
    }

    private static void deleteTree(Path root) {
        if (!Files.exists(root)) {
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
        return "ferrocket " + name + " (pid " + pid() + ", namesrv " + namesrvAddr() + ", broker "
            + brokerAddr() + ", log " + logFile + ")";
    }
}

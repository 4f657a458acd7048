package org.ferrocket.interop.mixed;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;

/**
 * Starts the processes of a mixed cluster: Ferrocket's name server and
 * brokers (`ferrocket namesrv` / `ferrocket broker`, FERROCKET_BIN), and
 * Apache RocketMQ's, through scripts/peers/run-apache-rocketmq.sh on the
 * install made by scripts/peers/install-apache-rocketmq.sh (APACHE_ROCKETMQ_HOME;
 * a test class is skipped when there is none). Every broker announces
 * 127.0.0.1 and registers with the name servers given.
 */
public final class Servers {
    /** Small CommitLog segments: a test broker preallocates 64 MiB, not 1 GiB. */
    static final String SEGMENT_BYTES = "67108864";
    /** Java's graceful stop takes 15 s and more; test data is thrown away. */
    static final Duration JAVA_STOP_GRACE = Duration.ofSeconds(3);
    static final Duration FERROCKET_STOP_GRACE = Duration.ofSeconds(15);
    /**
     * Extra JVM options for the Java servers: a client JIT only (start-up on
     * a 2-core host), and disk checks that do not depend on how full the
     * host's disk is (Java refuses writes above 90% by default).
     */
    static final String JAVA_OPT_EXT = "-XX:TieredStopAtLevel=1"
        + " -Drocketmq.broker.diskSpaceWarningLevelRatio=0.99"
        + " -Drocketmq.broker.diskSpaceCleanForciblyRatio=0.99";

    /** Ports handed out in this JVM (a port just probed free is not reused). */
    private static final Set<Integer> TAKEN = ConcurrentHashMap.newKeySet();

    private Servers() {
    }

    /** The Apache RocketMQ install directory; skips the calling test class without one. */
    static Path apacheHome() {
        String home = env("APACHE_ROCKETMQ_HOME", "APACHE_ROCKETMQ_HOME_DEFAULT");
        Path path = home == null ? null : Paths.get(home);
        Assumptions.assumeTrue(path != null && Files.isRegularFile(path.resolve("classpath")),
            "Apache RocketMQ is not installed at " + home
                + ": run scripts/peers/install-apache-rocketmq.sh (scripts/test-java.sh does)");
        return path;
    }

    static Path runScript() {
        String script = env("APACHE_ROCKETMQ_RUN", "APACHE_ROCKETMQ_RUN_DEFAULT");
        if (script == null || !Files.isExecutable(Paths.get(script))) {
            throw new IllegalStateException("run-apache-rocketmq.sh not found at " + script);
        }
        return Paths.get(script);
    }

    /** The installed version (its `version` file). */
    static String apacheVersion() throws IOException {
        return Files.readString(apacheHome().resolve("version"), StandardCharsets.UTF_8).trim();
    }

    private static String env(String key, String fallbackKey) {
        String value = System.getenv(key);
        if (value == null || value.isEmpty()) {
            value = System.getenv(fallbackKey);
        }
        return value == null || value.isEmpty() ? null : value;
    }

    static Path workDir(String name) {
        return Ferrocket.home().resolve("mixed").resolve(Names.unique(name));
    }

    /** Apache RocketMQ's name server. */
    public static Proc javaNamesrv(String name) throws Exception {
        int port = freePort(0, 0);
        return launchJava(name, port, List.of("namesrv", "--port", Integer.toString(port)), null);
    }

    /**
     * Apache RocketMQ's broker, registered with `namesrvs` (`;`-separated);
     * `settings` are RocketMQ keys (brokerRole, brokerId, ...).
     */
    public static Proc javaBroker(String name, String namesrvs, String brokerName, List<String> settings)
        throws Exception {
        // The broker listens on P - 2 (its "fast" port), P and P + 1 (HA).
        int port = freePort(2, 1);
        List<String> args = new ArrayList<>(List.of("broker", "--port", Integer.toString(port),
            "--namesrv", namesrvs, "--name", brokerName));
        for (String setting : settings) {
            args.add("--set");
            args.add(setting);
        }
        return launchJava(name, port, args, "run/store");
    }

    /**
     * Apache RocketMQ's proxy (`mqproxy`) in cluster mode in front of the
     * name server `namesrv`: its gRPC port is the Proc's port, its Remoting
     * port the next one.
     */
    public static Proc javaProxy(String name, String namesrv) throws Exception {
        int port = freePort(0, 1);
        return launchJava(name, port, List.of("proxy", "--port", Integer.toString(port),
            "--remoting-port", Integer.toString(port + 1), "--namesrv", namesrv,
            "--set", "proxyMode=cluster"), null);
    }

    /** Apache RocketMQ's controller (one DLedger node), its store in its run directory. */
    public static Proc javaController(String name) throws Exception {
        int port = freePort(0, 0);
        return launchJava(name, port, List.of("controller", "--port", Integer.toString(port)),
            "run/controller-store");
    }

    /**
     * Apache RocketMQ's broker on `port` with its store in `store` (kept when
     * it stops: the caller deletes it), as `brokerName` of DefaultCluster.
     */
    public static Proc javaBrokerOn(String name, String namesrvs, String brokerName, int port, Path store,
        List<String> settings) throws Exception {
        List<String> args = new ArrayList<>(List.of("broker", "--port", Integer.toString(port),
            "--namesrv", namesrvs, "--name", brokerName,
            "--set", "storePathRootDir=" + store, "--set", "storePathCommitLog=" + store.resolve("commitlog")));
        for (String setting : settings) {
            args.add("--set");
            args.add(setting);
        }
        return launchJava(name, port, args, null);
    }

    private static Proc launchJava(String name, int port, List<String> roleArgs, String dataDir)
        throws Exception {
        Path home = apacheHome();
        Path work = workDir(name);
        List<String> command = new ArrayList<>(List.of(runScript().toString(), "--home", home.toString(),
            "--dir", work.resolve("run").toString(), "--foreground"));
        command.addAll(roleArgs);
        return Proc.launch(name, command, work, dataDir == null ? null : work.resolve(dataDir), port,
            Map.of("JAVA_OPT_EXT", JAVA_OPT_EXT), JAVA_STOP_GRACE);
    }

    /** Ferrocket's name server (`ferrocket namesrv`). */
    public static Proc ferrocketNamesrv(String name) throws Exception {
        return ferrocketNamesrv(name, List.of());
    }

    /** Ferrocket's name server with `key=value` settings. */
    public static Proc ferrocketNamesrv(String name, List<String> settings) throws Exception {
        int port = freePort(0, 0);
        Path work = workDir(name);
        List<String> command = new ArrayList<>(List.of(Ferrocket.binary().toString(), "namesrv",
            "--listen-addr", "127.0.0.1", "--listen-port", Integer.toString(port),
            "--set", "kvConfigPath=" + work.resolve("kvConfig.json")));
        for (String setting : settings) {
            command.add("--set");
            command.add(setting);
        }
        return Proc.launch(name, command, work, null, port, Map.of("RUST_LOG", rustLog()),
            FERROCKET_STOP_GRACE);
    }

    /** Ferrocket's controller (`ferrocket controller`, one node), its Raft store in its data directory. */
    public static Proc ferrocketController(String name) throws Exception {
        int port = freePort(0, 0);
        Path work = workDir(name);
        List<String> command = List.of(Ferrocket.binary().toString(), "controller",
            "--listen-addr", "127.0.0.1", "--listen-port", Integer.toString(port),
            "--set", "controllerStorePath=" + work.resolve("data"));
        return Proc.launch(name, command, work, work.resolve("data"), port, Map.of("RUST_LOG", rustLog()),
            FERROCKET_STOP_GRACE);
    }

    /**
     * Ferrocket's broker (`ferrocket broker`), registered with `namesrvs`;
     * with `fastListenPortEnable=true` among `settings` it also listens on
     * P - 2, as Java's broker does.
     */
    public static Proc ferrocketBroker(String name, String namesrvs, String brokerName, List<String> settings)
        throws Exception {
        // The broker listens on P and P + 1 (HA), and maybe P - 2.
        int port = freePort(2, 1);
        Path work = workDir(name);
        List<String> command = new ArrayList<>(List.of(Ferrocket.binary().toString(), "broker",
            "--listen-addr", "127.0.0.1", "--listen-port", Integer.toString(port),
            "--namesrv-addr", namesrvs, "--broker-name", brokerName,
            "--store-path-root-dir", work.resolve("data").toString(),
            "--set", "mappedFileSizeCommitLog=" + SEGMENT_BYTES,
            "--set", "diskSpaceCleanForciblyRatio=100"));
        for (String setting : settings) {
            command.add("--set");
            command.add(setting);
        }
        return Proc.launch(name, command, work, work.resolve("data"), port, Map.of("RUST_LOG", rustLog()),
            FERROCKET_STOP_GRACE);
    }

    /**
     * Ferrocket's broker on `port` with its store in `store` (kept when it
     * stops: the caller deletes it), as `brokerName` of DefaultCluster, with
     * Java's test segment size (run-apache-rocketmq.sh's).
     */
    public static Proc ferrocketBrokerOn(String name, String namesrvs, String brokerName, int port, Path store,
        List<String> settings) throws Exception {
        Path work = workDir(name);
        List<String> command = new ArrayList<>(List.of(Ferrocket.binary().toString(), "broker",
            "--listen-addr", "127.0.0.1", "--listen-port", Integer.toString(port),
            "--namesrv-addr", namesrvs, "--broker-name", brokerName,
            "--store-path-root-dir", store.toString(),
            "--set", "brokerClusterName=DefaultCluster",
            "--set", "mappedFileSizeCommitLog=" + SEGMENT_BYTES,
            "--set", "diskSpaceCleanForciblyRatio=100"));
        for (String setting : settings) {
            command.add("--set");
            command.add(setting);
        }
        return Proc.launch(name, command, work, null, port, Map.of("RUST_LOG", rustLog()), FERROCKET_STOP_GRACE);
    }

    /** Waits for what a Ferrocket server prints once it serves. */
    static String ferrocketReadyLine(String role, Proc proc) {
        return "ferrocket " + role + " listening on " + proc.addr();
    }

    private static String rustLog() {
        return System.getenv().getOrDefault("RUST_LOG", "info");
    }

    /**
     * A port P free now, with P - below .. P + above free too (and none of
     * them handed out before in this JVM).
     */
    static int freePort(int below, int above) throws IOException {
        for (int i = 0; i < 100; i++) {
            int port;
            try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                port = socket.getLocalPort();
            }
            if (port - below < 1024 || port + above > 65535 || !allFree(port - below, port + above)) {
                continue;
            }
            boolean fresh = true;
            for (int p = port - below; p <= port + above; p++) {
                fresh &= !TAKEN.contains(p);
            }
            if (fresh) {
                for (int p = port - below; p <= port + above; p++) {
                    TAKEN.add(p);
                }
                return port;
            }
        }
        throw new IOException("found no free port range");
    }

    private static boolean allFree(int from, int to) {
        for (int port = from; port <= to; port++) {
            try (ServerSocket ignored = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                // free
            } catch (IOException taken) {
                return false;
            }
        }
        return true;
    }

    /** Runs `ferrocket admin -n NAMESRV ARGS`; returns its output (fails on a non-zero exit if `check`). */
    public static String admin(String namesrv, boolean check, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Ferrocket.binary().toString(), "admin", "-n", namesrv));
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
            throw new IOException("ferrocket admin -n " + namesrv + " " + String.join(" ", args)
                + " failed (" + admin.exitValue() + "):\n" + text);
        }
        return text;
    }

    /** A condition a test waits for. */
    interface Check {
        boolean passed() throws Exception;
    }

    /** Polls `check` every 250 ms; fails the test with `what` when it has not passed within `timeout`. */
    static void waitFor(Duration timeout, String what, Check check) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!check.passed()) {
            Assertions.assertTrue(System.nanoTime() < deadline,
                what + ": not within " + timeout.toSeconds() + " s");
            Thread.sleep(250);
        }
    }

    /** Waits until `namesrv` lists `broker` (GET_BROKER_CLUSTER_INFO). */
    public static void waitRegistered(String namesrv, Proc broker) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        String out = "";
        while (!(out = admin(namesrv, false, "cluster", "list")).contains(broker.addr())) {
            if (System.nanoTime() > deadline || !broker.alive()) {
                throw new IllegalStateException(broker + " is not registered with " + namesrv
                    + " after 60 s; cluster list:\n" + out + "\nbroker log tail:\n" + broker.logTail());
            }
            Thread.sleep(200);
        }
    }

    /** Waits until `namesrv` no longer lists `broker` (after it died). */
    public static void waitUnregistered(String namesrv, Proc broker) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(150).toNanos();
        String out;
        while ((out = admin(namesrv, false, "cluster", "list")).contains(broker.addr())) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(namesrv + " still lists " + broker + " after 150 s:\n" + out);
            }
            Thread.sleep(200);
        }
    }

    /**
     * Creates `topic` on each broker (UPDATE_AND_CREATE_TOPIC to its address)
     * and waits until `namesrv` routes it to all of them.
     */
    public static void createTopic(String namesrv, String topic, int queues, Proc... brokers) throws Exception {
        createTopic(namesrv, topic, queues, List.of(), brokers);
    }

    /** {@link #createTopic(String, String, int, Proc...)} with `topic create` options (`--attributes ...`). */
    public static void createTopic(String namesrv, String topic, int queues, List<String> options, Proc... brokers)
        throws Exception {
        for (Proc broker : brokers) {
            List<String> args = new ArrayList<>(List.of("topic", "create", "--topic", topic,
                "--broker-addr", broker.addr(), "-r", Integer.toString(queues), "-w", Integer.toString(queues)));
            args.addAll(options);
            admin(namesrv, true, args.toArray(new String[0]));
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
        while (true) {
            String route = admin(namesrv, false, "topic", "route", "--topic", topic);
            boolean all = true;
            for (Proc broker : brokers) {
                all &= route.contains(broker.addr());
            }
            if (all) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("topic " + topic + " is not routed to every broker by "
                    + namesrv + " after 40 s:\n" + route);
            }
            Thread.sleep(200);
        }
    }
}

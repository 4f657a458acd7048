package org.ferrocket.interop.v5.mqadmin;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;

/**
 * Controller mode for the controller commands: one `ferrocket controller`,
 * one `ferrocket namesrv` and two brokers of one set in controller mode
 * (`enableControllerMode=true`), each a process of its own on free
 * 127.0.0.1 ports, as tests/harness/failover.rs starts them. Each is
 * stopped by the pid it was started with (SIGTERM, then SIGKILL); the data
 * directories are deleted, the logs kept under FERROCKET_INTEROP_HOME.
 */
final class ControllerCluster implements AutoCloseable {
    static final String SET = "mqadmin-set";
    static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

    private final Path workDir;
    private final List<Process> processes = new ArrayList<>();
    private final List<Path> logs = new ArrayList<>();
    final String controllerAddr;
    final String namesrvAddr;
    final List<String> brokerAddrs = new ArrayList<>();

    private ControllerCluster(Path workDir, int controllerPort, int namesrvPort) {
        this.workDir = workDir;
        this.controllerAddr = "127.0.0.1:" + controllerPort;
        this.namesrvAddr = "127.0.0.1:" + namesrvPort;
    }

    static ControllerCluster start() throws Exception {
        Path workDir = Ferrocket.home().resolve("servers").resolve(Names.unique("MqadminController"));
        Files.createDirectories(workDir);
        int controllerPort = port();
        int namesrvPort = port();
        ControllerCluster cluster = new ControllerCluster(workDir, controllerPort, namesrvPort);
        try {
            cluster.spawn("controller", "ferrocket controller listening on " + cluster.controllerAddr,
                "controller", "--listen-addr", "127.0.0.1", "--listen-port", Integer.toString(controllerPort),
                "--set", "controllerStorePath=" + workDir.resolve("data/controller"));
            cluster.spawn("namesrv", "ferrocket namesrv listening on " + cluster.namesrvAddr,
                "namesrv", "--listen-addr", "127.0.0.1", "--listen-port", Integer.toString(namesrvPort));
            for (int n = 1; n <= 2; n++) {
                int brokerPort = port();
                String addr = "127.0.0.1:" + brokerPort;
                cluster.brokerAddrs.add(addr);
                cluster.spawn("broker" + n, "ferrocket broker listening on " + addr,
                    "broker", "--listen-addr", "127.0.0.1", "--listen-port", Integer.toString(brokerPort),
                    "--broker-ip1", "127.0.0.1", "-n", cluster.namesrvAddr,
                    "--store-path-root-dir", workDir.resolve("data/broker" + n).toString(),
                    "--broker-name", SET, "--mapped-file-size-commit-log", "67108864",
                    "--set", "diskSpaceCleanForciblyRatio=100",
                    "--set", "haListenPort=" + port(),
                    "--set", "enableControllerMode=true",
                    "--set", "controllerAddr=" + cluster.controllerAddr,
                    "--set", "allAckInSyncStateSet=true",
                    "--set", "syncBrokerMetadataPeriod=1000",
                    "--set", "checkSyncStateSetPeriod=1000");
            }
            return cluster;
        } catch (Exception e) {
            System.err.println(cluster.logTail());
            cluster.close();
            throw e;
        }
    }

    private static int port() throws IOException {
        return Ferrocket.freeLoopbackPort();
    }

    private void spawn(String name, String ready, String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(Ferrocket.binary().toString());
        command.addAll(List.of(args));
        Path log = workDir.resolve(name + ".log");
        ProcessBuilder builder = new ProcessBuilder(command)
            .directory(workDir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        builder.environment().put("RUST_LOG", System.getenv().getOrDefault("RUST_LOG", "info"));
        builder.environment().put("NO_COLOR", "1");
        builder.environment().put("HOME", workDir.toString());
        Process process = builder.start();
        processes.add(process);
        logs.add(log);
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        while (!Files.readString(log, StandardCharsets.UTF_8).contains(ready)) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                throw new IllegalStateException(name + " did not start: " + Files.readString(log));
            }
            Thread.sleep(50);
        }
    }

    /** The last lines of every log. */
    String logTail() {
        StringBuilder tail = new StringBuilder();
        for (Path log : logs) {
            try {
                List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
                tail.append("==== ").append(log).append('\n');
                lines.subList(Math.max(0, lines.size() - 30), lines.size())
                    .forEach(line -> tail.append(line).append('\n'));
            } catch (IOException e) {
                tail.append("cannot read ").append(log).append('\n');
            }
        }
        return tail.toString();
    }

    @Override
    public void close() {
        for (int i = processes.size() - 1; i >= 0; i--) {
            Process process = processes.get(i);
            process.destroy();
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
        try (Stream<Path> paths = Files.walk(workDir.resolve("data"))) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // nothing was written
        }
    }
}

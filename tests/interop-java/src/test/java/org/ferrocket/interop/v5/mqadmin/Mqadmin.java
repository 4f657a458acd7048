package org.ferrocket.interop.v5.mqadmin;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Apache RocketMQ's mqadmin ({@code org.apache.rocketmq.tools.command.MQAdminStartup},
 * rocketmq-tools, unchanged) run in this JVM: a fresh JVM per command would
 * cost about 7 s each (the client's Netty threads linger on exit).
 *
 * <p>Each run goes through {@code MQAdminStartup.main0}, exactly as the
 * {@code mqadmin} script's {@code main} does, on a thread of its own with a
 * deadline (a command still running then is a hang, and fails the test),
 * with {@code System.out} and {@code System.err} captured. Runs are one at
 * a time. Three things make repeated in-process runs behave as separate
 * {@code mqadmin} processes would:
 * <ul>
 * <li>MQAdminStartup keeps its commands in a static list that main0 appends
 *     to on every call and searches from the start, so the second run of a
 *     command would reuse the first run's (shut down) producer: the list is
 *     emptied before each run.</li>
 * <li>A bad option makes mqadmin call {@code System.exit}: a security
 *     manager, where the JVM still allows one, turns that into a failed run
 *     instead of the end of the test JVM.</li>
 * <li>When a command shuts its client down, the client's Netty event
 *     thread may sit out a 3 s poll before it notices (in the client, not
 *     the server: rocketmq-remoting 5.5.0 NettyRemotingClient.java:393 stops
 *     the NettyEventExecutor, which waits in eventQueue.poll(3000 ms) at
 *     NettyRemotingAbstract.java:786): the thread is woken so the suite does
 *     not spend a third of its time there. Nothing is sent to the server any
 *     more then.</li>
 * </ul>
 */
public final class Mqadmin extends MQAdminStartup {
    public static final Duration DEADLINE = Duration.ofSeconds(45);

    /** What one run printed (stdout and stderr interleaved) and how it ended. */
    public static final class Result {
        public final String command;
        public final String output;
        /** Whether mqadmin ended with an exception's stack trace. */
        public final boolean stackTrace;

        Result(String command, String output) {
            this.command = command;
            this.output = output;
            this.stackTrace = output.contains("\tat org.apache.rocketmq.");
        }

        @Override
        public String toString() {
            return "mqadmin " + command + "\n----\n" + output + "----";
        }
    }

    private static final Object LOCK = new Object();
    private static volatile boolean exitGuarded;

    private Mqadmin() {
    }

    /** Runs {@code mqadmin ARGS} unsigned. */
    public static Result run(String... args) throws InterruptedException {
        return run(null, args);
    }

    /** Runs {@code mqadmin ARGS}; {@code hook} signs its requests (ACL). */
    public static Result run(RPCHook hook, String... args) throws InterruptedException {
        return run(hook, null, args);
    }

    /**
     * Runs a command that loops until it is stopped ({@code clusterRT}
     * sleeps between rounds, forever): once what it printed matches
     * {@code until} its thread is interrupted, which ends the sleep and so
     * the command (with a stack trace of the interruption).
     */
    public static Result runUntil(Pattern until, String... args) throws InterruptedException {
        return run(null, until, args);
    }

    private static Result run(RPCHook hook, Pattern until, String... args) throws InterruptedException {
        synchronized (LOCK) {
            guardExit();
            SUB_COMMANDS.clear();
            PrintStream out = System.out;
            PrintStream err = System.err;
            ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            PrintStream capture = new PrintStream(buffer, true, StandardCharsets.UTF_8);
            Thread runner = new Thread(() -> {
                try {
                    main0(args, hook);
                } catch (ExitRefused e) {
                    System.out.println("mqadmin called System.exit(" + e.status + ")");
                } catch (Throwable e) {
                    e.printStackTrace(System.out);
                }
            }, "mqadmin-" + args[0]);
            runner.setDaemon(true);
            System.setOut(capture);
            System.setErr(capture);
            boolean hung;
            try {
                runner.start();
                hung = !awaitWakingLingerers(runner, buffer, until);
            } finally {
                System.setOut(out);
                System.setErr(err);
            }
            String text = buffer.toString(StandardCharsets.UTF_8);
            String command = String.join(" ", args);
            if (hung) {
                runner.interrupt();
                throw new AssertionError("mqadmin " + command + " did not end within " + DEADLINE
                    + "; it printed:\n" + text);
            }
            return new Result(command, text);
        }
    }

    /**
     * Waits for the run to end; while its thread waits in the client's
     * shutdown for the Netty event thread, wakes that thread. False on a hang.
     */
    private static boolean awaitWakingLingerers(Thread runner, ByteArrayOutputStream buffer, Pattern until)
        throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE.toNanos();
        boolean stopped = false;
        while (runner.isAlive()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            runner.join(20);
            if (!stopped && until != null && until.matcher(buffer.toString(StandardCharsets.UTF_8)).find()) {
                runner.interrupt();
                stopped = true;
            }
            if (runner.isAlive() && inClientShutdown(runner)) {
                for (Thread thread : Thread.getAllStackTraces().keySet()) {
                    if (thread.getName().equals("NettyEventExecutor")) {
                        thread.interrupt();
                    }
                }
            }
        }
        return true;
    }

    private static boolean inClientShutdown(Thread runner) {
        return Arrays.stream(runner.getStackTrace()).anyMatch(frame ->
            frame.getClassName().equals("org.apache.rocketmq.remoting.netty.NettyRemotingClient")
                && frame.getMethodName().equals("shutdown"));
    }

    /** Thrown instead of exiting the JVM. */
    static final class ExitRefused extends SecurityException {
        final int status;

        ExitRefused(int status) {
            super("System.exit(" + status + ")");
            this.status = status;
        }
    }

    @SuppressWarnings({"removal", "deprecation"})
    private static void guardExit() {
        if (exitGuarded) {
            return;
        }
        exitGuarded = true;
        try {
            System.setSecurityManager(new SecurityManager() {
                @Override
                public void checkExit(int status) {
                    if (Thread.currentThread().getName().startsWith("mqadmin-")) {
                        throw new ExitRefused(status);
                    }
                }

                @Override
                public void checkPermission(java.security.Permission permission) {
                    // everything else is allowed
                }

                @Override
                public void checkPermission(java.security.Permission permission, Object context) {
                    // everything else is allowed
                }
            });
        } catch (UnsupportedOperationException | SecurityException newerJdk) {
            // JDK 18+ without -Djava.security.manager=allow: mqadmin's options
            // here are right, and a wrong one ends the test JVM loudly.
        }
    }

    /** The lines of {@code text} that contain {@code needle}. */
    public static List<String> lines(String text, String needle) {
        List<String> found = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.contains(needle)) {
                found.add(line);
            }
        }
        return found;
    }

    /** Sleeps a little (for state the server reports every second). */
    public static void pause(long millis) throws InterruptedException {
        TimeUnit.MILLISECONDS.sleep(millis);
    }
}

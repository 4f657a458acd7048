package org.ferrocket.interop.v5.mqadmin;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.function.Predicate;

import org.apache.rocketmq.remoting.RPCHook;

/** What the mqadmin matrix asserts of one run. */
final class Check {
    /** Words of a failure that is not a considered answer. */
    private static final String[] BROKEN = {
        "NullPointerException", "JSONException", "decode", "Decode", "RemotingTimeoutException",
        "RemotingConnectException", "ClassCastException", "NumberFormatException",
        "mqadmin called System.exit",
    };

    private Check() {
    }

    /** The run worked: no stack trace, and it printed each of {@code expected}. */
    static Mqadmin.Result works(String[] expected, String... args) throws InterruptedException {
        return works(null, expected, args);
    }

    static Mqadmin.Result works(RPCHook hook, String[] expected, String... args) throws InterruptedException {
        Mqadmin.Result result = Mqadmin.run(hook, args);
        assertFalse(result.stackTrace, () -> "failed: " + result);
        assertFalse(result.output.contains("command failed"), () -> "failed: " + result);
        for (String text : expected) {
            assertTrue(result.output.contains(text), () -> "no `" + text + "` in " + result);
        }
        return result;
    }

    static String[] printing(String... expected) {
        return expected;
    }

    /**
     * The server refused the run with a remark: mqadmin printed the
     * response code and each of {@code remark}, and nothing that looks
     * like a client-side failure (a decode error, a timeout, ...).
     */
    static Mqadmin.Result refused(int code, String[] remark, String... args) throws InterruptedException {
        return refused(null, code, remark, args);
    }

    static Mqadmin.Result refused(RPCHook hook, int code, String[] remark, String... args)
        throws InterruptedException {
        Mqadmin.Result result = Mqadmin.run(hook, args);
        assertTrue(result.output.contains("CODE: " + code + " "), () -> "no CODE: " + code + " in " + result);
        for (String text : remark) {
            assertTrue(result.output.contains(text), () -> "no `" + text + "` in " + result);
        }
        notBroken(result);
        return result;
    }

    /** Refused as unsupported by Ferrocket, naming the request. */
    static Mqadmin.Result unsupported(String requestName, String... args) throws InterruptedException {
        return refused(3, printing("(" + requestName + ") not supported by Ferrocket"), args);
    }

    static void notBroken(Mqadmin.Result result) {
        for (String word : BROKEN) {
            assertFalse(result.output.contains(word), () -> "`" + word + "` in " + result);
        }
    }

    /** Runs until the output satisfies {@code done} or {@code timeout} passes; the last run. */
    static Mqadmin.Result until(Duration timeout, Predicate<String> done, String... args) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            Mqadmin.Result result = Mqadmin.run(args);
            if (done.test(result.output) || System.nanoTime() > deadline) {
                return result;
            }
            Mqadmin.pause(300);
        }
    }
}

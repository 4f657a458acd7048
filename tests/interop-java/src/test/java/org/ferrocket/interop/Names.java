package org.ferrocket.interop;

import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/** Topic, group and instance names no other test (or run) uses. */
public final class Names {
    private static final AtomicLong COUNTER = new AtomicLong();
    private static final long PID = ProcessHandle.current().pid();

    private Names() {
    }

    public static String unique(String prefix) {
        return prefix + "_" + PID + "_" + COUNTER.incrementAndGet() + "_"
            + UUID.randomUUID().toString().substring(0, 8);
    }
}

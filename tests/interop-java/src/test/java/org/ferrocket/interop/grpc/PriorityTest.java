package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Priority messages (RocketMQ 5.4): `MessageBuilder.setPriority` on a topic
 * created with `message.type=PRIORITY`. The broker stores a message in
 * queue min(priority, queues - 1) and a pop reads the highest queue first,
 * so with a backlog the highest priority present comes out first.
 */
class PriorityTest extends GrpcTestBase {
    private static final int QUEUES = 4;
    /** Sent in this order; 9 is past the last queue and lands in it. */
    private static final int[] PRIORITIES = {1, 0, 3, 2, 0, 9, 1, 2, 3};

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void highestPriorityIsReceivedFirst(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcPriority"), QUEUES, List.of(),
            List.of("--attributes", "+message.type=PRIORITY"));
        try (Producer producer = V5.producer(address, topic)) {
            for (int i = 0; i < PRIORITIES.length; i++) {
                producer.send(V5.message(topic, "p" + PRIORITIES[i] + "-" + i).setPriority(PRIORITIES[i]).build());
            }
        }
        // The backlog is in place before the first receive (sends are
        // acknowledged once stored; the queues see them right after).
        Thread.sleep(500);
        List<Integer> received = new ArrayList<>();
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcPriorityGroup"), topic)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (received.size() < PRIORITIES.length && System.nanoTime() < deadline) {
                for (MessageView view : consumer.receive(1, V5.INVISIBLE)) {
                    consumer.ack(view);
                    int priority = view.getPriority().orElse(-1);
                    String body = V5.body(view);
                    assertEquals("p" + priority, body.substring(0, body.indexOf('-')),
                        "the priority sent comes back: " + body);
                    received.add(Math.min(priority, QUEUES - 1));
                }
            }
        }
        assertEquals(PRIORITIES.length, received.size(), "every message once: " + received);
        for (int i = 1; i < received.size(); i++) {
            assertTrue(received.get(i - 1) >= received.get(i), "highest priority first: " + received);
        }
    }
}

package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.LitePushConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Lite topics (RocketMQ 5.5, RIP-83): a producer sends to lite topics
 * a, b and c of a parent topic created with `message.type=LITE`; a
 * LitePushConsumer bound to the parent gets exactly the messages of the
 * lite topics it subscribes, each with its lite topic, and follows
 * subscribeLite / unsubscribeLite at run time (a lite topic subscribed
 * later delivers what it already holds).
 */
class LiteTopicTest extends GrpcTestBase {
    private static final Duration WAIT = Duration.ofSeconds(30);

    /** Bodies received, by lite topic. */
    private final Map<String, Set<String>> received = new TreeMap<>();

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void consumerGetsOnlyItsLiteTopics(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcLite"), 4, List.of(),
            List.of("--attributes", "+message.type=LITE"));
        try (Producer producer = V5.producer(address, topic);
             LitePushConsumer consumer = V5.PROVIDER.newLitePushConsumerBuilder()
                 .setClientConfiguration(V5.config(address))
                 .setConsumerGroup(Names.unique("GrpcLiteGroup"))
                 .bindTopic(topic)
                 .setMessageListener(view -> {
                     record(view.getLiteTopic().orElse("(none)"), V5.body(view));
                     return ConsumeResult.SUCCESS;
                 })
                 .build()) {
            consumer.subscribeLite("a");
            consumer.subscribeLite("b");
            send(producer, topic, "a", 0, 3);
            send(producer, topic, "b", 0, 3);
            send(producer, topic, "c", 0, 3);
            awaitReceived(Map.of("a", bodies("a", 0, 3), "b", bodies("b", 0, 3)));

            consumer.unsubscribeLite("a");
            consumer.subscribeLite("c");
            assertEquals(Set.of("b", "c"), consumer.getLiteTopicSet());
            // The receives under way when "a" went finish their round.
            Thread.sleep(1000);
            send(producer, topic, "a", 3, 5);
            send(producer, topic, "c", 3, 5);
            awaitReceived(Map.of("a", bodies("a", 0, 3), "b", bodies("b", 0, 3), "c", bodies("c", 0, 5)));

            assertThrows(IllegalArgumentException.class, () -> consumer.subscribeLite("x".repeat(65)),
                "the endpoint's maxLiteTopicSize (64) reached the client");
            ClientException refused = assertThrows(ClientException.class,
                () -> producer.send(V5.message(topic, "bad").setLiteTopic("a b").build()));
            assertTrue(refused.getMessage().contains("response-code=40020"), "ILLEGAL_LITE_TOPIC: " + refused);
        }
    }

    private synchronized void record(String liteTopic, String body) {
        received.computeIfAbsent(liteTopic, k -> new TreeSet<>()).add(body);
    }

    private synchronized Map<String, Set<String>> snapshot() {
        Map<String, Set<String>> copy = new TreeMap<>();
        received.forEach((k, v) -> copy.put(k, new TreeSet<>(v)));
        return copy;
    }

    /** Waits until exactly `expected` came, then a while longer for strays. */
    private void awaitReceived(Map<String, Set<String>> expected) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!snapshot().equals(expected) && System.nanoTime() < deadline) {
            Thread.sleep(100);
        }
        Thread.sleep(1500);
        assertEquals(new TreeMap<>(expected), snapshot());
    }

    private static void send(Producer producer, String topic, String lite, int from, int to) throws Exception {
        for (int i = from; i < to; i++) {
            producer.send(V5.message(topic, lite + "-" + i).setLiteTopic(lite).build());
        }
    }

    private static Set<String> bodies(String lite, int from, int to) {
        Set<String> out = new TreeSet<>();
        for (int i = from; i < to; i++) {
            out.add(lite + "-" + i);
        }
        assertTrue(!out.isEmpty());
        return out;
    }
}

package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The v5 SimpleConsumer: receive, ack, tag filters, change invisible duration. */
class SimpleConsumerTest extends GrpcTestBase {
    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void receiveAndAckEachMessageOnce(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcSimple"), 4);
        List<String> sent = new ArrayList<>();
        try (Producer producer = V5.producer(address, topic)) {
            for (int i = 0; i < 40; i++) {
                String body = "simple-" + i + "-" + "x".repeat(i * 100);
                producer.send(V5.message(topic, body).build());
                sent.add(body);
            }
        }
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcSimpleGroup"), topic)) {
            List<MessageView> got = V5.receiveAndAck(consumer, sent.size(), Duration.ofSeconds(20));
            assertEquals(Set.copyOf(sent), Set.copyOf(V5.bodies(got)), "every body intact");
            assertEquals(sent.size(), got.size(), "each message once");
            // Acked: nothing comes back.
            assertTrue(consumer.receive(16, V5.INVISIBLE).isEmpty(), "nothing after every ack");
        }
    }

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void tagFilter(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcTag"), 2);
        try (Producer producer = V5.producer(address, topic)) {
            for (int i = 0; i < 6; i++) {
                producer.send(V5.message(topic, "tag-" + i).setTag(i % 2 == 0 ? "TagA" : "TagB").build());
            }
        }
        try (SimpleConsumer consumer = V5.PROVIDER.newSimpleConsumerBuilder()
            .setClientConfiguration(V5.config(address))
            .setConsumerGroup(Names.unique("GrpcTagGroup"))
            .setAwaitDuration(V5.AWAIT)
            .setSubscriptionExpressions(java.util.Map.of(topic, new FilterExpression("TagA", FilterExpressionType.TAG)))
            .build()) {
            List<MessageView> got = V5.receiveAndAck(consumer, 3, Duration.ofSeconds(20));
            assertEquals(Set.of("tag-0", "tag-2", "tag-4"), Set.copyOf(V5.bodies(got)));
            assertEquals(3, got.size());
        }
    }

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void changeInvisibleDurationRedelivers(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcInvisible"), 1);
        try (Producer producer = V5.producer(address, topic)) {
            producer.send(V5.message(topic, "again").build());
        }
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcInvisibleGroup"), topic)) {
            List<MessageView> first = List.of();
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (first.isEmpty() && System.nanoTime() < deadline) {
                first = consumer.receive(1, V5.INVISIBLE);
            }
            assertEquals(List.of("again"), V5.bodies(first));
            assertEquals(1, first.get(0).getDeliveryAttempt());
            consumer.changeInvisibleDuration(first.get(0), Duration.ofSeconds(1));
            List<MessageView> second = V5.receiveAndAck(consumer, 1, Duration.ofSeconds(15));
            assertEquals(List.of("again"), V5.bodies(second), "back after its invisible time");
            assertEquals(2, second.get(0).getDeliveryAttempt());
        }
    }
}

package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** v5 Producer sends (normal, FIFO, delay), read back with a SimpleConsumer. */
class ProducerTest extends GrpcTestBase {
    private static final Duration RECEIVE_TIMEOUT = Duration.ofSeconds(20);

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void normalSend(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcNormal"), 4);
        Map<String, String> sent = new HashMap<>();
        try (Producer producer = V5.producer(address, topic)) {
            for (int i = 0; i < 8; i++) {
                String body = "normal-" + i;
                SendReceipt receipt = producer.send(V5.message(topic, body)
                    .setTag("TagA").setKeys("key-" + i).addProperty("seq", Integer.toString(i)).build());
                sent.put(receipt.getMessageId().toString(), body);
            }
        }
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcNormalGroup"), topic)) {
            List<MessageView> got = V5.receiveAndAck(consumer, sent.size(), RECEIVE_TIMEOUT);
            Map<String, String> received = new HashMap<>();
            for (MessageView view : got) {
                String body = V5.body(view);
                received.put(view.getMessageId().toString(), body);
                String seq = body.substring("normal-".length());
                assertEquals("TagA", view.getTag().orElse(null), body);
                assertEquals(List.of("key-" + seq), new ArrayList<>(view.getKeys()), body);
                assertEquals(seq, view.getProperties().get("seq"), body);
                assertEquals(topic, view.getTopic());
                assertEquals(1, view.getDeliveryAttempt(), body);
            }
            assertEquals(sent, received, "ids and bodies read back");
        }
    }

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void fifoSendKeepsEachGroupInOrder(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcFifo"), 4);
        List<String> groups = List.of("order-a", "order-b", "order-c");
        int perGroup = 10;
        try (Producer producer = V5.producer(address, topic)) {
            for (int i = 0; i < perGroup; i++) {
                for (String group : groups) {
                    producer.send(V5.message(topic, group + ":" + i).setMessageGroup(group).build());
                }
            }
        }
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcFifoGroup"), topic)) {
            List<MessageView> got = V5.receiveAndAck(consumer, groups.size() * perGroup, RECEIVE_TIMEOUT);
            Map<String, List<Integer>> seen = new HashMap<>();
            for (MessageView view : got) {
                String[] parts = V5.body(view).split(":");
                assertEquals(parts[0], view.getMessageGroup().orElse(null), "message group of " + V5.body(view));
                seen.computeIfAbsent(parts[0], g -> new ArrayList<>()).add(Integer.parseInt(parts[1]));
            }
            List<Integer> inOrder = new ArrayList<>();
            for (int i = 0; i < perGroup; i++) {
                inOrder.add(i);
            }
            for (String group : groups) {
                assertEquals(inOrder, seen.get(group), "group " + group + " in send order");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void delaySendIsNotDeliveredEarly(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcDelay"), 2);
        long due = System.currentTimeMillis() + 3_000;
        Set<String> sent = new HashSet<>();
        try (Producer producer = V5.producer(address, topic)) {
            for (int i = 0; i < 3; i++) {
                String body = "delay-" + i;
                producer.send(V5.message(topic, body).setDeliveryTimestamp(due).build());
                sent.add(body);
            }
            producer.send(V5.message(topic, "now").build());
        }
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcDelayGroup"), topic)) {
            List<MessageView> got = V5.receiveAndAck(consumer, sent.size() + 1, RECEIVE_TIMEOUT);
            Set<String> delayed = new HashSet<>();
            for (MessageView view : got) {
                String body = V5.body(view);
                if (body.equals("now")) {
                    continue;
                }
                long at = System.currentTimeMillis();
                assertTrue(at >= due, body + " received " + (due - at) + " ms before its delivery time");
                // Apache's timer keeps TIMER_DELIVER_MS on the delivered
                // message; its proxy reports it (GrpcConverter
                // buildSystemProperties, delivery_timestamp).
                assertEquals(due, view.getDeliveryTimestamp().orElse(0L), "delivery timestamp of " + body);
                delayed.add(body);
            }
            assertEquals(sent, delayed);
            assertEquals("now", V5.body(got.get(0)), "the undelayed message comes first");
        }
    }
}

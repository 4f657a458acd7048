package org.ferrocket.interop.grpc;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;

/** Apache RocketMQ's Java v5 client (rocketmq-client-java), set up for the tests. */
final class V5 {
    static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    /** How long a SimpleConsumer's receive long-polls. */
    static final Duration AWAIT = Duration.ofSeconds(2);
    static final Duration INVISIBLE = Duration.ofSeconds(30);

    private V5() {
    }

    /** Plaintext (the client's TLS off), as README.md's example. */
    static ClientConfiguration config(String address) {
        return ClientConfiguration.newBuilder()
            .setEndpoints(address)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    static Producer producer(String address, String topic) throws ClientException {
        return PROVIDER.newProducerBuilder().setClientConfiguration(config(address)).setTopics(topic).build();
    }

    static SimpleConsumer simpleConsumer(String address, String group, String topic) throws ClientException {
        return PROVIDER.newSimpleConsumerBuilder()
            .setClientConfiguration(config(address))
            .setConsumerGroup(group)
            .setAwaitDuration(AWAIT)
            .setSubscriptionExpressions(Map.of(topic, new FilterExpression("*", FilterExpressionType.TAG)))
            .build();
    }

    static MessageBuilder message(String topic, String body) {
        return PROVIDER.newMessageBuilder().setTopic(topic).setBody(body.getBytes(StandardCharsets.UTF_8));
    }

    static String body(MessageView view) {
        ByteBuffer body = view.getBody().duplicate();
        byte[] bytes = new byte[body.remaining()];
        body.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /**
     * Receives (and acks) until `expected` messages came or `timeout`
     * passed; returns them in the order received.
     */
    static List<MessageView> receiveAndAck(SimpleConsumer consumer, int expected, Duration timeout)
        throws ClientException {
        List<MessageView> got = new ArrayList<>();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (got.size() < expected && System.nanoTime() < deadline) {
            for (MessageView view : consumer.receive(16, INVISIBLE)) {
                consumer.ack(view);
                got.add(view);
            }
        }
        return got;
    }

    static List<String> bodies(List<MessageView> views) {
        List<String> out = new ArrayList<>();
        for (MessageView view : views) {
            out.add(body(view));
        }
        return out;
    }
}

package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * ClientConfig.setNamespace: the client wraps topics and groups as
 * `NAMESPACE%name` on the wire and unwraps them for the application.
 */
@ExtendWith(FerrocketExtension.class)
class NamespaceTest {
    @Test
    @SuppressWarnings("deprecation")
    void namespacedTopicAndGroup(Ferrocket server) throws Exception {
        String namespace = Names.unique("ns");
        String topic = Names.unique("NsT");
        String group = Names.unique("NsCG");
        String wrapped = server.createTopic(namespace + "%" + topic, 2);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.configure(new DefaultMQProducer(Names.unique("NsPG")));
            producer.setNamespace(namespace);
            producer.setSendMsgTimeout(Clients.SEND_TIMEOUT_MS);
            producer.start();
            try {
                Set<String> sent = new TreeSet<>();
                for (int i = 0; i < 5; i++) {
                    SendResult result = producer.send(new Message(topic, bytes("ns-" + i)));
                    assertEquals(SendStatus.SEND_OK, result.getSendStatus());
                    sent.add("ns-" + i);
                }

                // On the broker the messages are in the wrapped topic.
                Set<String> raw = new TreeSet<>();
                clients.readAll(wrapped, "*", sent.size()).forEach(m -> raw.add(body(m)));
                assertEquals(sent, raw);

                Map<String, String> topicOf = new ConcurrentHashMap<>();
                CountDownLatch all = new CountDownLatch(sent.size());
                DefaultMQPushConsumer consumer = clients.pushConsumer(group);
                consumer.setNamespace(namespace);
                consumer.subscribe(topic, "*");
                consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                    for (MessageExt message : messages) {
                        if (topicOf.putIfAbsent(body(message), message.getTopic()) == null) {
                            all.countDown();
                        }
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                });
                consumer.start();
                assertTrue(all.await(Clients.RECEIVE_TIMEOUT.toSeconds(), TimeUnit.SECONDS), "received " + topicOf);
                assertEquals(sent, new TreeSet<>(topicOf.keySet()));
                // The application sees the topic without the namespace.
                assertEquals(Set.of(topic), Set.copyOf(topicOf.values()));
                // The broker knows the group by its wrapped name.
                String connections = server.admin(true, "consumer", "connection", "-g", namespace + "%" + group);
                assertTrue(connections.contains(topic), connections);
            } finally {
                producer.shutdown();
            }
        }
    }
}

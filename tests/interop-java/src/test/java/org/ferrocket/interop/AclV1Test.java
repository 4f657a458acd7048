package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * ACL 1.0 (`aclEnable=true`, `{rocketmqHome}/conf/plain_acl.yml`) with the
 * Java client's `AclClientRPCHook(new SessionCredentials(ak, sk))`: a
 * permitted account sends and consumes; a wrong secret key and a topic the
 * account may only SUB are refused with SYSTEM_ERROR (1) and Java's
 * AclException words. Both lines: 4.9.8 has `AclClientRPCHook` in
 * `rocketmq-acl` (a dependency of the rocketmq4 profile), 5.x in
 * `rocketmq-client`.
 */
@ExtendWith(FerrocketExtension.class)
class AclV1Test {
    static final String ADMIN_AK = "RocketMQAdmin";
    static final String ADMIN_SK = "adminSecret1";
    static final String APP_AK = "appAccess1";
    static final String APP_SK = "appSecret1";
    /** The account may PUB and SUB here ... */
    static final String TOPIC = "AclOrders";
    /** ... and only SUB here. */
    static final String SUB_ONLY_TOPIC = "AclAudit";
    static final int COUNT = 8;
    static final int SYSTEM_ERROR = 1;

    /** Writes the ACL home (read by FerrocketExtension before the server starts). */
    static List<String> brokerSettings() throws Exception {
        Path home = Ferrocket.home().resolve(Names.unique("acl-v1-home"));
        Files.createDirectories(home.resolve("conf"));
        String yaml = String.join("\n",
            "accounts:",
            "  - accessKey: " + ADMIN_AK,
            "    secretKey: " + ADMIN_SK,
            "    admin: true",
            "  - accessKey: " + APP_AK,
            "    secretKey: " + APP_SK,
            "    admin: false",
            "    defaultTopicPerm: DENY",
            "    defaultGroupPerm: SUB",
            "    topicPerms: [\"" + TOPIC + "=PUB|SUB\", \"" + SUB_ONLY_TOPIC + "=SUB\"]",
            "");
        Files.write(home.resolve("conf/plain_acl.yml"), yaml.getBytes(StandardCharsets.UTF_8));
        return List.of("aclEnable=true", "rocketmqHome=" + home);
    }

    static RPCHook hook(String accessKey, String secretKey) {
        return new AclClientRPCHook(new SessionCredentials(accessKey, secretKey));
    }

    private static void createTopics(Ferrocket server) throws Exception {
        for (String topic : List.of(TOPIC, SUB_ONLY_TOPIC)) {
            server.createTopic(topic, 4, "--access-key", ADMIN_AK, "--secret-key", ADMIN_SK);
        }
    }

    private static DefaultMQProducer producer(Clients clients, RPCHook hook) throws Exception {
        DefaultMQProducer producer = clients.configure(new DefaultMQProducer(Names.unique("AclPG"), hook));
        producer.setSendMsgTimeout(Clients.SEND_TIMEOUT_MS);
        producer.setRetryTimesWhenSendFailed(0);
        producer.start();
        return clients.track(producer, producer::shutdown);
    }

    /** The broker's refusal, found in the send exception's causes. */
    private static MQBrokerException refusal(Throwable thrown) {
        for (Throwable cause = thrown; cause != null; cause = cause.getCause()) {
            if (cause instanceof MQBrokerException) {
                return (MQBrokerException) cause;
            }
        }
        throw new AssertionError("no MQBrokerException in " + thrown, thrown);
    }

    @Test
    void permittedAccountSendsAndConsumes(Ferrocket server) throws Exception {
        createTopics(server);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = producer(clients, hook(APP_AK, APP_SK));
            Map<String, String> sent = new TreeMap<>();
            for (int i = 0; i < COUNT; i++) {
                SendResult result = producer.send(new Message(TOPIC, "TagA", bytes("acl-" + i)));
                assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
                sent.put(result.getMsgId(), "acl-" + i);
            }

            DefaultMQPushConsumer consumer = clients.configure(new DefaultMQPushConsumer(
                Names.unique("AclCG"), hook(APP_AK, APP_SK), new AllocateMessageQueueAveragely()));
            clients.track(consumer, consumer::shutdown);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(TOPIC, "*");
            Map<String, String> received = new ConcurrentHashMap<>();
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                messages.forEach(m -> received.put(m.getMsgId(), Clients.body(m)));
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            long deadline = System.nanoTime() + Clients.RECEIVE_TIMEOUT.toNanos();
            while (received.size() < COUNT && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertEquals(sent, new TreeMap<>(received));
        }
    }

    @Test
    void wrongSecretKeyIsRefused(Ferrocket server) throws Exception {
        createTopics(server);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = producer(clients, hook(APP_AK, "notTheSecret1"));
            Exception thrown = assertThrows(Exception.class,
                () -> producer.send(new Message(TOPIC, bytes("wrong-key"))));
            MQBrokerException refused = refusal(thrown);
            assertEquals(SYSTEM_ERROR, refused.getResponseCode(), refused.toString());
            assertTrue(String.valueOf(refused.getErrorMessage())
                .contains("Check signature failed for accessKey=" + APP_AK), refused.toString());
        }
    }

    @Test
    void topicWithoutPubIsRefused(Ferrocket server) throws Exception {
        createTopics(server);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = producer(clients, hook(APP_AK, APP_SK));
            Exception thrown = assertThrows(Exception.class,
                () -> producer.send(new Message(SUB_ONLY_TOPIC, bytes("no-pub"))));
            MQBrokerException refused = refusal(thrown);
            assertEquals(SYSTEM_ERROR, refused.getResponseCode(), refused.toString());
            assertTrue(String.valueOf(refused.getErrorMessage())
                .contains("No permission for topic:" + SUB_ONLY_TOPIC), refused.toString());
        }
        assertEquals(0, storedCount(server, SUB_ONLY_TOPIC), "a refused send was stored");
    }

    /** The sum of `topic`'s queues' max offsets, asked as the admin account. */
    @SuppressWarnings("deprecation")
    private static long storedCount(Ferrocket server, String topic) throws Exception {
        try (Clients clients = new Clients(server)) {
            DefaultMQPullConsumer reader = clients.configure(
                new DefaultMQPullConsumer(Names.unique("AclReadCG"), hook(ADMIN_AK, ADMIN_SK)));
            reader.start();
            clients.track(reader, reader::shutdown);
            long total = 0;
            for (MessageQueue queue : reader.fetchSubscribeMessageQueues(topic)) {
                total += reader.maxOffset(queue);
            }
            return total;
        }
    }
}

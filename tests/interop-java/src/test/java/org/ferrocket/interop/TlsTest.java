package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.netty.TlsSystemConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * TLS: a broker that takes TLS only (`tls.server.mode=enforcing`, its
 * self-signed test certificate); a producer and a push consumer with
 * `setUseTLS(true)` send and consume. The client's TLS settings are
 * TlsSystemConfig's, read from the tls.client.* system properties when the
 * class loads: here their defaults, `tls.test.mode.enable=true` and
 * `tls.client.authServer=false` (TlsHelper then trusts any certificate,
 * InsecureTrustManagerFactory). A plaintext producer is refused.
 */
@ExtendWith(FerrocketExtension.class)
@BrokerSettings({"tls.server.mode=enforcing"})
class TlsTest {
    static final int COUNT = 8;

    @Test
    void sendAndConsumeOverTls(Ferrocket server) throws Exception {
        assertTrue(TlsSystemConfig.tlsTestModeEnable, "tls.test.mode.enable is off in this JVM");
        assertFalse(TlsSystemConfig.tlsClientAuthServer, "tls.client.authServer is on in this JVM");
        // The broker closes plaintext connections: the admin tool talks TLS too.
        String topic = server.createTopic(Names.unique("TlsT"), 4, "--tls");
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.configure(new DefaultMQProducer(Names.unique("TlsPG")));
            producer.setUseTLS(true);
            producer.setSendMsgTimeout(Clients.SEND_TIMEOUT_MS);
            producer.start();
            clients.track(producer, producer::shutdown);
            Map<String, String> sent = new TreeMap<>();
            for (int i = 0; i < COUNT; i++) {
                SendResult result = producer.send(new Message(topic, bytes("tls-" + i)));
                assertEquals(SendStatus.SEND_OK, result.getSendStatus(), result.toString());
                sent.put(result.getMsgId(), "tls-" + i);
            }

            DefaultMQPushConsumer consumer = clients.pushConsumer(Names.unique("TlsCG"));
            consumer.setUseTLS(true);
            consumer.subscribe(topic, "*");
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
    void plaintextSendIsRefused(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("TlsPlainT"), 1, "--tls");
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.configure(new DefaultMQProducer(Names.unique("PlainPG")));
            producer.setUseTLS(false);
            producer.setSendMsgTimeout(3000);
            producer.setRetryTimesWhenSendFailed(0);
            producer.start();
            clients.track(producer, producer::shutdown);
            assertThrows(Exception.class, () -> producer.send(new Message(topic, bytes("plain"))));
        }
    }
}

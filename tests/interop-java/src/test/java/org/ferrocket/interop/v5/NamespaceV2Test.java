package org.ferrocket.interop.v5;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Set;
import java.util.TreeSet;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * 5.x only: ClientConfig.setNamespaceV2 does not wrap names; it adds the
 * `ns`/`nsd` header fields to every request (NamespaceRpcHook), which a
 * proxy may act on and Apache's broker ignores. A broker must accept them.
 */
@ExtendWith(FerrocketExtension.class)
class NamespaceV2Test {
    @Test
    void namespaceV2HeaderIsAccepted(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("NsV2T"), 2);
        try (Clients clients = new Clients(server)) {
            DefaultMQProducer producer = clients.configure(new DefaultMQProducer(Names.unique("NsV2PG")));
            producer.setNamespaceV2(Names.unique("nsv2"));
            producer.setSendMsgTimeout(Clients.SEND_TIMEOUT_MS);
            producer.start();
            Set<String> sent = new TreeSet<>();
            try {
                for (int i = 0; i < 5; i++) {
                    assertEquals(SendStatus.SEND_OK, producer.send(new Message(topic, bytes("v2-" + i))).getSendStatus());
                    sent.add("v2-" + i);
                }
            } finally {
                producer.shutdown();
            }
            // Stored under the plain topic name, as Apache's broker does.
            Set<String> read = new TreeSet<>();
            clients.readAll(topic, "*", sent.size()).forEach(m -> read.add(body(m)));
            assertEquals(sent, read);
        }
    }
}

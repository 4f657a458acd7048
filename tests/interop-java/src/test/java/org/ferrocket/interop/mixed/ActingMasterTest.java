package org.ferrocket.interop.mixed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.header.QueryConsumerOffsetRequestHeader;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Slave acting master with the 5.5.0 Remoting client, Ferrocket only (no
 * Apache RocketMQ needed): a SYNC_MASTER and its slave, both with
 * `enableSlaveActingMaster=true`, under a name server with
 * `supportActingMaster` and `notifyMinBrokerIdChanged`. Once the master is
 * killed the route lists the slave as the set's master, read-only, and a
 * push consumer started then reads every acknowledged message from it and
 * commits its offsets there; a send-back to it is refused with Java's
 * SYSTEM_ERROR (1).
 */
class ActingMasterTest {
    static final int MESSAGES = 30;
    static final int QUEUES = 4;
    static final Duration WAIT = Duration.ofSeconds(60);

    final List<Proc> all = new ArrayList<>();

    @AfterEach
    void stop() {
        for (int i = all.size() - 1; i >= 0; i--) {
            all.get(i).close();
        }
    }

    private Proc started(Proc proc) {
        all.add(proc);
        return proc;
    }

    @Test
    void pushConsumerReadsFromTheActingSlave() throws Exception {
        Proc namesrv = started(Servers.ferrocketNamesrv("acting-namesrv",
            List.of("supportActingMaster=true", "notifyMinBrokerIdChanged=true")));
        namesrv.waitReady(Servers.ferrocketReadyLine("namesrv", namesrv));
        String brokerName = Names.unique("acting");
        Proc master = started(Servers.ferrocketBroker("acting-master", namesrv.addr(), brokerName,
            List.of("brokerRole=SYNC_MASTER", "enableSlaveActingMaster=true")));
        Proc slave = started(Servers.ferrocketBroker("acting-slave", namesrv.addr(), brokerName,
            List.of("brokerRole=SLAVE", "brokerId=1", "slaveReadEnable=true", "enableSlaveActingMaster=true")));
        master.waitReady(Servers.ferrocketReadyLine("broker", master));
        slave.waitReady(Servers.ferrocketReadyLine("broker", slave));
        Servers.waitRegistered(namesrv.addr(), master);
        Servers.waitRegistered(namesrv.addr(), slave);
        String topic = Names.unique("ActingT");
        Servers.createTopic(namesrv.addr(), topic, QUEUES, master);

        Set<String> sent = new TreeSet<>();
        try (Clients clients = new Clients(namesrv.addr())) {
            DefaultMQProducer producer = clients.producer();
            // SYNC_MASTER: SEND_OK only once the slave holds the message
            // (SLAVE_NOT_AVAILABLE until it has linked).
            for (int i = 0; i < MESSAGES; i++) {
                String body = topic + "-" + i;
                long deadline = System.nanoTime() + WAIT.toNanos();
                SendResult result;
                while ((result = producer.send(new Message(topic, Clients.bytes(body)))).getSendStatus()
                    != SendStatus.SEND_OK) {
                    assertTrue(System.nanoTime() < deadline, "no slave acknowledged: " + result);
                    Thread.sleep(200);
                }
                sent.add(body);
            }
            // A slave serves the topics it copied from its master (every
            // 10 s, as Java's SlaveSynchronize does): wait for this one.
            Servers.waitFor(WAIT, "the slave copied the topic", () -> producer.getDefaultMQProducerImpl()
                .getMqClientFactory().getMQClientAPIImpl().getAllTopicConfig(slave.addr(), 3000)
                .getTopicConfigTable().containsKey(topic));
            master.kill();
            Servers.waitUnregistered(namesrv.addr(), master);
            Servers.waitFor(WAIT, "the route lists the slave as the set's master", () -> {
                TopicRouteData route = producer.getDefaultMQProducerImpl().getMqClientFactory()
                    .getMQClientAPIImpl().getTopicRouteInfoFromNameServer(topic, 3000);
                BrokerData broker = route.getBrokerDatas().get(0);
                return broker.isEnableActingMaster()
                    && slave.addr().equals(broker.getBrokerAddrs().get(0L))
                    && (route.getQueueDatas().get(0).getPerm() & 2) == 0;
            });

            Set<String> received = ConcurrentHashMap.newKeySet();
            AtomicReference<MessageExt> one = new AtomicReference<>();
            String group = Names.unique("ActingCG");
            DefaultMQPushConsumer consumer = clients.pushConsumer(group);
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
                for (MessageExt message : messages) {
                    received.add(Clients.body(message));
                    one.compareAndSet(null, message);
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            Servers.waitFor(WAIT, "the push consumer read every message from the slave",
                () -> received.size() >= MESSAGES);
            assertEquals(sent, new TreeSet<>(received));
            MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
            // A send-back to a slave: Java's "no master available" (the
            // client then sends the retry through its own producer).
            MQBrokerException refused = assertThrows(MQBrokerException.class, () -> api.consumerSendMessageBack(
                slave.addr(), brokerName, one.get(), group, 0, 3000, 16));
            assertEquals(1, refused.getResponseCode(), refused.toString());
            // The consumer commits its offsets on the acting slave.
            Servers.waitFor(WAIT, "the slave holds the group's committed offsets", () -> {
                long committed = 0;
                for (int queue = 0; queue < QUEUES; queue++) {
                    QueryConsumerOffsetRequestHeader header = new QueryConsumerOffsetRequestHeader();
                    header.setConsumerGroup(group);
                    header.setTopic(topic);
                    header.setQueueId(queue);
                    try {
                        committed += api.queryConsumerOffset(slave.addr(), header, 3000);
                    } catch (MQBrokerException notYet) {
                        return false;
                    }
                }
                return committed == MESSAGES;
            });
        }
    }
}

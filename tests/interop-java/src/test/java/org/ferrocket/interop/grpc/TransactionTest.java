package org.ferrocket.interop.grpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;
import org.ferrocket.interop.BrokerSettings;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.Names;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * v5 transactional sends: commit and rollback at once, and a transaction
 * left open that the broker checks back (through the endpoint's telemetry
 * stream) and the producer's checker commits. The broker checks a half
 * message 2 s old every second.
 */
@BrokerSettings({"transactionTimeOut=2000", "transactionCheckInterval=1000"})
class TransactionTest extends GrpcTestBase {
    private static final Duration RECEIVE_TIMEOUT = Duration.ofSeconds(20);

    private static Producer producer(String address, String topic, TransactionChecker checker) throws Exception {
        return V5.PROVIDER.newProducerBuilder()
            .setClientConfiguration(V5.config(address))
            .setTopics(topic)
            .setTransactionChecker(checker)
            .build();
    }

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void commitAndRollback(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcTx"), 2);
        Set<String> checked = ConcurrentHashMap.newKeySet();
        try (Producer producer = producer(address, topic, view -> {
            checked.add(V5.body(view));
            return TransactionResolution.ROLLBACK;
        })) {
            Transaction rolledBack = producer.beginTransaction();
            producer.send(V5.message(topic, "rolled-back").build(), rolledBack);
            rolledBack.rollback();
            Transaction committed = producer.beginTransaction();
            producer.send(V5.message(topic, "committed").build(), committed);
            committed.commit();
            producer.send(V5.message(topic, "plain").build());
        }
        try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcTxGroup"), topic)) {
            List<MessageView> got = V5.receiveAndAck(consumer, 2, RECEIVE_TIMEOUT);
            assertEquals(Set.of("committed", "plain"), Set.copyOf(V5.bodies(got)));
            assertEquals(2, got.size(), "each message once: " + V5.bodies(got));
        }
        assertTrue(checked.isEmpty(), "no check-back for finished transactions: " + checked);
    }

    @ParameterizedTest
    @EnumSource(Endpoint.class)
    void openTransactionIsCommittedByTheChecker(Endpoint endpoint, Ferrocket server) throws Exception {
        String address = address(endpoint, server);
        String topic = server.createTopic(Names.unique("GrpcTxCheck"), 2);
        Set<String> checkedIds = ConcurrentHashMap.newKeySet();
        try (Producer producer = producer(address, topic, view -> {
            checkedIds.add(view.getMessageId().toString());
            return TransactionResolution.COMMIT;
        })) {
            Transaction open = producer.beginTransaction();
            SendReceipt receipt = producer.send(V5.message(topic, "checked").setTag("TagTx").build(), open);
            // Neither commit nor rollback: the broker must ask the checker.
            try (SimpleConsumer consumer = V5.simpleConsumer(address, Names.unique("GrpcTxCheckGroup"), topic)) {
                List<MessageView> got = V5.receiveAndAck(consumer, 1, RECEIVE_TIMEOUT);
                assertEquals(List.of("checked"), V5.bodies(got), "committed by the checker");
                assertEquals("TagTx", got.get(0).getTag().orElse(null));
                assertEquals(receipt.getMessageId().toString(), got.get(0).getMessageId().toString());
            }
            assertTrue(checkedIds.contains(receipt.getMessageId().toString()),
                "the checker saw the half message: " + checkedIds);
        }
    }
}

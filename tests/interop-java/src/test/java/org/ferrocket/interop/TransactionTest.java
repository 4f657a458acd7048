package org.ferrocket.interop;

import static org.ferrocket.interop.Clients.body;
import static org.ferrocket.interop.Clients.bytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * TransactionMQProducer: half messages, END_TRANSACTION commit and
 * rollback, and the broker's check-back (CHECK_TRANSACTION_STATE) of a
 * transaction left UNKNOW. Checks run every second here.
 */
@ExtendWith(FerrocketExtension.class)
@BrokerSettings({"transactionCheckInterval=1000", "transactionTimeOut=1000"})
class TransactionTest {
    /** Local decisions by body; a check answers what `checked` says. */
    private static final class Listener implements TransactionListener {
        final Map<String, LocalTransactionState> local = new ConcurrentHashMap<>();
        final Map<String, LocalTransactionState> onCheck = new ConcurrentHashMap<>();
        /** body -> transaction id the check was asked about */
        final Map<String, String> checked = new ConcurrentHashMap<>();
        final CountDownLatch firstCheck = new CountDownLatch(1);

        @Override
        public LocalTransactionState executeLocalTransaction(Message message, Object arg) {
            return local.getOrDefault(new String(message.getBody()), LocalTransactionState.UNKNOW);
        }

        @Override
        public LocalTransactionState checkLocalTransaction(MessageExt message) {
            String text = body(message);
            checked.put(text, message.getTransactionId());
            firstCheck.countDown();
            return onCheck.getOrDefault(text, LocalTransactionState.UNKNOW);
        }
    }

    @Test
    void unknownThenCommittedByCheck(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("TxCheckT"), 2);
        Listener listener = new Listener();
        listener.onCheck.put("tx-checked", LocalTransactionState.COMMIT_MESSAGE);
        try (Clients clients = new Clients(server)) {
            TransactionMQProducer producer = clients.transactionProducer(listener);
            TransactionSendResult result = producer.sendMessageInTransaction(
                new Message(topic, bytes("tx-checked")), null);
            assertEquals(SendStatus.SEND_OK, result.getSendStatus());
            assertEquals(LocalTransactionState.UNKNOW, result.getLocalTransactionState());
            // Not visible while the transaction is open.
            assertEquals(List.of(), clients.readAll(topic, "*", 1, java.time.Duration.ZERO));

            assertTrue(listener.firstCheck.await(30, TimeUnit.SECONDS), "the broker never checked back");
            List<MessageExt> read = clients.readAll(topic, "*", 1);
            assertEquals(1, read.size(), read.toString());
            assertEquals("tx-checked", body(read.get(0)));
            assertEquals(result.getMsgId(), read.get(0).getMsgId());
            assertEquals(result.getTransactionId(), listener.checked.get("tx-checked"));
        }
    }

    @Test
    void commitAndRollback(Ferrocket server) throws Exception {
        String topic = server.createTopic(Names.unique("TxEndT"), 2);
        Listener listener = new Listener();
        listener.local.put("tx-commit", LocalTransactionState.COMMIT_MESSAGE);
        listener.local.put("tx-rollback", LocalTransactionState.ROLLBACK_MESSAGE);
        // Should the broker check them anyway, it hears the same decision.
        listener.onCheck.put("tx-commit", LocalTransactionState.COMMIT_MESSAGE);
        listener.onCheck.put("tx-rollback", LocalTransactionState.ROLLBACK_MESSAGE);
        try (Clients clients = new Clients(server)) {
            TransactionMQProducer producer = clients.transactionProducer(listener);
            for (String text : List.of("tx-commit", "tx-rollback")) {
                TransactionSendResult result = producer.sendMessageInTransaction(new Message(topic, bytes(text)), null);
                assertEquals(SendStatus.SEND_OK, result.getSendStatus());
                assertEquals(listener.local.get(text), result.getLocalTransactionState());
            }
            DefaultMQProducer plain = clients.producer();
            assertEquals(SendStatus.SEND_OK, plain.send(new Message(topic, bytes("plain"))).getSendStatus());
            // Past a few check intervals: the rolled back one never shows up.
            Thread.sleep(3000);
            Set<String> bodies = new TreeSet<>();
            clients.readAll(topic, "*", 2).forEach(m -> bodies.add(body(m)));
            assertEquals(new TreeSet<>(List.of("tx-commit", "plain")), bodies);
            assertEquals(Map.of(), listener.checked, "ended transactions were checked");
        }
    }
}

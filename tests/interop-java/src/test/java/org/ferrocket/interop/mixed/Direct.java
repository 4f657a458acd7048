package org.ferrocket.interop.mixed;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.impl.CommunicationMode;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.impl.consumer.PullResultExt;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.sysflag.PullSysFlag;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.QueryConsumerOffsetRequestHeader;

/**
 * Requests to one broker address, whatever its role (the client's own
 * routing never pulls from a slave while the master is up): pulls, offsets,
 * metadata and runtime info, through a started client's MQClientAPIImpl.
 */
final class Direct {
    static final long TIMEOUT_MS = 5_000;

    private final MQClientAPIImpl api;

    Direct(DefaultMQProducer startedProducer) {
        this.api = startedProducer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
    }

    /** Every message of `topic` queue `queueId` that `addr` serves, from offset 0. */
    List<MessageExt> readQueue(String addr, String group, String topic, int queueId) throws Exception {
        List<MessageExt> read = new ArrayList<>();
        long offset = 0;
        while (true) {
            PullMessageRequestHeader header = new PullMessageRequestHeader();
            header.setConsumerGroup(group);
            header.setTopic(topic);
            header.setQueueId(queueId);
            header.setQueueOffset(offset);
            header.setMaxMsgNums(32);
            header.setSysFlag(PullSysFlag.buildSysFlag(false, false, true, false));
            header.setCommitOffset(0L);
            header.setSuspendTimeoutMillis(0L);
            header.setSubscription("*");
            header.setSubVersion(0L);
            header.setExpressionType("TAG");
            PullResult result = api.pullMessage(addr, header, TIMEOUT_MS, CommunicationMode.SYNC, null);
            if (result.getPullStatus() != PullStatus.FOUND) {
                return read;
            }
            byte[] binary = ((PullResultExt) result).getMessageBinary();
            List<MessageExt> batch = MessageDecoder.decodes(ByteBuffer.wrap(binary));
            if (batch.isEmpty()) {
                return read;
            }
            read.addAll(batch);
            offset = result.getNextBeginOffset();
        }
    }

    /** The topics the broker has (GET_ALL_TOPIC_CONFIG, 21: what a slave copies). */
    Set<String> topics(String addr) throws Exception {
        return api.getAllTopicConfig(addr, TIMEOUT_MS).getTopicConfigTable().keySet();
    }

    /** The subscription groups the broker has (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201). */
    Set<String> groups(String addr) throws Exception {
        return api.getAllSubscriptionGroup(addr, TIMEOUT_MS).getSubscriptionGroupTable().keySet();
    }

    /** The committed offset of `group` on a queue (QUERY_CONSUMER_OFFSET, 14); -1 when there is none. */
    long consumerOffset(String addr, String group, String topic, int queueId) throws Exception {
        QueryConsumerOffsetRequestHeader header = new QueryConsumerOffsetRequestHeader();
        header.setConsumerGroup(group);
        header.setTopic(topic);
        header.setQueueId(queueId);
        try {
            return api.queryConsumerOffset(addr, header, TIMEOUT_MS);
        } catch (MQBrokerException e) {
            return -1;
        }
    }

    /**
     * The broker's timer checkpoint (GET_TIMER_CHECK_POINT, 60): Java's
     * `TimerCheckpoint` as seven longs, lastReadTimeMs, lastTimerLogFlushPos,
     * lastTimerQueueOffset, masterTimerQueueOffset and the DataVersion's three.
     */
    long[] timerCheckpoint(String addr) throws Exception {
        RemotingCommand answer = api.getRemotingClient()
            .invokeSync(addr, RemotingCommand.createRequestCommand(60, null), TIMEOUT_MS);
        if (answer.getCode() != 0 || answer.getBody() == null || answer.getBody().length != 56) {
            throw new IllegalStateException(addr + " answered " + answer);
        }
        ByteBuffer body = ByteBuffer.wrap(answer.getBody());
        long[] longs = new long[7];
        for (int i = 0; i < longs.length; i++) {
            longs[i] = body.getLong();
        }
        return longs;
    }

    /** The CommitLog's end as the broker reports it (`commitLogMaxOffset`). */
    long commitLogMaxOffset(String addr) throws Exception {
        String value = api.getBrokerRuntimeInfo(addr, TIMEOUT_MS).getTable().get("commitLogMaxOffset");
        if (value == null) {
            throw new IllegalStateException(addr + " reported no commitLogMaxOffset");
        }
        return Long.parseLong(value);
    }
}

package org.ferrocket.interop.mixed;

import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.rocketmq.common.message.MessageExt;

/**
 * What a broker serves of some queues, read with raw pulls from offset 0:
 * per `topic/queueId/queueOffset`, the message's offset id (store host and
 * CommitLog offset), CommitLog offset, times, body and every property
 * (UNIQ_KEY, KEYS, TAGS, user properties). Two brokers serving the same
 * store must give equal views.
 */
final class StoreView {
    /** `topic/queueId/queueOffset` to the message's stored facts. */
    final Map<String, String> entries = new TreeMap<>();
    /** `topic/queueId/queueOffset` to the message itself. */
    final Map<String, MessageExt> messages = new TreeMap<>();

    static StoreView read(Direct direct, String addr, String group, Map<String, Integer> queues)
        throws Exception {
        StoreView view = new StoreView();
        for (Map.Entry<String, Integer> topic : queues.entrySet()) {
            for (int queueId = 0; queueId < topic.getValue(); queueId++) {
                List<MessageExt> read = direct.readQueue(addr, group, topic.getKey(), queueId);
                for (MessageExt message : read) {
                    String key = topic.getKey() + "/" + queueId + "/" + message.getQueueOffset();
                    view.entries.put(key, describe(message));
                    view.messages.put(key, message);
                }
            }
        }
        return view;
    }

    static String describe(MessageExt message) {
        return "msgId=" + message.getMsgId()
            + " commitLogOffset=" + message.getCommitLogOffset()
            + " born=" + message.getBornTimestamp()
            + " stored=" + message.getStoreTimestamp()
            + " storeHost=" + message.getStoreHost()
            + " flag=" + message.getFlag()
            + " sysFlag=" + message.getSysFlag()
            + " body=" + HexFormat.of().formatHex(message.getBody())
            + " properties=" + new TreeMap<>(message.getProperties());
    }

    /** Messages in this view whose body is `body`. */
    long count(String body) {
        return messages.values().stream().filter(m -> body.equals(org.ferrocket.interop.Clients.body(m))).count();
    }

    int size() {
        return entries.size();
    }
}

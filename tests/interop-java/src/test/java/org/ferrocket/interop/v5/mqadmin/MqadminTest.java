package org.ferrocket.interop.v5.mqadmin;

import static org.ferrocket.interop.Clients.bytes;
import static org.ferrocket.interop.v5.mqadmin.Check.printing;
import static org.ferrocket.interop.v5.mqadmin.Check.refused;
import static org.ferrocket.interop.v5.mqadmin.Check.unsupported;
import static org.ferrocket.interop.v5.mqadmin.Check.works;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.ferrocket.interop.Clients;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Apache RocketMQ's mqadmin (rocketmq-tools 5.5.0, unchanged) against one
 * `ferrocket start` (a name server and broker-a): every command that talks
 * to a name server or a broker either works, checked on what it prints, or
 * is refused with a remark that names what Ferrocket does not support. The
 * controller commands are in {@link MqadminControllerTest}, users and ACLs
 * in {@link MqadminAclTest}. README.md's "mqadmin commands" table lists
 * the outcome of each.
 */
@ExtendWith(FerrocketExtension.class)
class MqadminTest {
    static final String CLUSTER = "DefaultCluster";
    static final String BROKER = "broker-a";
    static final int MESSAGES = 4;

    static Ferrocket server;
    static String ns;
    static String broker;
    static String topic;
    static String producerGroup;
    static String consumerGroup;
    static Clients clients;
    static SendResult firstSent;

    @BeforeAll
    static void cluster(Ferrocket started) throws Exception {
        server = started;
        ns = started.namesrvAddr();
        broker = started.brokerAddr();
        topic = started.createTopic(Names.unique("AdminT"), 4);
        producerGroup = Names.unique("AdminPG");
        consumerGroup = Names.unique("AdminCG");
        clients = new Clients(started);
        DefaultMQProducer producer = clients.configure(new DefaultMQProducer(producerGroup));
        producer.start();
        for (int i = 0; i < MESSAGES; i++) {
            Message message = new Message(topic, "TagA", "key" + i, bytes("body" + i));
            SendResult sent = producer.send(message, Clients.SEND_TIMEOUT_MS);
            if (firstSent == null) {
                firstSent = sent;
            }
        }
        CountDownLatch consumed = new CountDownLatch(MESSAGES);
        DefaultMQPushConsumer consumer = clients.pushConsumer(consumerGroup);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (messages, context) -> {
            messages.forEach(m -> consumed.countDown());
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        assertTrue(consumed.await(Clients.RECEIVE_TIMEOUT.toSeconds(), TimeUnit.SECONDS), "not consumed");
        // The consumer commits its offsets every 5 s; consumerProgress shows them then.
        consumer.getDefaultMQPushConsumerImpl().getOffsetStore().persistAll(
            consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable().keySet());
    }

    @AfterAll
    static void stopClients() {
        if (clients != null) {
            clients.close();
        }
    }

    // ---- name server ----

    @Test
    void clusterListShowsTheBroker() throws Exception {
        Mqadmin.Result list = works(printing(CLUSTER, BROKER, broker, "ferrocket-"), "clusterList", "-n", ns);
        assertEquals(1, Mqadmin.lines(list.output, broker).size(), list::toString);
        works(printing("#InTotalToday", BROKER), "clusterList", "-n", ns, "-m");
    }

    @Test
    void topicListRouteStatusAndCluster() throws Exception {
        works(printing(topic), "topicList", "-n", ns);
        Mqadmin.Result byCluster = works(printing("#Cluster Name"), "topicList", "-n", ns, "-c");
        assertTrue(Mqadmin.lines(byCluster.output, topic).get(0).contains(CLUSTER), byCluster::toString);
        works(printing("\"brokerName\":\"" + BROKER + "\"", broker, "\"writeQueueNums\":4"),
            "topicRoute", "-n", ns, "-t", topic);
        Mqadmin.Result status = works(printing("#Max Offset"), "topicStatus", "-n", ns, "-t", topic);
        assertEquals(4, Mqadmin.lines(status.output, BROKER).size(), status::toString);
        works(printing(CLUSTER), "topicClusterList", "-n", ns, "-t", topic);
    }

    @Test
    void kvConfigIsPutAndDeleted() throws Exception {
        String namespace = Names.unique("AdminNS");
        works(printing("create or update kv config to namespace success"),
            "updateKvConfig", "-n", ns, "-s", namespace, "-k", "k1", "-v", "v1");
        works(printing("delete kv config from namespace success"),
            "deleteKvConfig", "-n", ns, "-s", namespace, "-k", "k1");
    }

    @Test
    void orderConfIsPutReadAndDeleted() throws Exception {
        String ordered = Names.unique("AdminOrderT");
        works(printing("update orderConf success"),
            "updateOrderConf", "-n", ns, "-t", ordered, "-v", BROKER + ":4", "-m", "put");
        works(printing("orderConf=[" + BROKER + ":4]"), "updateOrderConf", "-n", ns, "-t", ordered, "-m", "get");
        works(printing("delete orderConf success"), "updateOrderConf", "-n", ns, "-t", ordered, "-m", "delete");
    }

    @Test
    void namesrvConfigIsShownAndChanged() throws Exception {
        works(printing("brokerExpiryMs", "orderMessageEnable                                =  true"),
            "getNamesrvConfig", "-n", ns);
        works(printing("update name server config success"),
            "updateNamesrvConfig", "-n", ns, "-k", "deleteTopicWithBrokerRegistration", "-v", "false");
        refused(29, printing("`listenPort` is read at start and cannot change while the name server runs"),
            "updateNamesrvConfig", "-n", ns, "-k", "listenPort", "-v", "1");
        refused(16, printing("Can not update config in black list"),
            "updateNamesrvConfig", "-n", ns, "-k", "kvConfigPath", "-v", "/tmp/x");
    }

    @Test
    void writePermIsWipedAndAdded() throws Exception {
        try {
            works(printing("wipe write perm of broker[" + BROKER + "] in name server[" + ns + "] OK"),
                "wipeWritePerm", "-n", ns, "-b", BROKER);
            works(printing("\"perm\":4"), "topicRoute", "-n", ns, "-t", topic);
        } finally {
            works(printing("add write perm of broker[" + BROKER + "] in name server[" + ns + "] OK"),
                "addWritePerm", "-n", ns, "-b", BROKER);
        }
        works(printing("\"perm\":6"), "topicRoute", "-n", ns, "-t", topic);
    }

    // ---- topics ----

    @Test
    void topicIsCreatedChangedAndDeleted() throws Exception {
        String made = Names.unique("AdminMadeT");
        works(printing("create topic to " + broker + " success", "readQueueNums=3"),
            "updateTopic", "-n", ns, "-c", CLUSTER, "-t", made, "-r", "3", "-w", "3");
        Mqadmin.Result route = Check.until(Duration.ofSeconds(20), out -> out.contains(broker),
            "topicRoute", "-n", ns, "-t", made);
        assertTrue(route.output.contains("\"writeQueueNums\":3"), route::toString);
        works(printing("update topic perm from 6 to 4 in " + broker + " success"),
            "updateTopicPerm", "-n", ns, "-b", broker, "-t", made, "-p", "4");
        works(printing("delete topic [" + made + "] from cluster [" + CLUSTER + "] success"),
            "deleteTopic", "-n", ns, "-c", CLUSTER, "-t", made);
        assertFalse(Mqadmin.run("topicList", "-n", ns).output.contains(made));
    }

    @Test
    void topicRetentionIsSetChangedAndRemovedWithAttributes() throws Exception {
        String made = Names.unique("AdminRetT");
        works(printing("create topic to " + broker + " success"),
            "updateTopic", "-n", ns, "-b", broker, "-t", made, "-r", "2", "-w", "2",
            "-a", "+retention.ms=3600000,+retention.bytes=1048576");
        DefaultMQAdminExt admin = clients.configure(new DefaultMQAdminExt());
        admin.setAdminExtGroup(Names.unique("AdminRetG"));
        admin.start();
        clients.track(admin, admin::shutdown);
        Map<String, String> set = admin.examineTopicConfig(broker, made).getAttributes();
        assertEquals("3600000", set.get("retention.ms"), set::toString);
        assertEquals("1048576", set.get("retention.bytes"), set::toString);
        works(printing("create topic to " + broker + " success"),
            "updateTopic", "-n", ns, "-b", broker, "-t", made, "-r", "2", "-w", "2",
            "-a", "+retention.ms=60000,-retention.bytes");
        Map<String, String> changed = admin.examineTopicConfig(broker, made).getAttributes();
        assertEquals(Map.of("retention.ms", "60000"), changed);
        refused(1, printing("retention.ms"),
            "updateTopic", "-n", ns, "-b", broker, "-t", made, "-r", "2", "-w", "2",
            "-a", "+retention.ms=soon");
    }

    @Test
    void topicListFileCreatesEachTopic(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        String first = Names.unique("AdminListT");
        String second = Names.unique("AdminListT");
        Path file = dir.resolve("topics.json");
        Files.writeString(file, "[{\"topicName\":\"" + first + "\",\"readQueueNums\":2,\"writeQueueNums\":2,"
            + "\"perm\":6},{\"topicName\":\"" + second + "\",\"readQueueNums\":1,\"writeQueueNums\":1,\"perm\":6}]",
            StandardCharsets.UTF_8);
        works(printing("submit batch of topic config to " + broker + " success"),
            "updateTopicList", "-n", ns, "-b", broker, "-f", file.toString());
        works(printing(first, second), "topicList", "-n", ns);
    }

    @Test
    void allocateMqSplitsTheQueues() throws Exception {
        works(printing("\"result\"", "10.0.0.1", "10.0.0.2", topic), "allocateMQ", "-n", ns, "-t", topic,
            "-i", "10.0.0.1,10.0.0.2");
    }

    @Test
    void staticTopicsAreRefused() throws Exception {
        unsupported("UPDATE_AND_CREATE_STATIC_TOPIC",
            "updateStaticTopic", "-n", ns, "-c", CLUSTER, "-t", Names.unique("AdminStaticT"), "-qn", "2");
    }

    // ---- brokers ----

    @Test
    void brokerStatusPrintsRuntimeInfo() throws Exception {
        works(printing("commitLogMaxOffset", "brokerVersionDesc               : ferrocket-"),
            "brokerStatus", "-n", ns, "-b", broker);
        works(printing(broker + "          commitLogMaxOffset"), "brokerStatus", "-n", ns, "-c", CLUSTER);
    }

    @Test
    void brokerConfigIsShownAndChanged() throws Exception {
        works(printing("brokerName                                        =  " + BROKER),
            "getBrokerConfig", "-n", ns, "-b", broker);
        works(printing("update broker config success, " + broker),
            "updateBrokerConfig", "-n", ns, "-b", broker, "-k", "maxMessageSize", "-v", "4194305");
        works(printing("maxMessageSize                                    =  4194305"),
            "getBrokerConfig", "-n", ns, "-c", CLUSTER);
        refused(29, printing("`flushIntervalCommitLog` is read at start"),
            "updateBrokerConfig", "-n", ns, "-c", CLUSTER, "-k", "flushIntervalCommitLog", "-v", "600");
    }

    @Test
    void exportsWriteTheirFiles(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        works(printing("success"), "exportConfigs", "-n", ns, "-c", CLUSTER, "-f", dir.toString());
        assertTrue(Files.readString(dir.resolve("configs.json")).contains(BROKER));
        works(printing("success"), "exportMetadata", "-n", ns, "-b", broker, "-f", dir.toString(), "-g");
        assertTrue(Files.readString(dir.resolve("subscriptionGroup.json")).contains(consumerGroup));
        works(printing("success"), "exportMetadata", "-n", ns, "-c", CLUSTER, "-f", dir.toString(), "-t");
        assertTrue(Files.readString(dir.resolve("topic.json")).contains(topic));
        assertFalse(Files.readString(dir.resolve("topic.json")).contains("SCHEDULE_TOPIC_XXXX"));
        works(printing("success"), "exportMetrics", "-n", ns, "-c", CLUSTER, "-f", dir.toString());
    }

    @Test
    void statsAreShown() throws Exception {
        Mqadmin.Result all = works(printing("#Accumulation"), "statsAll", "-n", ns);
        assertTrue(Mqadmin.lines(all.output, topic).get(0).contains(consumerGroup), all::toString);
        works(printing(consumerGroup), "statsAll", "-n", ns, "-t", topic);
        works(printing(topic, consumerGroup, "Diff Total:"), "brokerConsumeStats", "-n", ns, "-b", broker);
    }

    @Test
    void haStatusOfAMasterWithoutSlaves() throws Exception {
        works(printing("#MasterAddr", broker, "#SlaveNum\t0"), "haStatus", "-n", ns, "-b", broker);
    }

    @Test
    void storeMaintenanceIsRefused() throws Exception {
        unsupported("CLEAN_EXPIRED_CONSUMEQUEUE", "cleanExpiredCQ", "-n", ns, "-b", broker);
        unsupported("CLEAN_UNUSED_TOPIC", "cleanUnusedTopic", "-n", ns, "-c", CLUSTER);
        unsupported("DELETE_EXPIRED_COMMITLOG", "deleteExpiredCommitLog", "-n", ns, "-b", broker);
        unsupported("RESET_MASTER_FLUSH_OFFSET", "resetMasterFlushOffset", "-n", ns, "-b", broker, "-o", "0");
        unsupported("SET_COMMITLOG_READ_MODE", "setCommitLogReadAheadMode", "-n", ns, "-b", broker, "-m", "1");
        unsupported("SWITCH_TIMER_ENGINE", "switchTimerEngine", "-n", ns, "-b", broker, "-e", "R");
        unsupported("CHECK_ROCKSDB_CQ_WRITE_PROGRESS",
            "checkRocksdbCqWriteProgress", "-n", ns, "-c", CLUSTER);
        unsupported("EXPORT_ROCKSDB_CONFIG_TO_JSON",
            "rocksDBConfigToJson", "-n", ns, "-c", CLUSTER, "-t", "topics");
    }

    @Test
    void coldDataFlowControlIsRefused() throws Exception {
        unsupported("GET_COLD_DATA_FLOW_CTR_INFO", "getColdDataFlowCtrInfo", "-n", ns, "-b", broker);
        unsupported("UPDATE_COLD_DATA_FLOW_CTR_CONFIG",
            "updateColdDataFlowCtrGroupConfig", "-n", ns, "-b", broker, "-g", consumerGroup, "-v", "100");
        unsupported("REMOVE_COLD_DATA_FLOW_CTR_CONFIG",
            "removeColdDataFlowCtrGroupConfig", "-n", ns, "-b", broker, "-g", consumerGroup);
    }

    @Test
    void brokerContainersAndPopRecordsAreRefused() throws Exception {
        unsupported("ADD_BROKER", "addBroker", "-n", ns, "-c", broker, "-b", "/nonexistent/broker.conf");
        unsupported("REMOVE_BROKER", "removeBroker", "-n", ns, "-c", broker, "-b", CLUSTER + ":" + BROKER + ":0");
        // exportPopRecord prints the broker's answer without a stack trace.
        Mqadmin.Result pop = Mqadmin.run("exportPopRecord", "-n", ns, "-b", broker, "-d", "true");
        assertTrue(pop.output.contains("(POP_ROLLBACK) not supported by Ferrocket"), pop::toString);
    }

    @Test
    void liteAdminCommands() throws Exception {
        String lite = server.createTopic(Names.unique("AdminLite"), 2, List.of(),
            List.of("--attributes", "+message.type=LITE"));
        String liteGroup = Names.unique("AdminLiteCG");
        DefaultMQProducer producer = clients.configure(new DefaultMQProducer(Names.unique("AdminLitePG")));
        producer.start();
        try {
            MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
            SubscriptionGroupConfig config = new SubscriptionGroupConfig();
            config.setGroupName(liteGroup);
            config.setLiteBindTopic(lite);
            api.createSubscriptionGroup(broker, config, 5_000);
            // What Apache's proxy sends when client C1 subscribes lite topic L1.
            RemotingCommand ctl = RemotingCommand.createRequestCommand(200071, null);
            ctl.setBody(("{\"subscriptionSet\":[{\"action\":\"PARTIAL_ADD\",\"clientId\":\"C1\",\"group\":\""
                + liteGroup + "\",\"topic\":\"" + lite + "\",\"liteTopicSet\":[\"L1\"],\"version\":0}]}")
                .getBytes(StandardCharsets.UTF_8));
            assertEquals(0, api.getRemotingClient().invokeSync(broker, ctl, 5_000).getCode());
        } finally {
            producer.shutdown();
        }
        works(printing("#SubscriptionCount", lite, liteGroup), "getBrokerLiteInfo", "-n", ns, "-b", broker, "-d");
        works(printing("Parent Topic Info", BROKER, liteGroup), "getParentTopicInfo", "-n", ns, "-p", lite);
        works(printing("#MinOffset", BROKER, "C1"), "getLiteTopicInfo", "-n", ns, "-p", lite, "-l", "L1", "-s");
        works(printing("Lite Topics: [L1]"),
            "getLiteClientInfo", "-n", ns, "-p", lite, "-g", liteGroup, "-c", "C1", "-s");
        works(printing("Lite Group Info", "Total Lag Count"), "getLiteGroupInfo", "-n", ns, "-p", lite, "-g", liteGroup);
        works(printing("dispatched"), "triggerLiteDispatch", "-n", ns, "-p", lite, "-g", liteGroup);
        // A group without liteBindTopic is no lite group: the broker's
        // refusal prints as "[broker-a] error.", as with Java's broker.
        Mqadmin.Result plain = Mqadmin.run("getLiteGroupInfo", "-n", ns, "-p", lite, "-g", consumerGroup);
        assertTrue(plain.output.contains(BROKER) && plain.output.contains("error"), plain::toString);
        Check.notBroken(plain);
    }

    // ---- messages ----

    @Test
    void sendMessageAndCheckSendRt() throws Exception {
        works(printing("SEND_OK"), "sendMessage", "-n", ns, "-t", topic, "-p", "from mqadmin", "-k", "adminKey",
            "-c", "TagB");
        works(printing("SEND_OK"), "sendMessage", "-n", ns, "-t", topic, "-p", "to queue 1", "-b", BROKER,
            "-i", "1");
        works(printing("Avg RT"), "checkMsgSendRT", "-n", ns, "-t", topic, "-a", "3", "-s", "16");
    }

    @Test
    void sendsToTheBrokerNameTopicWork() throws Exception {
        // brokerTopicEnable (on by default, as in Java) opens the topic.
        Mqadmin.Result status = works(printing("rt=", "topic=" + BROKER + ", brokerName=" + BROKER),
            "sendMsgStatus", "-n", ns, "-b", BROKER, "-s", "16", "-c", "2");
        assertEquals(2, status.output.split("sendStatus=SEND_OK", -1).length - 1, status::toString);
        // clusterRT sends -a messages to each broker's name topic per round,
        // prints a row, and sleeps -i s: stopped after the first row.
        Mqadmin.Result rt = Mqadmin.runUntil(Pattern.compile(BROKER + " .*\\n"), "clusterRT", "-n", ns,
            "-c", CLUSTER, "-a", "3", "-s", "16", "-i", "5");
        Pattern row = Pattern.compile(CLUSTER + " +" + BROKER + " +[0-9.]+ +3 +0 ");
        assertTrue(row.matcher(rt.output).find(), rt::toString);
    }

    @Test
    void messagesAreQueried() throws Exception {
        String uniqueKey = firstSent.getMsgId();
        String queue = Integer.toString(firstSent.getMessageQueue().getQueueId());
        long offset = firstSent.getQueueOffset();
        works(printing(uniqueKey), "queryMsgByKey", "-n", ns, "-t", topic, "-k", "key0");
        works(printing("Topic:               " + topic, "Keys:                [key0]"),
            "queryMsgByUniqueKey", "-n", ns, "-t", topic, "-i", uniqueKey);
        works(printing("OffsetID:            " + firstSent.getOffsetMsgId()),
            "queryMsgById", "-n", ns, "-t", topic, "-i", firstSent.getOffsetMsgId());
        works(printing("Queue Offset:        " + offset, "Keys:                [key0]"),
            "queryMsgByOffset", "-n", ns, "-t", topic, "-b", BROKER, "-i", queue, "-o", Long.toString(offset));
        works(printing("body0"), "printMsg", "-n", ns, "-t", topic, "-d", "true");
        works(printing("MSGID:"), "printMsgByQueue", "-n", ns, "-t", topic, "-a", BROKER, "-i", queue,
            "-p", "true");
        works(printing("Consume ok", "BODY: body"), "consumeMessage", "-n", ns, "-t", topic, "-c", "2");
        works(printing("BODY: body"), "consumeMessage", "-n", ns, "-t", topic, "-b", BROKER, "-i", queue,
            "-o", Long.toString(offset), "-c", "1");
        // No trace data: the trace topic has no message with this key.
        Mqadmin.Result trace = Mqadmin.run("queryMsgTraceById", "-n", ns, "-i", uniqueKey);
        Check.notBroken(trace);
    }

    /** QUERY_CONSUME_QUEUE (321): the first message's entry, and the group's subscription. */
    @Test
    void consumeQueueEntriesAreListed() throws Exception {
        String queue = Integer.toString(firstSent.getMessageQueue().getQueueId());
        String index = Long.toString(firstSent.getQueueOffset());
        long physical = MessageDecoder.decodeMessageId(firstSent.getOffsetMsgId()).getOffset();
        works(printing("Subscription data: ", "subString", "Filter data: ", "Queue data: \nmax: ",
                "idx: " + index + "\n", Long.toString(physical)),
            "queryCq", "-n", ns, "-t", topic, "-q", queue, "-i", index, "-c", "1", "-g", consumerGroup);
    }

    // ---- producers and consumers ----

    @Test
    void producersAreListed() throws Exception {
        works(printing("0001  ", "JAVA"), "producerConnection", "-n", ns, "-g", producerGroup, "-t", topic);
        works(printing("producer group (" + producerGroup + ") instance : clientId="),
            "producer", "-n", ns, "-b", broker);
        refused(1, printing("the producer group[NoSuchPG] not exist"),
            "producerConnection", "-n", ns, "-g", "NoSuchPG", "-t", topic);
    }

    @Test
    void consumersAreListed() throws Exception {
        works(printing("#ClientId", "JAVA", topic, "MessageModel: CLUSTERING"),
            "consumerConnection", "-n", ns, "-g", consumerGroup);
        Mqadmin.Result progress = works(printing("#Diff Total"), "consumerProgress", "-n", ns);
        assertTrue(Mqadmin.lines(progress.output, consumerGroup).get(0).contains("CLUSTERING"),
            progress::toString);
        works(printing(topic, BROKER, "Consume TPS:"), "consumerProgress", "-n", ns, "-g", consumerGroup);
        works(printing("#ConsumerRunningInfoFile", "Rebalance OK"), "consumerStatus", "-n", ns, "-g", consumerGroup);
    }

    @Test
    void subscriptionGroupIsCreatedShownAndDeleted() throws Exception {
        String group = Names.unique("AdminSubG");
        works(printing("create subscription group to " + broker + " success", "retryMaxTimes=3"),
            "updateSubGroup", "-n", ns, "-c", CLUSTER, "-g", group, "-r", "3");
        works(printing("retryMaxTimes                           =  3"), "getConsumerConfig", "-n", ns, "-g", group);
        works(printing("set consume mode to " + broker + " success", "consume mode[POP]"),
            "setConsumeMode", "-n", ns, "-c", CLUSTER, "-t", topic, "-g", group, "-m", "POP", "-q", "2");
        works(printing("delete subscription group [" + group + "] from broker [" + broker + "]"),
            "deleteSubGroup", "-n", ns, "-c", CLUSTER, "-g", group, "-r", "true");
    }

    @Test
    void subscriptionGroupListFileCreatesEachGroup(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        String first = Names.unique("AdminListG");
        Path file = dir.resolve("groups.json");
        Files.writeString(file, "[{\"groupName\":\"" + first + "\",\"retryMaxTimes\":5}]", StandardCharsets.UTF_8);
        works(printing("submit batch of group config to " + broker + " success"),
            "updateSubGroupList", "-n", ns, "-b", broker, "-f", file.toString());
        works(printing("retryMaxTimes                           =  5"), "getConsumerConfig", "-n", ns, "-g", first);
    }

    @Test
    void offsetsAreResetSkippedAndCloned() throws Exception {
        works(printing("#offset", BROKER), "resetOffsetByTime", "-n", ns, "-g", consumerGroup, "-t", topic,
            "-s", "now");
        String queue = Integer.toString(firstSent.getMessageQueue().getQueueId());
        works(printing("reset consumer offset to 0"), "resetOffsetByTime", "-n", ns, "-g", consumerGroup,
            "-t", topic, "-s", "0", "-b", BROKER, "-q", queue, "-o", "0");
        works(printing("#offset", BROKER), "skipAccumulatedMessage", "-n", ns, "-g", consumerGroup,
            "-t", topic);
        String clone = Names.unique("AdminCloneG");
        works(printing("clone group offset success"), "cloneGroupOffset", "-n", ns, "-s", consumerGroup,
            "-d", clone, "-t", topic);
    }
}

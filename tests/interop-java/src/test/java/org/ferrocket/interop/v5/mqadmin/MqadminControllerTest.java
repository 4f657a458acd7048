package org.ferrocket.interop.v5.mqadmin;

import static org.ferrocket.interop.v5.mqadmin.Check.printing;
import static org.ferrocket.interop.v5.mqadmin.Check.refused;
import static org.ferrocket.interop.v5.mqadmin.Check.works;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * mqadmin's controller commands (rocketmq-tools 5.5.0, unchanged) against
 * a `ferrocket controller` and two controller-mode brokers of one set:
 * getSyncStateSet, getBrokerEpoch, getControllerMetaData,
 * getControllerConfig, updateControllerConfig, electMaster and
 * cleanBrokerMetadata, and haStatus of a master with a slave. The election
 * runs last: it moves the master.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MqadminControllerTest {
    static final String CLUSTER = "DefaultCluster";
    static final Pattern MASTER_ID = Pattern.compile("#MasterBrokerId\\t(\\d+)");

    static ControllerCluster cluster;
    static String ns;
    static String controller;

    @BeforeAll
    static void start() throws Exception {
        cluster = ControllerCluster.start();
        ns = cluster.namesrvAddr;
        controller = cluster.controllerAddr;
        Mqadmin.Result inSync = Check.until(Duration.ofSeconds(60),
            out -> out.contains("#SyncStateSetNums\t2"),
            "getSyncStateSet", "-n", ns, "-a", controller, "-b", ControllerCluster.SET);
        assertTrue(inSync.output.contains("#SyncStateSetNums\t2"),
            () -> "the slave never joined the in-sync set: " + inSync + "\n" + cluster.logTail());
    }

    @AfterAll
    static void stop() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    @Order(1)
    void syncStateSetAndEpochs() throws Exception {
        works(printing("#brokerName\t" + ControllerCluster.SET, "#MasterAddr\t", "InSyncReplica:"),
            "getSyncStateSet", "-n", ns, "-a", controller, "-c", CLUSTER);
        Mqadmin.Result epochs = works(printing("#Epoch: EpochEntry{epoch=1, startOffset=0"),
            "getBrokerEpoch", "-n", ns, "-b", ControllerCluster.SET);
        for (String addr : cluster.brokerAddrs) {
            assertTrue(epochs.output.contains("#brokerAddr\t" + addr), epochs::toString);
        }
        works(printing("#MasterAddr\t", "#SlaveNum\t1", "#InSyncSlaveNum\t1"),
            "haStatus", "-n", ns, "-c", CLUSTER);
    }

    @Test
    @Order(2)
    void controllerMetadataAndConfig() throws Exception {
        works(printing("#ControllerGroup\tDefaultControllerGroup", "#ControllerLeaderAddress\t" + controller),
            "getControllerMetaData", "-n", ns, "-a", controller);
        works(printing("notifyBrokerRoleChanged", "enableElectUncleanMaster"),
            "getControllerConfig", "-n", ns, "-a", controller);
        works(printing("update controller config success", "electMasterMaxRetryCount : 4"),
            "updateControllerConfig", "-n", ns, "-a", controller, "-k", "electMasterMaxRetryCount", "-v", "4");
        works(printing("electMasterMaxRetryCount                          =  4"),
            "getControllerConfig", "-n", ns, "-a", controller);
        refused(29, printing("`jRaftElectionTimeoutMs` is read at start and cannot change while the controller runs"),
            "updateControllerConfig", "-n", ns, "-a", controller, "-k", "jRaftElectionTimeoutMs", "-v", "10");
    }

    @Test
    @Order(3)
    void electMasterMovesTheMaster() throws Exception {
        Mqadmin.Result before = works(printing("#MasterBrokerId"),
            "getSyncStateSet", "-n", ns, "-a", controller, "-b", ControllerCluster.SET);
        Matcher id = MASTER_ID.matcher(before.output);
        assertTrue(id.find(), before::toString);
        String other = id.group(1).equals("1") ? "2" : "1";
        works(printing("#BrokerName\t" + ControllerCluster.SET, "#MasterEpoch\t2"),
            "electMaster", "-n", ns, "-a", controller, "-b", other, "-bn", ControllerCluster.SET, "-c", CLUSTER);
        works(printing("#MasterBrokerId\t" + other),
            "getSyncStateSet", "-n", ns, "-a", controller, "-b", ControllerCluster.SET);
    }

    @Test
    @Order(4)
    void cleanBrokerMetadataOfALiveSetIsRefused() throws Exception {
        // Broker 1 is alive: Java's controller refuses too (2009) unless -l.
        refused(2009, printing(ControllerCluster.SET), "cleanBrokerMetadata", "-n", ns, "-a", controller,
            "-bn", ControllerCluster.SET, "-c", CLUSTER, "-b", "1");
    }
}

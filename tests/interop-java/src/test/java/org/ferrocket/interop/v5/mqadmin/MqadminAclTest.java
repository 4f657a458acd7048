package org.ferrocket.interop.v5.mqadmin;

import static org.ferrocket.interop.v5.mqadmin.Check.printing;
import static org.ferrocket.interop.v5.mqadmin.Check.refused;
import static org.ferrocket.interop.v5.mqadmin.Check.works;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.remoting.RPCHook;
import org.ferrocket.interop.BrokerSettings;
import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.ferrocket.interop.Names;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * mqadmin's ACL 2.0 commands (createUser ... copyAcl) against a broker
 * with authentication and authorization on, signed as the super user the
 * broker makes at start (mqadmin's {@code main0(args, rpcHook)}, what its
 * tools.yml credentials give it); unsigned, the same commands are refused.
 */
@ExtendWith(FerrocketExtension.class)
@BrokerSettings({
    "authenticationEnabled=true",
    "authorizationEnabled=true",
    "initAuthenticationUser={\"username\":\"rocketmq\",\"password\":\"12345678\"}",
})
class MqadminAclTest {
    static final RPCHook ADMIN = new AclClientRPCHook(new SessionCredentials("rocketmq", "12345678"));

    @Test
    void usersAndAclsAreManaged(Ferrocket server) throws Exception {
        String ns = server.namesrvAddr();
        String broker = server.brokerAddr();
        String user = Names.unique("alice").replace("-", "");
        works(ADMIN, printing("create user to " + broker + " success"),
            "createUser", "-n", ns, "-b", broker, "-u", user, "-p", "secret1", "-t", "Normal");
        works(ADMIN, printing(user, "Normal"), "getUser", "-n", ns, "-b", broker, "-u", user);
        works(ADMIN, printing(user, "rocketmq"), "listUser", "-n", ns, "-b", broker);
        works(ADMIN, printing("update user to " + broker + " success"),
            "updateUser", "-n", ns, "-b", broker, "-u", user, "-p", "secret2");
        String subject = "User:" + user;
        works(ADMIN, printing("create acl to " + broker + " success"),
            "createAcl", "-n", ns, "-b", broker, "-s", subject, "-r", "Topic:orders", "-a", "Pub", "-d", "Allow");
        works(ADMIN, printing(subject, "Topic:orders", "Pub"), "getAcl", "-n", ns, "-b", broker, "-s", subject);
        works(ADMIN, printing(subject), "listAcl", "-n", ns, "-b", broker);
        works(ADMIN, printing("update acl to " + broker + " success"),
            "updateAcl", "-n", ns, "-b", broker, "-s", subject, "-r", "Topic:orders", "-a", "Pub,Sub",
            "-d", "Allow");
        works(ADMIN, printing("copy user of " + user),
            "copyUser", "-n", ns, "-f", broker, "-t", broker, "-u", user);
        works(ADMIN, printing("copy acl of " + subject),
            "copyAcl", "-n", ns, "-f", broker, "-t", broker, "-s", subject);
        works(ADMIN, printing("delete acl to " + broker + " success"),
            "deleteAcl", "-n", ns, "-b", broker, "-s", subject, "-r", "Topic:orders");
        works(ADMIN, printing("delete user to " + broker + " success"),
            "deleteUser", "-n", ns, "-b", broker, "-u", user);
    }

    @Test
    void unsignedAdminIsRefused(Ferrocket server) throws Exception {
        refused(16, printing("username cannot be null"),
            "listUser", "-n", server.namesrvAddr(), "-b", server.brokerAddr());
    }
}

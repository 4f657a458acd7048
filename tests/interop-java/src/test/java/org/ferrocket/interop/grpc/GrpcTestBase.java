package org.ferrocket.interop.grpc;

import org.ferrocket.interop.Ferrocket;
import org.ferrocket.interop.FerrocketExtension;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A test class's servers: one `ferrocket start` (its broker port also
 * serves gRPC) from {@link FerrocketExtension}, and a `ferrocket proxy` in
 * front of its name server, started here. Tests take an {@link Endpoint}
 * and run against both.
 */
@ExtendWith(FerrocketExtension.class)

abstract class GrpcTestBase {
    private static FerrocketProxy proxy;

    @BeforeAll
    static void startProxy(Ferrocket server) throws Exception {
        proxy = FerrocketProxy.start(server);
    }

    @AfterAll
    static void stopProxy() {
        if (proxy != null) {
            proxy.close();
            proxy = null;
        }
    }

    static String address(Endpoint endpoint, Ferrocket server) {
        return endpoint == Endpoint.BROKER ? server.brokerAddr() : proxy.address();
    }

    /** The proxy's log, for failure messages. */
    static String proxyLog() {
        return proxy == null ? "" : proxy.logText();
    }
}

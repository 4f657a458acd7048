package org.ferrocket.interop.grpc;

/** Where a v5 client connects: the broker's own port, or `ferrocket proxy`. */
enum Endpoint {
    /** The broker's port (`enableProxy=true`, which `ferrocket start` sets; `proxyMode=local`). */
    BROKER,
    /** A separate `ferrocket proxy` process reaching the broker over Remoting. */
    PROXY
}

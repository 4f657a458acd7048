package org.ferrocket.interop;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.jupiter.api.extension.TestWatcher;

/**
 * One {@link Ferrocket} per test class: started before the class's first
 * test (with the class's {@link BrokerSettings}), stopped and its data
 * deleted when the class is done, whatever happened. Tests and lifecycle
 * methods get it as a parameter. A failing test prints the server's log tail.
 */
public final class FerrocketExtension implements BeforeAllCallback, ParameterResolver, TestWatcher {
    private static final ExtensionContext.Namespace NAMESPACE =
        ExtensionContext.Namespace.create(FerrocketExtension.class);
    private static final String KEY = "server";

    /** Closes the server when the class's store is closed. */
    private static final class Resource implements ExtensionContext.Store.CloseableResource {
        final Ferrocket server;

        Resource(Ferrocket server) {
            this.server = server;
        }

        @Override
        public void close() {
            server.close();
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        Class<?> testClass = context.getRequiredTestClass();
        BrokerSettings settings = testClass.getAnnotation(BrokerSettings.class);
        List<String> extra = new ArrayList<>(settings == null ? List.of() : List.of(settings.value()));
        extra.addAll(preparedSettings(testClass));
        Ferrocket server = Ferrocket.start(testClass.getSimpleName(), extra);
        context.getStore(NAMESPACE).put(KEY, new Resource(server));
    }

    /**
     * Settings a test class computes before its server starts (files it
     * writes first, e.g. an ACL home): its `static List<String>
     * brokerSettings()`, when it has one.
     */
    @SuppressWarnings("unchecked")
    private static List<String> preparedSettings(Class<?> testClass) throws Exception {
        Method method;
        try {
            method = testClass.getDeclaredMethod("brokerSettings");
        } catch (NoSuchMethodException none) {
            return List.of();
        }
        method.setAccessible(true);
        return (List<String>) method.invoke(null);
    }

    private static Ferrocket server(ExtensionContext context) {
        Resource resource = context.getStore(NAMESPACE).get(KEY, Resource.class);
        if (resource == null) {
            throw new IllegalStateException("no ferrocket started for " + context.getDisplayName());
        }
        return resource.server;
    }

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return parameter.getParameter().getType() == Ferrocket.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        return server(context);
    }

    @Override
    public void testFailed(ExtensionContext context, Throwable cause) {
        Resource resource = context.getStore(NAMESPACE).get(KEY, Resource.class);
        if (resource == null) {
            return;
        }
        System.err.println("==== " + context.getDisplayName() + " failed: " + cause);
        System.err.println("==== " + resource.server + ", log tail:");
        System.err.println(resource.server.logTail());
        System.err.println("==== end of log tail");
    }

    @Override
    public void testDisabled(ExtensionContext context, Optional<String> reason) {
        // nothing to do
    }
}

/*
 * In-process Neo4j Community DBMS for the Python test-suite.
 *
 * Run as a single-file source program (no build step):
 *
 *   java <jvm flags> -cp "<deps>/*" Launcher.java --port P --home DIR
 *
 * where <deps> is filled by `mvn dependency:copy-dependencies` on the pom.xml
 * next to this file (see memory_core_dev/neo4j_server.py, which also holds the
 * JVM flags).
 *
 * Behaviour:
 *   - starts a DBMS whose home (data/, logs/) is DIR; data persists across
 *     runs with the same DIR;
 *   - Bolt only, on 127.0.0.1:P, no TLS; HTTP/HTTPS off; no auth, unless the
 *     environment variable NEO4J_TEST_PASSWORD is set: then auth is on and the user
 *     neo4j has that password (set at start-up, never printed; an environment
 *     variable, not an argument, so that it stays out of process listings);
 *   - prints "NEO4J_CONFIG <setting>=<value>" lines with the effective values
 *     of the safety-relevant settings, then exactly one line
 *     "NEO4J_READY bolt://127.0.0.1:P" once the default database is available;
 *   - then blocks until stdin reaches EOF (the parent closed the pipe or died)
 *     or a shutdown hook fires (SIGTERM/SIGINT), and shuts the DBMS down
 *     cleanly.
 *
 * Outbound traffic audit (Neo4j 5.26.30 jars, done with `unzip -l`, `javap -c`
 * and a scan of every class in the neo4j-*.jar files for
 * java/net/http/HttpClient, URL.openConnection, DatagramSocket,
 * MulticastSocket and http(s):// literals, plus a dump of every registered
 * SettingsDeclaration):
 *   - neo4j-udc (UserDataCollector) is the only component that opens an
 *     outbound connection on its own: an HTTP POST to udc.neo4j.com. It is
 *     gated by dbms.usage_report.enabled (GraphDatabaseSettings.udc_enabled,
 *     default true) and, independently, by
 *     internal.dbms.usage_report.udc_network_enabled (default true). Both are
 *     set to false below.
 *   - client.allow_telemetry (ServerSettings, default true) only tells Neo4j
 *     Browser whether it may send telemetry; the HTTP server is off anyway,
 *     but it is set to false as well.
 *   - server.bolt.telemetry.enabled only accepts TELEMETRY messages from
 *     drivers (nothing leaves the machine); kept at its default, false.
 *   - internal.dbms.routing.client_provided_router_enabled (would route to
 *     *.endpoints.neo4j.io) is false by default and forced false.
 *   - dbms.routing.enabled (server-side routing) would open an extra listener
 *     on server.routing.listen_address (:7688); set to false so that Bolt on
 *     127.0.0.1:P is the only listener.
 *   - There is no LAN discovery / multicast / cluster discovery in Community
 *     (no DatagramSocket/MulticastSocket use in the neo4j jars), and no fleet
 *     management / cloud agent: neo4j-cloud only contains a storage-path
 *     abstraction with no provider registered.
 *   - WebURLAccessRule (URL.openConnection) is only used by LOAD CSV FROM
 *     'http(s)://...' queries, i.e. only if a test asks for it.
 *   - Everything binds to 127.0.0.1: server.default_listen_address and the
 *     Bolt listen/advertised addresses are set explicitly.
 */

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import org.neo4j.configuration.Config;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.graphdb.config.Setting;
import org.neo4j.io.ByteUnit;
import org.neo4j.kernel.internal.GraphDatabaseAPI;
import org.neo4j.server.configuration.ServerSettings;

public final class Launcher {

    private static final String HOST = "127.0.0.1";
    private static final Duration DB_AVAILABLE_TIMEOUT = Duration.ofMinutes(5);

    private static final Object LOCK = new Object();
    private static DatabaseManagementService dbms;
    private static boolean stopped;

    public static void main(String[] args) throws Exception {
        int port = -1;
        Path home = null;
        long pageCacheMib = 64;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if ("--port".equals(a) && i + 1 < args.length) {
                port = Integer.parseInt(args[++i]);
            } else if ("--home".equals(a) && i + 1 < args.length) {
                home = Path.of(args[++i]).toAbsolutePath();
            } else if ("--pagecache-mib".equals(a) && i + 1 < args.length) {
                pageCacheMib = Long.parseLong(args[++i]);
            } else {
                usage("unknown or incomplete argument: " + a);
            }
        }
        if (port <= 0 || port > 65535) {
            usage("--port must be in 1..65535");
        }
        if (home == null) {
            usage("--home is required");
        }

        PrintStream out = System.out;
        Runtime.getRuntime().addShutdownHook(new Thread(Launcher::stopOnce, "neo4j-test-server-shutdown"));

        String password = System.getenv("NEO4J_TEST_PASSWORD");
        Map<Setting<?>, Object> cfg = settings(port, pageCacheMib, password != null);
        DatabaseManagementService service;
        try {
            service = new DatabaseManagementServiceBuilder(home).setConfig(cfg).build();
        } catch (Throwable t) {
            System.err.println("NEO4J_FAILED could not start the DBMS: " + t);
            t.printStackTrace();
            System.exit(1);
            return;
        }
        synchronized (LOCK) {
            if (stopped) {
                // A shutdown hook ran while we were starting: undo the start.
                service.shutdown();
                return;
            }
            dbms = service;
        }

        String dbName = GraphDatabaseSettings.DEFAULT_DATABASE_NAME;
        GraphDatabaseService db = service.database(dbName);
        long deadline = System.nanoTime() + DB_AVAILABLE_TIMEOUT.toNanos();
        while (!db.isAvailable(1000)) {
            if (System.nanoTime() > deadline) {
                System.err.println("NEO4J_FAILED database '" + dbName + "' not available after "
                        + DB_AVAILABLE_TIMEOUT.toSeconds() + " s");
                stopOnce();
                System.exit(1);
                return;
            }
        }

        if (password != null) {
            // The initial user's password; an embedded DBMS runs this with full rights.
            service.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME).executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
                    Map.of("password", password));
        }

        // Report the effective values, so that a reader of the log (or a
        // test) can confirm that the safety settings took effect.
        Config effective = ((GraphDatabaseAPI) db).getDependencyResolver().resolveDependency(Config.class);
        for (Setting<?> s : cfg.keySet()) {
            out.println("NEO4J_CONFIG " + s.name() + "=" + effective.get(s));
        }
        out.println("NEO4J_READY bolt://" + HOST + ":" + port);
        out.flush();

        waitForStdinEof();
        stopOnce();
        System.exit(0);
    }

    private static Map<Setting<?>, Object> settings(int port, long pageCacheMib, boolean auth) {
        SocketAddress bolt = new SocketAddress(HOST, port);
        Map<Setting<?>, Object> cfg = new LinkedHashMap<>();

        // --- network: Bolt on loopback only, nothing else ---
        cfg.put(GraphDatabaseSettings.default_listen_address, new SocketAddress(HOST));
        cfg.put(GraphDatabaseSettings.default_advertised_address, new SocketAddress(HOST));
        cfg.put(BoltConnector.enabled, true);
        cfg.put(BoltConnector.listen_address, bolt);
        cfg.put(BoltConnector.advertised_address, bolt);
        cfg.put(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED);
        cfg.put(HttpConnector.enabled, false);
        cfg.put(HttpsConnector.enabled, false);
        cfg.put(GraphDatabaseSettings.routing_enabled, false);
        cfg.put(GraphDatabaseSettings.routing_listen_address, new SocketAddress(HOST, 0));
        cfg.put(GraphDatabaseSettings.auth_enabled, auth);

        // --- nothing may phone home (see the audit in the header) ---
        cfg.put(GraphDatabaseSettings.udc_enabled, false);
        cfg.put(GraphDatabaseInternalSettings.udc_network_enabled, false);
        cfg.put(ServerSettings.allow_telemetry, false);
        cfg.put(BoltConnector.server_bolt_telemetry_enabled, false);
        cfg.put(GraphDatabaseInternalSettings.client_provided_router_enabled, false);

        // --- small footprint (the page cache: 64 MiB unless --pagecache-mib says) ---
        cfg.put(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMib));
        cfg.put(GraphDatabaseSettings.preallocate_logical_logs, false);
        cfg.put(GraphDatabaseSettings.preallocate_store_files, false);
        cfg.put(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(16));
        cfg.put(GraphDatabaseSettings.keep_logical_logs, "2 files");
        cfg.put(GraphDatabaseSettings.filewatcher_enabled, false);
        // Neo4j's own default (400): with fewer threads than the drivers' pools hold
        // connections (100 per driver), a loaded server answers NoThreadsAvailable.
        cfg.put(BoltConnector.thread_pool_max_size, 400);

        // --- fast shutdown: Netty's default graceful shutdown waits a 5 s
        // quiet period per event-loop group (about 10 s in total) ---
        cfg.put(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0);
        cfg.put(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(5));
        return cfg;
    }

    private static void waitForStdinEof() {
        InputStream in = System.in;
        byte[] buf = new byte[256];
        try {
            while (in.read(buf) >= 0) {
                // Input is ignored; only EOF matters.
            }
        } catch (IOException e) {
            // A broken stdin is treated like EOF.
        }
    }

    private static void stopOnce() {
        synchronized (LOCK) {
            if (stopped) {
                return;
            }
            stopped = true;
            if (dbms != null) {
                try {
                    dbms.shutdown();
                    System.out.println("NEO4J_STOPPED");
                    System.out.flush();
                } catch (Throwable t) {
                    System.err.println("NEO4J_SHUTDOWN_ERROR " + t);
                    t.printStackTrace();
                }
            }
        }
    }

    private static void usage(String message) {
        System.err.println("Launcher: " + message);
        System.err.println("usage: java -cp \"<deps>/*\" Launcher.java --port P --home DIR [--pagecache-mib N]");
        System.exit(2);
    }
}

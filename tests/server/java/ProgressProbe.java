// pgjdbc reads Heron's progress NOTICEs while an AI statement runs: Statement.getWarnings()
// polled from another thread shows them before the statement ends; then a second connection
// cancels the statement with pg_cancel_backend. Arguments: host port statement. Prints one
// "key: value" line per observation (tests/server/test_progress.py checks them).
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLWarning;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicReference;
import org.postgresql.PGConnection;

public class ProgressProbe {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/heron?user=heron";
        try (Connection running = DriverManager.getConnection(url);
             Connection steering = DriverManager.getConnection(url)) {
            Statement statement = running.createStatement();
            statement.execute("SET heron.progress_interval = '200ms'");
            statement.execute("SET heron.reuse_answers = off");
            AtomicReference<String> outcome = new AtomicReference<>("running");
            Thread thread = new Thread(() -> {
                try (ResultSet rows = statement.executeQuery(args[2])) {
                    outcome.set("finished");
                } catch (SQLException e) {
                    outcome.set(e.getSQLState());
                }
            });
            thread.start();
            long deadline = System.currentTimeMillis() + 60_000;
            SQLWarning warning = null;
            while (thread.isAlive() && System.currentTimeMillis() < deadline) {
                warning = statement.getWarnings();
                if (warning != null) {
                    break;
                }
                Thread.sleep(20);
            }
            System.out.println("warning while running: " + (warning != null && thread.isAlive()));
            System.out.println("warning: " + (warning == null ? "none" : warning.getMessage()));
            int pid = ((PGConnection) running).getBackendPID();
            try (ResultSet cancelled = steering.createStatement().executeQuery(
                    "SELECT pg_cancel_backend(" + pid + ")")) {
                cancelled.next();
                System.out.println("cancel sent: " + cancelled.getBoolean(1));
            }
            thread.join(60_000);
            System.out.println("statement: " + outcome.get());
        }
    }
}

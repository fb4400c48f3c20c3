// The pgjdbc side of the differential suite: one line per observation, the same program
// against Heron and PostgreSQL 15 (tests/oracle/test_wire_jdbc.py compiles and runs it).
import java.io.StringReader;
import java.io.StringWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.Properties;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

public class WireProbe {
    static void out(String line) {
        System.out.println(line);
    }

    static String rows(ResultSet rs) throws SQLException {
        StringBuilder text = new StringBuilder();
        ResultSetMetaData meta = rs.getMetaData();
        while (rs.next()) {
            text.append("(");
            for (int i = 1; i <= meta.getColumnCount(); i++) {
                text.append(i > 1 ? "," : "").append(rs.getString(i));
            }
            text.append(")");
        }
        return text.toString();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.setProperty("user", "heron");
        props.setProperty("connectTimeout", "10");
        props.setProperty("socketTimeout", "60");
        String url = "jdbc:postgresql://" + args[0] + ":" + args[1] + "/heron";
        try (Connection conn = DriverManager.getConnection(url, props)) {
            try (Statement st = conn.createStatement()) {
                st.execute("DROP TABLE IF EXISTS j_items");
                st.execute("CREATE TABLE j_items (id integer PRIMARY KEY, name text, price numeric(8,2))");
            }
            // Prepared statements, past pgjdbc's prepareThreshold (server-side statements).
            try (PreparedStatement ps = conn.prepareStatement("SELECT ? + 1 AS n, ? || 'x' AS s")) {
                for (int i = 0; i < 7; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "v" + i);
                    try (ResultSet rs = ps.executeQuery()) {
                        out("prepared " + rows(rs));
                    }
                }
            }
            // Batches and savepoints in a transaction.
            conn.setAutoCommit(false);
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO j_items VALUES (?, ?, ?)")) {
                for (int i = 1; i <= 5; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "item " + i);
                    ps.setBigDecimal(3, new java.math.BigDecimal(i + ".25"));
                    ps.addBatch();
                }
                out("batch " + java.util.Arrays.toString(ps.executeBatch()));
            }
            conn.commit();
            try (PreparedStatement ps = conn.prepareStatement("INSERT INTO j_items VALUES (?, ?, ?)")) {
                for (int i : new int[] {7, 8, 3, 9}) {  // 3 is taken: the batch fails there
                    ps.setInt(1, i);
                    ps.setString(2, "batch " + i);
                    ps.setBigDecimal(3, java.math.BigDecimal.ONE);
                    ps.addBatch();
                }
                ps.executeBatch();
                out("failing batch inserted");
            } catch (java.sql.BatchUpdateException e) {
                out("failing batch " + e.getSQLState() + " " + java.util.Arrays.toString(e.getUpdateCounts()));
            }
            conn.rollback();
            Savepoint before = conn.setSavepoint("before_duplicate");
            try (Statement st = conn.createStatement()) {
                st.execute("INSERT INTO j_items VALUES (1, 'duplicate', 0)");
                out("duplicate inserted");
            } catch (SQLException e) {
                out("duplicate " + e.getSQLState());
                conn.rollback(before);
            }
            try (Statement st = conn.createStatement()) {
                st.execute("INSERT INTO j_items VALUES (6, 'six', 6.5)");
            }
            conn.commit();
            // A result read in pieces: fetch size uses portals suspended by Execute's row limit.
            try (Statement st = conn.createStatement()) {
                st.setFetchSize(10);
                try (ResultSet rs = st.executeQuery("SELECT i FROM generate_series(1, 95) AS t(i)")) {
                    long sum = 0;
                    int count = 0;
                    while (rs.next()) {
                        sum += rs.getLong(1);
                        count++;
                    }
                    out("fetched " + count + " rows, sum " + sum);
                }
            }
            conn.commit();
            conn.setAutoCommit(true);
            // COPY through CopyManager, both ways.
            CopyManager copy = ((PGConnection) conn.unwrap(PGConnection.class)).getCopyAPI();
            long copied = copy.copyIn("COPY j_items FROM STDIN WITH (FORMAT csv)",
                    new StringReader("10,ten,10.00\n11,\"el, even\",\n"));
            out("copy in " + copied);
            StringWriter written = new StringWriter();
            long sent = copy.copyOut("COPY (SELECT * FROM j_items ORDER BY id) TO STDOUT", written);
            out("copy out " + sent + " " + written.toString().replace("\n", "|").replace("\t", ","));
            // Result metadata and an error's SQLSTATE.
            try (Statement st = conn.createStatement();
                 ResultSet rs = st.executeQuery("SELECT id, name, price, true AS b, 1.5::float8 AS f FROM j_items LIMIT 1")) {
                ResultSetMetaData meta = rs.getMetaData();
                StringBuilder types = new StringBuilder("types");
                for (int i = 1; i <= meta.getColumnCount(); i++) {
                    types.append(" ").append(meta.getColumnLabel(i)).append(":").append(meta.getColumnTypeName(i));
                }
                out(types.toString());
            }
            try (Statement st = conn.createStatement()) {
                st.executeQuery("SELECT 1/0");
            } catch (SQLException e) {
                out("division " + e.getSQLState());
            }
        }
    }
}

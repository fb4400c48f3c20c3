import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ParameterMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * pgjdbc's DatabaseMetaData (and the metadata of a result and of parameters) as text, one
 * feature at a time: "== name" then one line per row ("COLUMN=value|..."), or "ERROR sqlstate
 * message". Usage: java JdbcProbe jdbc:postgresql://host:port/db [feature ...]
 */
public class JdbcProbe {
    interface Feature { List<String> run(Connection c) throws SQLException; }

    static List<String> rows(ResultSet rs) throws SQLException {
        List<String> out = new ArrayList<>();
        try (rs) {
            ResultSetMetaData md = rs.getMetaData();
            while (rs.next()) {
                StringBuilder line = new StringBuilder();
                for (int i = 1; i <= md.getColumnCount(); i++) {
                    line.append(i > 1 ? "|" : "").append(md.getColumnLabel(i)).append('=')
                        .append(rs.getString(i));
                }
                out.add(line.toString());
            }
        }
        return out;
    }

    static List<String> resultMetadata(Connection c, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (PreparedStatement s = c.prepareStatement(sql); ResultSet rs = s.executeQuery()) {
            ResultSetMetaData md = rs.getMetaData();
            for (int i = 1; i <= md.getColumnCount(); i++) {
                out.add(md.getColumnName(i) + "|type=" + md.getColumnType(i) + "|typeName="
                        + md.getColumnTypeName(i) + "|class=" + md.getColumnClassName(i)
                        + "|precision=" + md.getPrecision(i) + "|scale=" + md.getScale(i)
                        + "|displaySize=" + md.getColumnDisplaySize(i) + "|nullable="
                        + md.isNullable(i) + "|autoIncrement=" + md.isAutoIncrement(i)
                        + "|table=" + md.getTableName(i) + "|schema=" + md.getSchemaName(i)
                        + "|baseColumn=" + md.getColumnName(i));
            }
        }
        return out;
    }

    static Map<String, Feature> features() {
        Map<String, Feature> f = new LinkedHashMap<>();
        f.put("getTables", c -> rows(c.getMetaData().getTables(null, "public", "%",
                new String[] {"TABLE", "VIEW"})));
        f.put("getTablesAllTypes", c -> rows(c.getMetaData().getTables(null, null, "cat_%", null)));
        f.put("getColumns", c -> rows(c.getMetaData().getColumns(null, "public", "cat_books", "%")));
        f.put("getColumnsOfView", c -> rows(c.getMetaData().getColumns(null, "public",
                "cat_cheap_books", null)));
        f.put("getPrimaryKeys", c -> rows(c.getMetaData().getPrimaryKeys(null, "public", "cat_books")));
        f.put("getImportedKeys", c -> rows(c.getMetaData().getImportedKeys(null, "public",
                "cat_books")));
        f.put("getExportedKeys", c -> rows(c.getMetaData().getExportedKeys(null, "public",
                "cat_authors")));
        f.put("getCrossReference", c -> rows(c.getMetaData().getCrossReference(null, "public",
                "cat_authors", null, "public", "cat_books")));
        f.put("getIndexInfo", c -> rows(c.getMetaData().getIndexInfo(null, "public", "cat_books",
                false, true)));
        f.put("getIndexInfoUnique", c -> rows(c.getMetaData().getIndexInfo(null, "public",
                "cat_authors", true, true)));
        f.put("getBestRowIdentifier", c -> rows(c.getMetaData().getBestRowIdentifier(null, "public",
                "cat_books", DatabaseMetaData.bestRowSession, true)));
        f.put("getVersionColumns", c -> rows(c.getMetaData().getVersionColumns(null, "public",
                "cat_books")));
        f.put("getTypeInfo", c -> rows(c.getMetaData().getTypeInfo()));
        f.put("getSchemas", c -> rows(c.getMetaData().getSchemas()));
        f.put("getSchemasPattern", c -> rows(c.getMetaData().getSchemas(null, "pub%")));
        f.put("getCatalogs", c -> rows(c.getMetaData().getCatalogs()));
        f.put("getTableTypes", c -> rows(c.getMetaData().getTableTypes()));
        f.put("getTablePrivileges", c -> rows(c.getMetaData().getTablePrivileges(null, "public",
                "cat_books")));
        f.put("getColumnPrivileges", c -> rows(c.getMetaData().getColumnPrivileges(null, "public",
                "cat_books", "%")));
        f.put("getFunctions", c -> rows(c.getMetaData().getFunctions(null, "public", "%")));
        f.put("getProcedures", c -> rows(c.getMetaData().getProcedures(null, "public", "%")));
        f.put("getUDTs", c -> rows(c.getMetaData().getUDTs(null, "public", "%", null)));
        f.put("resultSetMetaData", c -> resultMetadata(c, "SELECT * FROM cat_books"));
        f.put("parameterMetaData", c -> {
            List<String> out = new ArrayList<>();
            try (PreparedStatement s = c.prepareStatement(
                    "SELECT title FROM cat_books WHERE id = ? AND published > ?")) {
                ParameterMetaData p = s.getParameterMetaData();
                for (int i = 1; i <= p.getParameterCount(); i++) {
                    out.add(i + "|type=" + p.getParameterType(i) + "|typeName="
                            + p.getParameterTypeName(i));
                }
            }
            return out;
        });
        f.put("product", c -> {
            DatabaseMetaData m = c.getMetaData();
            return List.of("name=" + m.getDatabaseProductName(),
                    "major=" + m.getDatabaseMajorVersion(),
                    "identifierQuote=" + m.getIdentifierQuoteString(),
                    "maxNameLength=" + m.getMaxColumnNameLength(),
                    "searchEscape=" + m.getSearchStringEscape(),
                    "userName=" + m.getUserName(),
                    "isolation=" + c.getTransactionIsolation(),
                    "readOnly=" + c.isReadOnly(),
                    "schema=" + c.getSchema(),
                    "catalog=" + c.getCatalog());
        });
        return f;
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", "heron");
        p.setProperty("connectTimeout", "10");
        p.setProperty("socketTimeout", "60");
        Map<String, Feature> features = features();
        List<String> names = args.length > 1 ? List.of(args).subList(1, args.length)
                : new ArrayList<>(features.keySet());
        try (Connection c = DriverManager.getConnection(args[0], p)) {
            c.setAutoCommit(true);
            for (String name : names) {
                System.out.println("== " + name);
                try {
                    for (String line : features.get(name).run(c)) {
                        System.out.println(line);
                    }
                } catch (SQLException e) {
                    String message = String.valueOf(e.getMessage()).split("\n")[0];
                    System.out.println("ERROR " + e.getSQLState() + " " + message);
                }
            }
        }
    }
}

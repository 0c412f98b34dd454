// One operation of the scale benchmark on Apache Paimon's Java implementation, in a fresh JVM:
//   java -cp <paimon.jar>:<probe.jar> ScaleProbe OP TABLE_PATH ARG OUTPUT
// OP is plan-full, plan-filtered (ARG: the dt value) or expire (ARG: the snapshots to expire).
// The clock covers opening the table by path and the operation; the peak resident memory is
// the process's VmHWM, reset through /proc/self/clear_refs just before the clock starts. One
// JSON object is written to OUTPUT (stdout may carry Paimon's logging).

import java.io.FileWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;

public final class ScaleProbe {
    private ScaleProbe() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            throw new IllegalArgumentException("usage: ScaleProbe OP TABLE_PATH ARG OUTPUT");
        }
        String op = args[0];
        String path = args[1];
        String arg = args[2];
        boolean resettable = resetPeak();
        long baselineKib = resettable ? statusKib("VmRSS") : 0;
        long started = System.nanoTime();
        Map<String, Object> result;
        switch (op) {
            case "plan-full":
                result = plan(open(path).newReadBuilder());
                break;
            case "plan-filtered":
                result = plan(open(path).newReadBuilder().withPartitionFilter(
                        Collections.singletonMap("dt", arg)));
                break;
            case "expire":
                result = expire(open(path), Integer.parseInt(arg));
                break;
            default:
                throw new IllegalArgumentException("unknown operation " + op);
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        long peakKib = statusKib("VmHWM");
        StringBuilder out = new StringBuilder();
        out.append("{\"op\": \"").append(op).append("\", \"seconds\": ").append(seconds);
        out.append(", \"peak_mib\": ").append(Math.max(peakKib - baselineKib, 0) / 1024.0);
        out.append(", \"hwm_mib\": ").append(peakKib / 1024.0);
        out.append(", \"peak_resettable\": ").append(resettable);
        out.append(", \"result\": {");
        String sep = "";
        for (Map.Entry<String, Object> e : result.entrySet()) {
            out.append(sep).append('"').append(e.getKey()).append("\": ").append(e.getValue());
            sep = ", ";
        }
        out.append("}}\n");
        Files.write(Paths.get(args[3]), out.toString().getBytes(StandardCharsets.UTF_8));
    }

    private static FileStoreTable open(String path) {
        return FileStoreTableFactory.create(LocalFileIO.create(), new Path(path));
    }

    private static Map<String, Object> plan(ReadBuilder builder) {
        List<Split> splits = builder.newScan().plan().splits();
        long files = 0;
        for (Split split : splits) {
            files += ((DataSplit) split).dataFiles().size();
        }
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("splits", splits.size());
        result.put("files", files);
        return result;
    }

    // Expires exactly the oldest `count` snapshots, as shoal's expire_snapshots(older_than=now,
    // max_deletes=count) does on this table: no count or time keeps any of them.
    private static Map<String, Object> expire(FileStoreTable table, int count) {
        ExpireConfig config =
                ExpireConfig.builder()
                        .snapshotRetainMax(Integer.MAX_VALUE)
                        .snapshotRetainMin(1)
                        .snapshotTimeRetain(Duration.ZERO)
                        .snapshotMaxDeletes(count)
                        .build();
        int expired = table.newExpireSnapshots().config(config).expire();
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("expired_snapshots", expired);
        return result;
    }

    private static boolean resetPeak() {
        try (FileWriter w = new FileWriter("/proc/self/clear_refs")) {
            w.write("5");
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static long statusKib(String field) throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith(field + ":")) {
                return Long.parseLong(line.substring(field.length() + 1).trim().split("\\s+")[0]);
            }
        }
        throw new IOException("no " + field + " in /proc/self/status");
    }
}

/*
 * Apache Paimon's Java implementation driven by shoal's tests (tests/interop/java_paimon.py).
 *
 * Usage: java -cp <paimon jar>:<this class> PaimonOracle REQUEST.json RESPONSE.json
 *
 * The request names one warehouse and a list of operations, run in order in this one JVM so
 * that a test pays for one JVM start, not one per step:
 *
 *   {"warehouse": "/tmp/wh", "ops": [{"op": "create_table", "table": "db.t", ...}, ...]}
 *
 * The response holds one result per operation that ran and, when one failed, the error
 * (its class, message and causes) and the index of the failed operation; operations after
 * it do not run. The response is written even on failure, so the caller gets Java's own
 * message rather than a stack dump on stderr.
 *
 * Values cross the boundary as JSON typed by the table's schema, with the encodings that
 * keep them exact: decimals as strings, binaries as base64, timestamps as
 * [epoch millisecond, nano of millisecond], dates as epoch days, maps as [key, value] pairs,
 * rows as lists, and non-finite floats as the strings "NaN", "Infinity", "-Infinity".
 * Types are Paimon's SQL strings (DataType.asSQLString), nested ones included.
 *
 * Compiled by the test helper against the Paimon 0.9 and 1.0 jars alike, so it uses only the
 * API the two share.
 */

import org.apache.paimon.append.UnawareAppendCompactionTask;
import org.apache.paimon.append.UnawareAppendTableCompactionCoordinator;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.HashBucketAssigner;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.operation.AppendOnlyFileStoreWrite;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.shade.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.RowPartitionKeyExtractor;
import org.apache.paimon.table.sink.TableWriteImpl;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeJsonParser;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.TimeUtils;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Stream;

public final class PaimonOracle {

    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    private final Catalog catalog;
    private final IOManager ioManager;

    private PaimonOracle(Catalog catalog, IOManager ioManager) {
        this.catalog = catalog;
        this.ioManager = ioManager;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: PaimonOracle REQUEST.json RESPONSE.json");
            System.exit(2);
        }
        ObjectMapper mapper = new ObjectMapper();
        JsonNode request = mapper.readTree(new File(args[0]));
        ObjectNode response = JSON.objectNode();
        ArrayNode results = response.putArray("results");
        Path spill = Files.createTempDirectory("paimon-oracle-");
        int index = 0;
        try {
            Options options = new Options();
            options.set("warehouse", request.get("warehouse").asText());
            try (Catalog catalog = CatalogFactory.createCatalog(CatalogContext.create(options))) {
                PaimonOracle oracle =
                        new PaimonOracle(catalog, IOManager.create(spill.toString()));
                for (JsonNode op : request.get("ops")) {
                    results.add(oracle.run(op));
                    index++;
                }
            }
        } catch (Throwable e) {
            response.set("error", describe(e, index));
        } finally {
            deleteRecursively(spill);
        }
        mapper.writeValue(new File(args[1]), response);
        // Paimon leaves executor threads behind; they must not keep the JVM alive.
        System.exit(0);
    }

    private JsonNode run(JsonNode op) throws Exception {
        String name = op.get("op").asText();
        switch (name) {
            case "create_table":
                return createTable(op);
            case "write":
                return write(op);
            case "read":
                return read(op);
            case "stream_read":
                return streamRead(op);
            case "compact":
                return compact(op);
            case "create_tag":
                return createTag(op);
            case "delete_tag":
                table(op).deleteTag(op.get("tag").asText());
                return JSON.nullNode();
            case "rollback_to":
                return rollbackTo(op);
            case "expire_snapshots":
                return expireSnapshots(op);
            case "reset_consumer":
                consumers(op)
                        .resetConsumer(
                                op.get("consumer_id").asText(),
                                new org.apache.paimon.consumer.Consumer(
                                        op.get("next_snapshot").asLong()));
                return JSON.nullNode();
            case "consumers":
                {
                    ObjectNode out = JSON.objectNode();
                    consumers(op).consumers().forEach(out::put);
                    return out;
                }
            case "alter":
                return alter(op);
            case "drop_table":
                catalog.dropTable(identifier(op), false);
                return JSON.nullNode();
            case "snapshot":
                return snapshot(op);
            default:
                throw new IllegalArgumentException("unknown operation " + name);
        }
    }

    // --- operations ------------------------------------------------------------------------

    private JsonNode createTable(JsonNode op) throws Exception {
        Identifier id = identifier(op);
        catalog.createDatabase(id.getDatabaseName(), true);
        Schema.Builder schema = Schema.newBuilder();
        for (JsonNode field : op.get("fields")) {
            schema.column(field.get("name").asText(), parseType(field.get("type").asText()));
        }
        schema.partitionKeys(strings(op.get("partition_keys")));
        schema.primaryKey(strings(op.get("primary_keys")));
        schema.options(stringMap(op.get("options")));
        catalog.createTable(id, schema.build(), false);
        return JSON.nullNode();
    }

    /** One batch commit of the rows; returns the latest snapshot id afterwards. */
    private JsonNode write(JsonNode op) throws Exception {
        FileStoreTable table = (FileStoreTable) table(op);
        RowType rowType = table.rowType();
        List<String> columns = strings(op.get("columns"));
        int[] positions = new int[columns.size()];
        for (int i = 0; i < positions.length; i++) {
            positions[i] = rowType.getFieldIndex(columns.get(i));
            if (positions[i] < 0) {
                throw new IllegalArgumentException(
                        "column " + columns.get(i) + " is not in " + rowType.asSQLString());
            }
        }
        JsonNode kinds = op.get("kinds");
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        if (op.hasNonNull("overwrite")) {
            builder = builder.withOverwrite(stringMap(op.get("overwrite")));
        }
        // Dynamic-bucket tables get their buckets from the hash index, as Flink's writer does:
        // a plain write(row) refuses them.
        HashBucketAssigner assigner = null;
        RowPartitionKeyExtractor keys = null;
        if (table.bucketMode() == BucketMode.HASH_DYNAMIC) {
            assigner =
                    new HashBucketAssigner(
                            table.snapshotManager(),
                            UUID.randomUUID().toString(),
                            table.store().newIndexFileHandler(),
                            1,
                            1,
                            0,
                            table.coreOptions().dynamicBucketTargetRowNum());
            keys = new RowPartitionKeyExtractor(table.schema());
        } else if (table.bucketMode() == BucketMode.CROSS_PARTITION) {
            throw new UnsupportedOperationException(
                    "the oracle does not write cross-partition upsert tables (dynamic bucket with"
                            + " a primary key that leaves out partition keys)");
        }
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            write.withIOManager(ioManager);
            int n = 0;
            for (JsonNode values : op.get("rows")) {
                RowKind kind =
                        kinds.isArray()
                                ? RowKind.fromShortString(kinds.get(n).asText())
                                : RowKind.fromShortString(kinds.asText());
                GenericRow row = new GenericRow(kind, rowType.getFieldCount());
                for (int i = 0; i < positions.length; i++) {
                    row.setField(
                            positions[i], toInternal(values.get(i), rowType.getTypeAt(positions[i])));
                }
                if (assigner != null) {
                    int bucket =
                            assigner.assign(
                                    keys.partition(row), keys.trimmedPrimaryKey(row).hashCode());
                    ((TableWriteImpl<?>) write).write(row, bucket);
                } else {
                    write.write(row);
                }
                n++;
            }
            commit.commit(write.prepareCommit());
        }
        return latestSnapshotId(table);
    }

    private JsonNode read(JsonNode op) throws Exception {
        Table table = table(op);
        ReadBuilder builder = table.newReadBuilder();
        RowType rowType = table.rowType();
        if (op.hasNonNull("projection")) {
            List<String> names = strings(op.get("projection"));
            int[] projection = new int[names.size()];
            for (int i = 0; i < projection.length; i++) {
                projection[i] = rowType.getFieldIndex(names.get(i));
                if (projection[i] < 0) {
                    throw new IllegalArgumentException(
                            "column " + names.get(i) + " is not in " + rowType.asSQLString());
                }
            }
            builder = builder.withProjection(projection);
            rowType = rowType.project(projection);
        }
        List<Split> splits = builder.newScan().plan().splits();
        return readSplits(builder, rowType, splits);
    }

    /**
     * Reads the changes of snapshots `start` to `end` as a streaming reader does, starting
     * from snapshot `start` (`scan.mode` = `from-snapshot`), each change with its row kind:
     * the read that reaches into long-lived changelogs when they outlive their snapshots.
     */
    private JsonNode streamRead(JsonNode op) throws Exception {
        Map<String, String> dynamic = stringMap(op.get("options"));
        long start = op.get("start").asLong();
        long end = op.get("end").asLong();
        dynamic.put("scan.mode", "from-snapshot");
        dynamic.put("scan.snapshot-id", String.valueOf(start));
        Table table = catalog.getTable(identifier(op)).copy(dynamic);
        ReadBuilder builder = table.newReadBuilder();
        org.apache.paimon.table.source.StreamTableScan scan = builder.newStreamScan();
        List<Split> splits = new ArrayList<>();
        for (int round = 0; round < 100000; round++) {
            Long next = scan.checkpoint();
            if (next != null && next > end) {
                break;
            }
            List<Split> planned = scan.plan().splits();
            for (Split split : planned) {
                // A plan may skip snapshots it does not read (compactions) and read a later one.
                if (((org.apache.paimon.table.source.DataSplit) split).snapshotId() <= end) {
                    splits.add(split);
                }
            }
            Long after = scan.checkpoint();
            if (planned.isEmpty() && next != null && next.equals(after)) {
                break; // no snapshot to read yet: the end of the table
            }
        }
        return readSplits(builder, table.rowType(), splits);
    }

    private JsonNode readSplits(ReadBuilder builder, RowType rowType, List<Split> splits)
            throws Exception {
        InternalRow.FieldGetter[] getters = new InternalRow.FieldGetter[rowType.getFieldCount()];
        for (int i = 0; i < getters.length; i++) {
            getters[i] = InternalRow.createFieldGetter(rowType.getTypeAt(i), i);
        }
        ObjectNode out = JSON.objectNode();
        ArrayNode fields = out.putArray("fields");
        for (DataField field : rowType.getFields()) {
            fields.addObject().put("name", field.name()).put("type", field.type().asSQLString());
        }
        ArrayNode rows = out.putArray("rows");
        ArrayNode kinds = out.putArray("kinds");
        List<DataType> types = rowType.getFieldTypes();
        try (RecordReader<InternalRow> reader =
                builder.newRead().withIOManager(ioManager).createReader(splits)) {
            // Readers reuse row objects: each row is converted before the next one is read.
            reader.forEachRemaining(
                    row -> {
                        ArrayNode values = rows.addArray();
                        for (int i = 0; i < getters.length; i++) {
                            values.add(toJson(getters[i].getFieldOrNull(row), types.get(i)));
                        }
                        kinds.add(row.getRowKind().shortString());
                    });
        }
        return out;
    }

    /**
     * Compacts every bucket that holds files; `full` rewrites each bucket into one sorted run.
     * Unaware-bucket append tables have no buckets: `full` rewrites all files of each
     * partition, otherwise Paimon's coordinator picks the small files it wants.
     */
    private JsonNode compact(JsonNode op) throws Exception {
        Map<String, String> dynamic = stringMap(op.get("options"));
        dynamic.put("write-only", "false");
        FileStoreTable table = (FileStoreTable) catalog.getTable(identifier(op)).copy(dynamic);
        boolean full = op.path("full").asBoolean(true);
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        List<ManifestEntry> files = table.store().newScan().plan().files();
        if (table.bucketMode() == BucketMode.BUCKET_UNAWARE) {
            String user = UUID.randomUUID().toString();
            List<UnawareAppendCompactionTask> tasks = new ArrayList<>();
            if (full) {
                // The coordinator waits for enough small files (or several rounds in a
                // stream); a full compaction rewrites each partition's files now.
                Map<BinaryRow, List<DataFileMeta>> byPartition = new LinkedHashMap<>();
                for (ManifestEntry entry : files) {
                    byPartition
                            .computeIfAbsent(entry.partition(), p -> new ArrayList<>())
                            .add(entry.file());
                }
                for (Map.Entry<BinaryRow, List<DataFileMeta>> p : byPartition.entrySet()) {
                    if (p.getValue().size() > 1) {
                        tasks.add(new UnawareAppendCompactionTask(p.getKey(), p.getValue()));
                    }
                }
            } else {
                tasks.addAll(new UnawareAppendTableCompactionCoordinator(table, false).run());
            }
            AppendOnlyFileStoreWrite write =
                    (AppendOnlyFileStoreWrite) table.store().newWrite(user);
            List<CommitMessage> messages = new ArrayList<>();
            for (UnawareAppendCompactionTask task : tasks) {
                messages.add(task.doCompact(table, write));
            }
            write.close();
            try (BatchTableCommit commit = builder.newCommit()) {
                commit.commit(messages);
            }
            return latestSnapshotId(table);
        }
        // Every (partition, bucket) that holds a file, level 0 included (a table scan with
        // deletion vectors would skip level-0 files).
        Map<BinaryRow, Set<Integer>> buckets = new LinkedHashMap<>();
        for (ManifestEntry entry : files) {
            buckets.computeIfAbsent(entry.partition(), p -> new LinkedHashSet<>())
                    .add(entry.bucket());
        }
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            write.withIOManager(ioManager);
            for (Map.Entry<BinaryRow, Set<Integer>> partition : buckets.entrySet()) {
                for (int bucket : partition.getValue()) {
                    write.compact(partition.getKey(), bucket, full);
                }
            }
            commit.commit(write.prepareCommit());
        }
        return latestSnapshotId(table);
    }

    private JsonNode createTag(JsonNode op) throws Exception {
        Table table = table(op);
        String tag = op.get("tag").asText();
        Duration retained =
                op.hasNonNull("time_retained")
                        ? TimeUtils.parseDuration(op.get("time_retained").asText())
                        : null;
        if (op.hasNonNull("snapshot_id")) {
            long snapshot = op.get("snapshot_id").asLong();
            if (retained == null) {
                table.createTag(tag, snapshot);
            } else {
                table.createTag(tag, snapshot, retained);
            }
        } else if (retained == null) {
            table.createTag(tag);
        } else {
            table.createTag(tag, retained);
        }
        return JSON.nullNode();
    }

    private JsonNode rollbackTo(JsonNode op) throws Exception {
        Table table = table(op);
        if (op.hasNonNull("tag")) {
            table.rollbackTo(op.get("tag").asText());
        } else {
            table.rollbackTo(op.get("snapshot_id").asLong());
        }
        return JSON.nullNode();
    }

    /**
     * Expires snapshots; arguments left out fall back to the table's options, and a retain_max
     * below the retain-min option lowers retain_min to it (as shoal's contract says Paimon's
     * procedure does). Returns the number of snapshots expired.
     */
    private org.apache.paimon.consumer.ConsumerManager consumers(JsonNode op) throws Exception {
        FileStoreTable table = (FileStoreTable) table(op);
        return new org.apache.paimon.consumer.ConsumerManager(table.fileIO(), table.location());
    }

    private JsonNode expireSnapshots(JsonNode op) throws Exception {
        FileStoreTable table = (FileStoreTable) table(op);
        org.apache.paimon.CoreOptions options = table.coreOptions();
        int retainMax =
                op.hasNonNull("retain_max")
                        ? op.get("retain_max").asInt()
                        : options.snapshotNumRetainMax();
        int retainMin =
                op.hasNonNull("retain_min")
                        ? op.get("retain_min").asInt()
                        : Math.min(options.snapshotNumRetainMin(), retainMax);
        Duration timeRetain =
                op.hasNonNull("older_than_ms")
                        ? Duration.ofMillis(
                                System.currentTimeMillis() - op.get("older_than_ms").asLong())
                        : options.snapshotTimeRetain();
        int maxDeletes =
                op.hasNonNull("max_deletes")
                        ? op.get("max_deletes").asInt()
                        : options.snapshotExpireLimit();
        ExpireConfig config =
                ExpireConfig.builder()
                        .snapshotRetainMax(retainMax)
                        .snapshotRetainMin(retainMin)
                        .snapshotTimeRetain(timeRetain)
                        .snapshotMaxDeletes(maxDeletes)
                        .build();
        return JSON.numberNode(table.newExpireSnapshots().config(config).expire());
    }

    private JsonNode alter(JsonNode op) throws Exception {
        List<SchemaChange> changes = new ArrayList<>();
        for (JsonNode change : op.get("changes")) {
            String action = change.get("action").asText();
            switch (action) {
                case "add_column":
                    {
                        String column = change.get("name").asText();
                        DataType type = parseType(change.get("type").asText());
                        String comment =
                                change.hasNonNull("comment")
                                        ? change.get("comment").asText()
                                        : null;
                        SchemaChange.Move move = null;
                        if (change.hasNonNull("after")) {
                            move = SchemaChange.Move.after(column, change.get("after").asText());
                        } else if (change.path("first").asBoolean(false)) {
                            move = SchemaChange.Move.first(column);
                        }
                        changes.add(SchemaChange.addColumn(column, type, comment, move));
                        break;
                    }
                case "drop_column":
                    changes.add(SchemaChange.dropColumn(change.get("name").asText()));
                    break;
                case "rename_column":
                    changes.add(
                            SchemaChange.renameColumn(
                                    change.get("name").asText(), change.get("new_name").asText()));
                    break;
                case "update_column_type":
                    changes.add(
                            SchemaChange.updateColumnType(
                                    change.get("name").asText(),
                                    parseType(change.get("type").asText())));
                    break;
                case "set_option":
                    changes.add(
                            SchemaChange.setOption(
                                    change.get("key").asText(), change.get("value").asText()));
                    break;
                case "remove_option":
                    changes.add(SchemaChange.removeOption(change.get("key").asText()));
                    break;
                default:
                    throw new IllegalArgumentException("unknown schema change " + action);
            }
        }
        catalog.alterTable(identifier(op), changes, false);
        return JSON.nullNode();
    }

    /**
     * A snapshot (the latest when no id is given) as this Paimon version parses it: the
     * JSON its Snapshot writes back, holding only the fields this version knows.
     */
    private JsonNode snapshot(JsonNode op) throws Exception {
        FileStoreTable table = (FileStoreTable) table(op);
        org.apache.paimon.Snapshot snapshot =
                op.hasNonNull("snapshot_id")
                        ? table.snapshotManager().snapshot(op.get("snapshot_id").asLong())
                        : table.snapshotManager().latestSnapshot();
        if (snapshot == null) {
            return JSON.nullNode();
        }
        return new ObjectMapper().readTree(snapshot.toJson());
    }

    // --- tables ----------------------------------------------------------------------------

    private static Identifier identifier(JsonNode op) {
        return Identifier.fromString(op.get("table").asText());
    }

    /** The table (or system table, "db.t$ro") with the operation's dynamic options. */
    private Table table(JsonNode op) throws Exception {
        Table table = catalog.getTable(identifier(op));
        Map<String, String> dynamic = stringMap(op.get("options"));
        return dynamic.isEmpty() ? table : table.copy(dynamic);
    }

    private static JsonNode latestSnapshotId(FileStoreTable table) {
        Long id = table.snapshotManager().latestSnapshotId();
        return id == null ? JSON.nullNode() : JSON.numberNode(id);
    }

    // --- values ----------------------------------------------------------------------------

    /** A JSON value (see the header for the encodings) as Paimon's internal value of `type`. */
    static Object toInternal(JsonNode value, DataType type) {
        if (value == null || value.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                if (!value.isBoolean()) {
                    throw new IllegalArgumentException("not a BOOLEAN: " + value);
                }
                return value.booleanValue();
            case TINYINT:
                return (byte) integer(value, Byte.MIN_VALUE, Byte.MAX_VALUE, type);
            case SMALLINT:
                return (short) integer(value, Short.MIN_VALUE, Short.MAX_VALUE, type);
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return (int) integer(value, Integer.MIN_VALUE, Integer.MAX_VALUE, type);
            case BIGINT:
                return integer(value, Long.MIN_VALUE, Long.MAX_VALUE, type);
            case FLOAT:
                return (float) floating(value);
            case DOUBLE:
                return floating(value);
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(value.asText());
            case BINARY:
            case VARBINARY:
                return Base64.getDecoder().decode(value.asText());
            case DECIMAL:
                {
                    DecimalType decimal = (DecimalType) type;
                    BigDecimal exact = new BigDecimal(value.asText());
                    Decimal d =
                            Decimal.fromBigDecimal(
                                    exact, decimal.getPrecision(), decimal.getScale());
                    if (d == null || d.toBigDecimal().compareTo(exact) != 0) {
                        throw new IllegalArgumentException(
                                value.asText() + " does not fit " + type.asSQLString());
                    }
                    return d;
                }
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromEpochMillis(value.get(0).asLong(), value.get(1).asInt());
            case ARRAY:
                {
                    DataType element = ((ArrayType) type).getElementType();
                    Object[] elements = new Object[value.size()];
                    for (int i = 0; i < elements.length; i++) {
                        elements[i] = toInternal(value.get(i), element);
                    }
                    return new GenericArray(elements);
                }
            case MAP:
                {
                    MapType map = (MapType) type;
                    Map<Object, Object> entries = new LinkedHashMap<>();
                    for (JsonNode pair : value) {
                        entries.put(
                                toInternal(pair.get(0), map.getKeyType()),
                                toInternal(pair.get(1), map.getValueType()));
                    }
                    return new GenericMap(entries);
                }
            case ROW:
                {
                    RowType row = (RowType) type;
                    GenericRow out = new GenericRow(row.getFieldCount());
                    for (int i = 0; i < row.getFieldCount(); i++) {
                        out.setField(i, toInternal(value.get(i), row.getTypeAt(i)));
                    }
                    return out;
                }
            default:
                throw new UnsupportedOperationException(
                        "the oracle does not convert " + type.asSQLString());
        }
    }

    private static long integer(JsonNode value, long min, long max, DataType type) {
        if (!value.isIntegralNumber() || !value.canConvertToLong()) {
            throw new IllegalArgumentException("not a " + type.asSQLString() + ": " + value);
        }
        long v = value.longValue();
        if (v < min || v > max) {
            throw new IllegalArgumentException(v + " is out of range for " + type.asSQLString());
        }
        return v;
    }

    private static double floating(JsonNode value) {
        // Double.parseDouble reads "NaN", "Infinity" and "-Infinity", the non-finite encodings.
        return value.isTextual() ? Double.parseDouble(value.asText()) : value.doubleValue();
    }

    /** Paimon's internal value of `type` as JSON (the encodings in the header). */
    static JsonNode toJson(Object value, DataType type) {
        if (value == null) {
            return JSON.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return JSON.booleanNode((Boolean) value);
            case TINYINT:
                return JSON.numberNode((Byte) value);
            case SMALLINT:
                return JSON.numberNode((Short) value);
            case INTEGER:
            case DATE:
            case TIME_WITHOUT_TIME_ZONE:
                return JSON.numberNode((Integer) value);
            case BIGINT:
                return JSON.numberNode((Long) value);
            case FLOAT:
                {
                    float f = (Float) value;
                    return Float.isFinite(f)
                            ? JSON.numberNode((double) f)
                            : JSON.textNode(Float.toString(f));
                }
            case DOUBLE:
                {
                    double d = (Double) value;
                    return Double.isFinite(d)
                            ? JSON.numberNode(d)
                            : JSON.textNode(Double.toString(d));
                }
            case CHAR:
            case VARCHAR:
                return JSON.textNode(value.toString());
            case BINARY:
            case VARBINARY:
                return JSON.textNode(Base64.getEncoder().encodeToString((byte[]) value));
            case DECIMAL:
                return JSON.textNode(((Decimal) value).toBigDecimal().toPlainString());
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                {
                    Timestamp ts = (Timestamp) value;
                    ArrayNode out = JSON.arrayNode();
                    out.add(ts.getMillisecond());
                    out.add(ts.getNanoOfMillisecond());
                    return out;
                }
            case ARRAY:
                {
                    InternalArray array = (InternalArray) value;
                    DataType element = ((ArrayType) type).getElementType();
                    InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
                    ArrayNode out = JSON.arrayNode();
                    for (int i = 0; i < array.size(); i++) {
                        out.add(toJson(getter.getElementOrNull(array, i), element));
                    }
                    return out;
                }
            case MAP:
                {
                    InternalMap map = (InternalMap) value;
                    MapType mapType = (MapType) type;
                    InternalArray.ElementGetter keyGetter =
                            InternalArray.createElementGetter(mapType.getKeyType());
                    InternalArray.ElementGetter valueGetter =
                            InternalArray.createElementGetter(mapType.getValueType());
                    ArrayNode out = JSON.arrayNode();
                    for (int i = 0; i < map.size(); i++) {
                        ArrayNode pair = out.addArray();
                        pair.add(
                                toJson(
                                        keyGetter.getElementOrNull(map.keyArray(), i),
                                        mapType.getKeyType()));
                        pair.add(
                                toJson(
                                        valueGetter.getElementOrNull(map.valueArray(), i),
                                        mapType.getValueType()));
                    }
                    return out;
                }
            case ROW:
                {
                    InternalRow row = (InternalRow) value;
                    RowType rowType = (RowType) type;
                    ArrayNode out = JSON.arrayNode();
                    for (int i = 0; i < rowType.getFieldCount(); i++) {
                        DataType field = rowType.getTypeAt(i);
                        out.add(
                                toJson(
                                        InternalRow.createFieldGetter(field, i)
                                                .getFieldOrNull(row),
                                        field));
                    }
                    return out;
                }
            default:
                throw new UnsupportedOperationException(
                        "the oracle does not convert " + type.asSQLString());
        }
    }

    // --- types -----------------------------------------------------------------------------

    /**
     * Parses Paimon's SQL type strings, nested ones included. Paimon's own parser reads only
     * atomic types; this one reads ARRAY<..>, MULTISET<..>, MAP<.., ..> and ROW<`name` .., ..>
     * around it. Nested field ids are placeholders: Paimon reassigns them when the schema is
     * built or changed.
     */
    static DataType parseType(String text) {
        TypeParser parser = new TypeParser(text);
        DataType type = parser.type();
        parser.skipSpaces();
        if (parser.pos != text.length()) {
            throw new IllegalArgumentException("unexpected text at " + parser.pos + ": " + text);
        }
        return type;
    }

    private static final class TypeParser {
        private final String text;
        private int pos;
        private int nextFieldId;

        TypeParser(String text) {
            this.text = text;
        }

        DataType type() {
            skipSpaces();
            int start = pos;
            while (pos < text.length()
                    && (Character.isLetter(text.charAt(pos)) || text.charAt(pos) == '_')) {
                pos++;
            }
            String word = text.substring(start, pos).toUpperCase();
            skipSpaces();
            boolean nested = pos < text.length() && text.charAt(pos) == '<';
            if (!nested) {
                pos = start;
                return atomic();
            }
            pos++;
            DataType type;
            switch (word) {
                case "ARRAY":
                    type = new ArrayType(type());
                    break;
                case "MULTISET":
                    type = new MultisetType(type());
                    break;
                case "MAP":
                    {
                        DataType key = type();
                        expect(',');
                        type = new MapType(key, type());
                        break;
                    }
                case "ROW":
                    {
                        List<DataField> fields = new ArrayList<>();
                        do {
                            String name = name();
                            DataType fieldType = type();
                            String comment = comment();
                            fields.add(new DataField(nextFieldId++, name, fieldType, comment));
                            skipSpaces();
                        } while (tryConsume(','));
                        type = new RowType(fields);
                        break;
                    }
                default:
                    throw new IllegalArgumentException("unknown type " + word + " in " + text);
            }
            expect('>');
            skipSpaces();
            if (text.startsWith("NOT NULL", pos)) {
                pos += "NOT NULL".length();
                type = type.copy(false);
            }
            return type;
        }

        /** An atomic type runs to the next ',' or '>' outside parentheses, or to a comment. */
        private DataType atomic() {
            int start = pos;
            int depth = 0;
            while (pos < text.length()) {
                char c = text.charAt(pos);
                if (c == '(') {
                    depth++;
                } else if (c == ')') {
                    depth--;
                } else if (depth == 0 && (c == ',' || c == '>' || c == '\'')) {
                    break;
                }
                pos++;
            }
            return DataTypeJsonParser.parseAtomicTypeSQLString(text.substring(start, pos).trim());
        }

        private String name() {
            skipSpaces();
            if (tryConsume('`')) {
                StringBuilder name = new StringBuilder();
                while (true) {
                    char c = text.charAt(pos++);
                    if (c == '`') {
                        if (pos < text.length() && text.charAt(pos) == '`') {
                            name.append('`');
                            pos++;
                        } else {
                            return name.toString();
                        }
                    } else {
                        name.append(c);
                    }
                }
            }
            int start = pos;
            while (pos < text.length() && !Character.isWhitespace(text.charAt(pos))) {
                pos++;
            }
            return text.substring(start, pos);
        }

        private String comment() {
            skipSpaces();
            if (!tryConsume('\'')) {
                return null;
            }
            StringBuilder comment = new StringBuilder();
            while (true) {
                char c = text.charAt(pos++);
                if (c == '\'') {
                    if (pos < text.length() && text.charAt(pos) == '\'') {
                        comment.append('\'');
                        pos++;
                    } else {
                        return comment.toString();
                    }
                } else {
                    comment.append(c);
                }
            }
        }

        void skipSpaces() {
            while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) {
                pos++;
            }
        }

        private boolean tryConsume(char c) {
            skipSpaces();
            if (pos < text.length() && text.charAt(pos) == c) {
                pos++;
                return true;
            }
            return false;
        }

        private void expect(char c) {
            if (!tryConsume(c)) {
                throw new IllegalArgumentException(
                        "expected '" + c + "' at " + pos + " in " + text);
            }
        }
    }

    // --- plumbing --------------------------------------------------------------------------

    private static List<String> strings(JsonNode node) {
        List<String> out = new ArrayList<>();
        if (node != null) {
            for (JsonNode item : node) {
                out.add(item.asText());
            }
        }
        return out;
    }

    private static Map<String, String> stringMap(JsonNode node) {
        Map<String, String> out = new LinkedHashMap<>();
        if (node != null && !node.isNull()) {
            node.fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
        }
        return out;
    }

    private static ObjectNode describe(Throwable error, int index) {
        ObjectNode out = JSON.objectNode();
        out.put("op_index", index);
        out.put("class", error.getClass().getName());
        out.put("message", error.getMessage());
        StackTraceElement[] frames = error.getStackTrace();
        out.put("thrown_at", frames.length == 0 ? null : frames[0].toString());
        ArrayNode causes = out.putArray("causes");
        for (Throwable cause = error.getCause();
                cause != null && cause != cause.getCause();
                cause = cause.getCause()) {
            causes.add(cause.getClass().getName() + ": " + cause.getMessage());
        }
        StringWriter stack = new StringWriter();
        error.printStackTrace(new PrintWriter(stack));
        out.put("stack", stack.toString());
        return out;
    }

    private static void deleteRecursively(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(path);
            }
        }
    }
}

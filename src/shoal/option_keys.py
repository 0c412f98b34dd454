"""The option keys shoal meets, and what it does with each.

shoal implements part of Apache Paimon's table options (:mod:`shoal.options` declares
them). The others fall in three groups, each answered differently wherever options
enter (``create_table``, option changes, the Spark data source, the command line):

- Paimon's own keys that shoal does not implement: refused with
  :class:`~shoal.errors.UnsupportedFeatureError` naming the key, since storing them
  would promise a behaviour nobody provides. Tables written by Paimon's engines carry
  such keys; opening them is decided by :mod:`shoal.core.features`, by what the keys
  change, not by their presence.
- Apache Hudi's keys, which users of Hudi's event-time compaction bring along:
  refused with the shoal option that does the same.
- Anything else: a typo, refused with the nearest known key.

Keys under ``user.`` are the user's own: stored, and never read by shoal or Paimon.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

USER_PREFIX = "user."

# Paimon's table options (CoreOptions) and those of its Flink and Spark connectors, as
# of Paimon 1.3: keys a table written by Paimon's engines may hold.
PAIMON_KEYS = frozenset(
    """
    add-column-before-partition aggregation.remove-record-on-delete
    alter-column-null-to-not-null.disabled async-file-write auto-create batch-scan-mode
    blob-as-descriptor blob-compaction.enabled blob-descriptor-field blob-field blob-view-field
    blob-view.resolve.enabled blob-write-null-on-fetch-failure blob-write-null-on-missing-file
    blob.copy-buffer-size blob.split-by-file-size blob.target-file-size branch bucket
    bucket-append-ordered bucket-function.type bucket-key cache-page-size
    chain-table.chain-partition-keys chain-table.enabled chain-table.split.key-range-enabled
    chain-table.streaming.merge-snapshot changelog-file.compression changelog-file.format
    changelog-file.prefix changelog-file.stats-mode changelog-producer
    changelog-producer.compaction-interval changelog-producer.row-deduplicate
    changelog-producer.row-deduplicate-ignore-fields changelog.num-retained.max
    changelog.num-retained.min changelog.precommit-compact.buffer-size
    changelog.precommit-compact.thread-num changelog.time-retained clustering.columns
    clustering.history-partition.idle-to-full-sort clustering.history-partition.limit
    clustering.incremental clustering.incremental.mode clustering.incremental.optimize-write
    clustering.strategy commit.callbacks commit.custom-listeners commit.discard-duplicate-files
    commit.force-compact commit.force-create-snapshot commit.max-retries commit.max-retry-wait
    commit.min-retry-wait commit.strict-mode.last-safe-snapshot commit.timeout
    commit.user-prefix compaction.bucket-distribution-strategy compaction.delete-ratio-threshold
    compaction.file-num-limit compaction.force-rewrite-all-files compaction.force-up-level-0
    compaction.incremental-size-threshold compaction.max-size-amplification-percent
    compaction.min.file-num compaction.offpeak-ratio compaction.offpeak.end.hour
    compaction.offpeak.start.hour compaction.optimization-interval compaction.size-ratio
    compaction.skip-expired-partitions compaction.small-file-ratio
    compaction.total-size-threshold consumer-id consumer.changelog-only consumer.expiration-time
    consumer.ignore-progress consumer.mode continuous.discovery-interval
    cross-partition-upsert.bootstrap-parallelism cross-partition-upsert.index-ttl
    data-evolution.compaction.rewrite-row-ids data-evolution.enabled
    data-evolution.merge-into.file-pruning data-evolution.merge-into.source-persist
    data-evolution.reassign.skip-contiguous-row-count
    data-evolution.row-id-conflict-rewrite.max-size data-evolution.row-sidecar.enabled
    data-evolution.row-sidecar.max-selected-rows data-evolution.row-sidecar.max-selection-ratio
    data-file.external-paths data-file.external-paths.specific-fs
    data-file.external-paths.strategy data-file.external-paths.weights data-file.path-directory
    data-file.prefix data-file.thin-mode delete.force-produce-changelog
    deletion-vector.index-file.target-size deletion-vectors.bitmap64 deletion-vectors.enabled
    deletion-vectors.merge-on-read deletion-vectors.modifiable disable-explicit-type-casting
    dynamic-bucket.assigner-parallelism dynamic-bucket.initial-buckets
    dynamic-bucket.max-buckets dynamic-bucket.target-row-num dynamic-partition-overwrite
    end-input.check-partition-expire end-input.watermark file-index.in-manifest-threshold
    file-index.read.enabled file-operation.thread-num file-reader-async-threshold
    file.block-size file.compression file.compression.per.level file.compression.zstd-level
    file.format file.format.per.level file.suffix.include.compression
    filesystem.job-level-settings.enabled force-lookup format-table.commit-hive-sync-url
    format-table.file.compression format-table.implementation
    format-table.partition-path-only-value format-table.repair.collect-statistics
    format-table.scan.list-parallelism format-table.statistics.parallelism
    full-compaction.delta-commits full-text-index.search-mode global-index.build.max-parallelism
    global-index.build.max-shard global-index.column-update-action global-index.enabled
    global-index.external-path global-index.row-count-per-shard global-index.search-mode
    global-index.thread-num ignore-delete ignore-update-before incremental-between
    incremental-between-scan-mode incremental-between-tag-to-snapshot
    incremental-between-timestamp incremental-to-auto-tag index-file-in-data-file-dir
    key-value.sequence_number.enabled legacy-timestamp-mapping.enabled local-kv-db.block-size
    local-merge-buffer-size local-sort.max-num-file-handles lookup-compact
    lookup-compact.max-interval lookup-wait lookup.async lookup.async-thread-number
    lookup.blob-as-descriptor lookup.bootstrap-parallelism lookup.cache
    lookup.cache-file-retention lookup.cache-max-disk-size lookup.cache-max-memory-size
    lookup.cache-rows lookup.cache-spill-compression lookup.cache.bloom.filter.enabled
    lookup.cache.bloom.filter.fpp lookup.cache.high-priority-pool-ratio
    lookup.continuous.discovery-interval lookup.dynamic-partition.refresh-interval
    lookup.dynamic-partition.refresh.async lookup.hash-load-factor lookup.merge-buffer-size
    lookup.merge-records-threshold lookup.refresh.async
    lookup.refresh.async.pending-snapshot-count lookup.refresh.full-load-threshold
    lookup.refresh.time-periods-blacklist lookup.remote-file.enabled
    lookup.remote-file.level-threshold manifest-sort.enabled manifest-sort.max-rewrite-size
    manifest-sort.partition-field manifest.compression manifest.delete-file-drop-stats
    manifest.full-compaction-threshold-size manifest.merge-min-count
    manifest.merge-optimize.enabled manifest.target-file-size
    materialized-table.definition-query materialized-table.interval-freshness
    materialized-table.interval-freshness.time-unit materialized-table.logical-refresh-mode
    materialized-table.refresh-handler-bytes materialized-table.refresh-handler-description
    materialized-table.refresh-mode materialized-table.refresh-status merge-engine
    metadata.stats-dense-store metadata.stats-keep-first-n-columns metadata.stats-mode
    metadata.stats-mode.per.level metastore.partitioned-table metastore.tag-to-partition
    metastore.tag-to-partition.preview num-levels num-sorted-run.compaction-trigger
    num-sorted-run.stop-trigger overwrite-upgrade page-size parquet.enable.dictionary
    partial-update.remove-record-on-delete partial-update.remove-record-on-sequence-group
    partition partition.default-name partition.end-input-to-done partition.expiration-batch-size
    partition.expiration-check-interval partition.expiration-max-num
    partition.expiration-strategy partition.expiration-time partition.idle-time-to-done
    partition.idle-time-to-report-statistic partition.legacy-name partition.mark-done-action
    partition.mark-done-action.custom.class partition.mark-done-action.http.params
    partition.mark-done-action.http.url partition.mark-done-action.mode
    partition.mark-done.recover-from-state partition.sink-strategy partition.time-interval
    partition.timestamp-format.strict partition.timestamp-formatter partition.timestamp-pattern
    path pk-bitmap.index.columns pk-btree.index.columns pk-clustering-override
    pk-full-text.index.columns pk-multivalue.index.columns pk-vector.index.columns
    postpone.batch-write-fixed-bucket postpone.batch-write-fixed-bucket.max-parallelism
    postpone.batch-write-fixed-bucket.rescale-load-factor postpone.default-bucket-num
    postpone.merge-on-read postpone.target-row-num-per-bucket postpone.target-size-per-bucket
    precommit-compact primary-key primary-key.nullable query-auth.enabled read.allow.fullScan
    read.batch-size read.changelog read.shuffle-bucket-with-partition
    read.stream.maxBytesPerTrigger read.stream.maxFilesPerTrigger read.stream.maxRowsPerTrigger
    read.stream.maxTriggerDelayMs read.stream.minRowsPerTrigger record-level.expire-time
    record-level.time-field requiredSparkConfsCheck.enabled row-tracking.enabled
    row-tracking.partition-group-on-commit rowkind.field scalar-index.search-mode scan.bounded
    scan.bounded.watermark scan.bucket scan.creation-time-millis scan.dedicated-split-generation
    scan.fallback-branch scan.fallback-branch.read-fail-fast scan.fallback-delta-branch
    scan.fallback-snapshot-branch scan.file-creation-time-millis scan.ignore-corrupt-files
    scan.ignore-lost-files scan.infer-parallelism scan.infer-parallelism.max
    scan.manifest.parallelism scan.max-snapshot.count scan.max-splits-per-task scan.mode
    scan.parallelism scan.partitions scan.plan-auto-tag-for-read.time-retained
    scan.plan-sort-partition scan.primary-branch scan.remove-normalize scan.snapshot-id
    scan.split-enumerator.batch-size scan.split-enumerator.mode scan.tag-name scan.timestamp
    scan.timestamp-millis scan.version scan.watermark scan.watermark.alignment.group
    scan.watermark.alignment.max-drift scan.watermark.alignment.update-interval
    scan.watermark.emit.strategy scan.watermark.idle-timeout sequence.field
    sequence.field.sort-order sequence.snapshot-ordering sink.clustering.sample-factor
    sink.clustering.sort-in-cluster sink.committer-cpu sink.committer-memory
    sink.committer-operator-chaining sink.coordinator-commit.enabled
    sink.cross-partition.managed-memory sink.key-only-deletes.enabled
    sink.managed.writer-buffer-memory sink.operator-uid.suffix sink.parallelism
    sink.process-time-zone sink.savepoint.auto-tag sink.use-managed-memory-allocator
    sink.watermark-time-zone sink.writer-coordinator.cache-expire-after-access
    sink.writer-coordinator.cache-memory sink.writer-coordinator.cache-soft-values
    sink.writer-coordinator.enabled sink.writer-coordinator.page-size
    sink.writer-coordinator.prefetch-manifests sink.writer-cpu sink.writer-memory
    sink.writer-refresh-detectors snapshot.clean-empty-directories
    snapshot.expire.execution-mode snapshot.expire.limit snapshot.ignore-empty-commit
    snapshot.num-retained.max snapshot.num-retained.min snapshot.time-retained
    snapshot.watermark-idle-timeout sort-compaction.local-sample.magnification
    sort-compaction.range-strategy sort-engine sort-spill-buffer-size sort-spill-threshold
    source.checkpoint-align.enabled source.checkpoint-align.timeout source.operator-uid.suffix
    source.split.open-file-cost source.split.target-size
    source.split.target-size-with-column-pruning spill-compression spill-compression.zstd-level
    stream-scan-mode streaming-read-append-overwrite streaming-read-overwrite
    streaming.read.snapshot.delay table-read.sequence-number.enabled tag.automatic-completion
    tag.automatic-creation tag.batch.customized-name tag.callbacks tag.create-success-file
    tag.creation-delay tag.creation-period tag.creation-period-duration
    tag.default-time-retained tag.num-retained-max tag.period-formatter tag.time-expire-enabled
    target-file-row-num target-file-size type unaware-bucket.compaction.parallelism
    unaware-bucket.no-shuffle variant.inferShreddingSchema
    variant.shredding.adaptive.maxInferBufferRow variant.shredding.adaptive.retentionRatio
    variant.shredding.inferenceMode variant.shredding.maxInferBufferRow
    variant.shredding.maxSchemaDepth variant.shredding.maxSchemaWidth
    variant.shredding.minFieldCardinalityRatio variant.shreddingSchema vector-field
    vector-index.search-mode vector-search.distribute.enabled
    vector-search.lateral-join.batch-size vector-search.lateral-join.parallelism
    vector.file.format vector.target-file-size visibility-callback.check-interval
    visibility-callback.enabled visibility-callback.timeout write-buffer-for-append
    write-buffer-size write-buffer-spill.max-disk-size write-buffer-spillable
    write-max-writers-to-spill write-only write.batch-memory write.batch-size
    write.data-evolution.update-conflict-retry.max-attempts
    write.data-evolution.update-conflict-retry.wait-ms
    write.hive-style-dynamic-partition.enabled write.merge-schema
    write.merge-schema.explicit-cast write.merge-schema.type-widening
    write.sequence-number-init-mode write.use-v2-write zorder.var-length-contribution
    """.split()  # noqa: SIM905 (one word per key reads better than 415 quoted strings)
)
# Families of keys with a column, index type or callback name inside.
PAIMON_KEY_PATTERNS = (
    re.compile(r"fields\..+"),
    re.compile(r"file-index\..+"),
    re.compile(r"(commit|tag)\.callback\..+\.param"),
    re.compile(r"partition\.mark-done-action\..+"),
)

# Hudi's keys with the shoal option (or argument) that does the same.
HUDI_EQUIVALENTS = {
    "hoodie.compaction.strategy": "compaction.strategy (event-time for Hudi's "
    "EventTimeBasedCompactionStrategy)",
    "hoodie.payload.event.time.field": "compaction.event-time.field",
    "hoodie.table.ordering.fields": "sequence.field",
    "hoodie.table.precombine.field": "sequence.field",
    "hoodie.datasource.write.precombine.field": "sequence.field",
    "hoodie.datasource.write.recordkey.field": "the primary_keys argument of create_table",
    "hoodie.datasource.write.partitionpath.field": "the partition_keys argument of create_table",
    "hoodie.cleaner.commits.retained": "snapshot.num-retained.min",
    "hoodie.keep.min.commits": "snapshot.num-retained.min",
    "hoodie.keep.max.commits": "snapshot.num-retained.max",
    "hoodie.cleaner.hours.retained": "snapshot.time-retained",
    "hoodie.compact.inline": "write-only (false: writes compact when "
    "num-sorted-run.compaction-trigger says so)",
    "hoodie.compact.inline.max.delta.commits": "num-sorted-run.compaction-trigger",
    "hoodie.parquet.max.file.size": "target-file-size",
    "hoodie.read.use.read_optimized.mode": "the read_optimized argument of a read",
    "hoodie.datasource.query.type": "the read_optimized argument of a read",
}


def is_paimon_key(key: str) -> bool:
    """Whether ``key`` is one of Paimon's table options (or of its engines)."""
    return key in PAIMON_KEYS or any(p.fullmatch(key) for p in PAIMON_KEY_PATTERNS)


def is_user_key(key: str) -> bool:
    return key.startswith(USER_PREFIX) and len(key) > len(USER_PREFIX)


def hudi_equivalent(key: str) -> str | None:
    """The shoal option that does what Hudi's ``key`` does; None when there is none."""
    return HUDI_EQUIVALENTS.get(key)


def nearest(key: str, known: Iterable[str]) -> str | None:
    """The known key closest to ``key`` (a typo's likely meaning), if one is close."""
    lowered = {k.lower(): k for k in known}
    if key.lower() in lowered:
        return lowered[key.lower()]
    found = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.75)
    return lowered[found[0]] if found else None

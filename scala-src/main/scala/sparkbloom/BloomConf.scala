package sparkbloom

import org.apache.spark.sql.SparkSession

/** Every sparkbloom configuration key, with its default. Set them like any Spark SQL conf. */
object BloomConf {
  /** Master switch for skipping. With false, queries run exactly as without sparkbloom. */
  val Enabled = "spark.sparkbloom.enabled"
  /** Where indexes live for lakes the user cannot write to; default: `_sparkbloom/` in each table root. */
  val IndexRoot = "spark.sparkbloom.index.root"
  /** Row-group pruning inside kept files (file pruning always applies). */
  val RowGroupPruning = "spark.sparkbloom.rowGroupPruning.enabled"
  /** Take filters already inside the files instead of scanning the column, when valid. */
  val Harvest = "spark.sparkbloom.harvest.enabled"
  /**
   * After a CREATE or REFRESH whose harvested filters miss the index's false-read budget (a writer's fixed FPP, whose
   * false reads grow with the table), OPTIMIZE BLOOM INDEX builds them again to the budget in the background.
   */
  val HarvestResizeInBackground = "spark.sparkbloom.harvest.resizeInBackground"
  /**
   * A fixed false-positive probability per row group for new indexes that give neither `fpp` nor
   * `false_reads_per_key`. Unset by default: new indexes are sized by [[FalseReadsPerKey]].
   */
  val DefaultFpp = "spark.sparkbloom.fpp"
  /**
   * Default sizing of new indexes: the expected number of row groups read in error per looked-up value,
   * summed over the whole table (see `index/FppBudget.scala`).
   */
  val FalseReadsPerKey = "spark.sparkbloom.falseReadsPerKey"
  val DefaultFalseReadsPerKey = 0.1
  /**
   * Driver memory for indexes: layouts and filter runs, one LRU. A lookup whose runs would not fit is
   * evaluated as a Spark job over the index files instead.
   */
  val CacheMaxBytes = "spark.sparkbloom.cache.maxBytes"
  /**
   * How long a lookup may go on using a table's list of indexes, and an index's newest commit without listing its
   * commits again (each use still checks that no newer commit exists, with one request): a duration like `30s`;
   * `0` lists every time. Only on object stores and other remote file systems (not `file:`), where each listing is
   * a round trip of tens of milliseconds. Indexes created or dropped by another application are seen within it.
   */
  val LookupListingTtl = "spark.sparkbloom.index.listingTtl"
  def lookupListingTtlMs(s: SparkSession, fs: org.apache.hadoop.fs.FileSystem): Long =
    if (fs.getUri.getScheme == "file") 0L
    else org.apache.spark.network.util.JavaUtils.timeStringAsMs(s.conf.get(LookupListingTtl, "30s"))
  /**
   * How long a superseded version's commit stays in `_commits/` before the writes' housekeeping (every 8th maintained
   * write, every CREATE, REFRESH and OPTIMIZE) removes it; the newest 10 commits always stay. Lookups read only the
   * newest; the rest are history that every listing of `_commits/` (and, for indexes inside the table root, Spark's
   * listing of a plain Parquet table on S3A) would otherwise page through, one key per write, for ever. A duration
   * like `1h`; `-1` keeps every commit until `VACUUM BLOOM INDEX`.
   */
  val CommitRetention = "spark.sparkbloom.index.commitRetention"
  def commitRetentionMs(s: SparkSession): Long = {
    val v = s.conf.get(CommitRetention, "1h").trim
    if (v.startsWith("-")) -1L
    else
      try org.apache.spark.network.util.JavaUtils.timeStringAsMs(v)
      catch { // housekeeping after a write has committed must not fail it: every commit kept, and said why
        case scala.util.control.NonFatal(e) =>
          org.slf4j.LoggerFactory.getLogger(getClass).warn(
            s"sparkbloom: $CommitRetention = '$v' is not a duration like 1h or 30min (${e.getMessage}); " +
              "keeping every commit")
          -1L
      }
  }
  /**
   * Internal (tests): how long a version directory no recent commit reads must have been unchanged (its newest file
   * this old) before housekeeping removes it; younger ones may be a build still writing. A duration; `60s`.
   */
  val VersionDirGrace = "spark.sparkbloom.index.versionDirGracePeriod"
  def versionDirGraceMs(s: SparkSession): Long =
    try org.apache.spark.network.util.JavaUtils.timeStringAsMs(s.conf.get(VersionDirGrace, "60s"))
    catch { case scala.util.control.NonFatal(_) => 60000L }
  /** Ceiling on filter bits per distinct value; past it the expected false reads rise instead. */
  val MaxBitsPerValue = "spark.sparkbloom.maxBitsPerValue"
  val DefaultMaxBitsPerValue = 32.0

  /**
   * Internal (tests and benchmarks): with false, every scanned chunk is hashed through parquet-java's column
   * reader instead of from its dictionary page or PLAIN page bytes. The filters are the same either way.
   */
  val BuildFastPaths = "spark.sparkbloom.build.fastPaths"

  /**
   * Row-group pruning with the bloom filters stored inside the Parquet files, checked safely by sparkbloom at
   * read time (corrupt filters ignored, both zeros probed, never on NaN), in place of parquet-java's own.
   */
  val NativeFilters = "spark.sparkbloom.nativeFilters.enabled"
  def nativeFilters(s: SparkSession): Boolean = s.conf.get(NativeFilters, "true").toBoolean

  /**
   * For conditions that can be true for a float or double NaN (`x > 1e6`, `x <> 1.0`, `NOT (x <= 0)`, ...), files
   * whose writer may leave NaN out of min/max (anything but parquet-java) are read with only the pushed filters that
   * cannot be true for NaN: parquet-java's statistics and page-index filters would drop their NaN rows (see
   * [[sparkbloom.scan.NanGuard]]). On by default; false restores the plain behaviour (benchmarks, diagnosis).
   */
  val NanGuard = "spark.sparkbloom.nanGuard.enabled"
  def nanGuard(s: SparkSession): Boolean = s.conf.get(NanGuard, "true").toBoolean

  /**
   * Run-time pruning: a scan whose indexed column is equated with keys another part of the plan produces (a
   * join, `IN (subquery)`, `EXISTS`, a MERGE) chooses its files and row groups from those keys at execution.
   * See docs/runtime-pruning.md for the thresholds below and the measurements behind their defaults.
   */
  val RuntimePruning = "spark.sparkbloom.runtimePruning.enabled"
  def runtimePruning(s: SparkSession): Boolean = s.conf.get(RuntimePruning, "true").toBoolean
  /**
   * Key cap: planned only when the keys side is estimated to hold at most this many keys, and at run time the
   * scan reads everything if it produced more.
   */
  val RuntimeMaxKeys = "spark.sparkbloom.runtimePruning.maxKeys"
  def runtimeMaxKeys(s: SparkSession): Long = s.conf.get(RuntimeMaxKeys, "100000").toLong
  /** Minimum size of the pruned table (bytes, Spark's size syntax); smaller tables are read whole. */
  val RuntimeMinTableSize = "spark.sparkbloom.runtimePruning.minTableSize"
  def runtimeMinTableSize(s: SparkSession): Long =
    org.apache.spark.network.util.JavaUtils.byteStringAsBytes(s.conf.get(RuntimeMinTableSize, "1m"))
  /**
   * Ceiling on the expected share of the table's row groups kept: k keys under a false-read budget b keep
   * about k (true) + k * b (false) row groups; when that is more than this fraction of the indexed row
   * groups, pruning is declined (at run time, when the keys are known).
   */
  val RuntimeMaxKeptFraction = "spark.sparkbloom.runtimePruning.maxKeptFraction"
  def runtimeMaxKeptFraction(s: SparkSession): Double = s.conf.get(RuntimeMaxKeptFraction, "0.5").toDouble

  /**
   * Maintenance on write: a write into a table with bloom indexes (Spark's Parquet writes, Delta and Iceberg commits,
   * the file and Delta streaming sinks) brings them up to date (docs/maintenance-on-write.md). An index created with
   * `maintain_on_write = false` is left to REFRESH.
   */
  val MaintainOnWrite = "spark.sparkbloom.maintainOnWrite.enabled"
  def maintainOnWrite(s: SparkSession): Boolean = s.conf.get(MaintainOnWrite, "true").toBoolean
  /**
   * Catch-up after a read: a lookup that read files a maintained index does not cover (written by another engine, by
   * a session with maintenance off, or by a write sparkbloom is not told of, such as Iceberg's rewrite_data_files)
   * queues an incremental refresh of the table's maintained indexes in the background. The lookup itself reads those
   * files, as always; the next ones skip them once the refresh has committed.
   */
  val RefreshOnRead = "spark.sparkbloom.maintainOnWrite.refreshOnRead"
  def refreshOnRead(s: SparkSession): Boolean = s.conf.get(RefreshOnRead, "true").toBoolean
  /**
   * A streaming query into a table with maintained indexes (the file sink, Delta's sink, Iceberg's) waits, before it
   * plans a micro-batch (Iceberg: right after a batch commits), for the refresh that covers the batch before it, up to
   * this long (a duration, `120s` by default; `0`: never waits, the refreshes run beside the stream). So a lookup
   * reads at most one batch the index does not cover yet, however far the refreshes fall behind the batches.
   */
  val StreamingWaitTimeout = "spark.sparkbloom.maintainOnWrite.streamingWaitTimeout"
  def streamingWaitTimeoutMs(s: SparkSession): Long =
    org.apache.spark.network.util.JavaUtils.timeStringAsMs(s.conf.get(StreamingWaitTimeout, "120s"))
  val VacuumRetentionCheck = "spark.sparkbloom.vacuum.retentionDurationCheck.enabled"
  def vacuumRetentionCheck(s: SparkSession): Boolean = s.conf.get(VacuumRetentionCheck, "true").toBoolean
  val OptimizeAfterSegments = "spark.sparkbloom.maintainOnWrite.optimizeAfterSegments"
  def optimizeAfterSegments(s: SparkSession): Int = s.conf.get(OptimizeAfterSegments, "64").toInt
  val OptimizeInBackground = "spark.sparkbloom.maintainOnWrite.optimizeInBackground"
  def optimizeInBackground(s: SparkSession): Boolean = s.conf.get(OptimizeInBackground, "true").toBoolean
  /** Filters and hashes (bytes) a write task ships to the driver instead of writing its own segments. */
  val MaintainShipMaxBytes = "spark.sparkbloom.maintainOnWrite.shipMaxBytes"
  def maintainShipMaxBytes(s: SparkSession): Long = s.conf.get(MaintainShipMaxBytes, (1L << 20).toString).toLong
  val MaintainInTask = "spark.sparkbloom.maintainOnWrite.inTask"
  def maintainInTask(s: SparkSession): Boolean = s.conf.get(MaintainInTask, "true").toBoolean
  val MaintainWithNativeFilters = "spark.sparkbloom.maintainOnWrite.nativeFilters"
  def maintainWithNativeFilters(s: SparkSession): Boolean = s.conf.get(MaintainWithNativeFilters, "true").toBoolean

  def enabled(s: SparkSession): Boolean = s.conf.get(Enabled, "true").toBoolean
  def indexRoot(s: SparkSession): Option[String] = Option(s.conf.get(IndexRoot, null)).filter(_.nonEmpty)
  def rowGroupPruning(s: SparkSession): Boolean = s.conf.get(RowGroupPruning, "true").toBoolean
  /**
   * A split whose kept row groups are not contiguous is read piece by piece, and every extra piece opens the
   * file (and reads its footer) again. It is read in pieces only when the bytes skipped are at least this much
   * per extra piece; otherwise it is read whole (more rows, fewer opens: never fewer rows than needed).
   */
  val MinSkipPerExtraRead = "spark.sparkbloom.rowGroupPruning.minSkipPerExtraRead"
  def minSkipPerExtraRead(s: SparkSession): Long =
    org.apache.spark.network.util.JavaUtils.byteStringAsBytes(s.conf.get(MinSkipPerExtraRead, "1m"))
  def buildFastPaths(s: SparkSession): Boolean = s.conf.get(BuildFastPaths, "true").toBoolean
  def harvest(s: SparkSession): Boolean = s.conf.get(Harvest, "true").toBoolean
  def harvestResizeInBackground(s: SparkSession): Boolean = s.conf.get(HarvestResizeInBackground, "true").toBoolean
  def defaultFpp(s: SparkSession): Option[Double] =
    Option(s.conf.get(DefaultFpp, null)).filter(_.trim.nonEmpty).map(_.toDouble)
  def falseReadsPerKey(s: SparkSession): Double =
    s.conf.get(FalseReadsPerKey, DefaultFalseReadsPerKey.toString).toDouble
  def cacheMaxBytes(s: SparkSession): Long =
    org.apache.spark.network.util.JavaUtils.byteStringAsBytes(s.conf.get(CacheMaxBytes, "176m"))
  def maxBitsPerValue(s: SparkSession): Double =
    s.conf.get(MaxBitsPerValue, DefaultMaxBitsPerValue.toString).toDouble
}

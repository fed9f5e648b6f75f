package sparkbloom.scan

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat
import org.apache.spark.sql.sources.Filter
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.execution.metric.{SQLMetric, SQLMetrics}

import sparkbloom.BloomConf
import sparkbloom.index.{ConfBroadcast, LeanConf, RowGroupSelection}
import sparkbloom.predicate.{BloomPredicate, Conditions}

/**
 * Spark's own Parquet format, reading only the row groups that may match. Spark's reader keeps a row
 * group when its midpoint lies in the split; each row group's midpoint lies in its index range
 * [start_i, start_{i+1}), so handing the reader the intersections of the split with the kept ranges reads
 * exactly the kept row groups this split would have read, vectorised or not.
 *
 * The row groups to read come from the bloom indexes (decided at planning time, in [[RowGroupSelection]]) and
 * from the files' own bloom filters, checked here at read time ([[NativeSpec]], [[NativeFilters]]) for files no
 * index decided (and, for indexed files, for columns no index answers).
 *
 * It also turns off parquet-java's own bloom-filter row-group filtering for the scan: that filtering trusts
 * whatever filter a file carries (a corrupt header silently drops rows, e.g. DuckDB's
 * `bloom_filter_short_numbytes.parquet`) and probes only the literal's own zero. Statistics and dictionary
 * filtering stay on, except as the Parquet table formats turn them off for ±0.0 and NaN (through the scan's options),
 * and, when a pushed filter can be true for NaN, for the files whose writer may leave NaN out of min/max
 * ([[NanGuard]]: such a file is read by a second reader handed only the filters that cannot be true for NaN).
 */
class BloomParquetFileFormat(val selection: RowGroupSelection, val native: Option[NativeSpec] = None)
  extends ParquetFileFormat {

  override def buildReaderWithPartitionValues(
      sparkSession: SparkSession,
      dataSchema: StructType,
      partitionSchema: StructType,
      requiredSchema: StructType,
      filters: Seq[Filter],
      options: Map[String, String],
      hadoopConf: Configuration): PartitionedFile => Iterator[InternalRow] = {
    hadoopConf.setBoolean(BloomParquetFileFormat.NativeBloomFiltering, false) // a per-scan copy of the conf
    val guarded = NanGuard.needed(sparkSession, filters, hadoopConf)
    // Spark's reader broadcasts the conf it is given: a LeanConf copy serialises without each entry's sources.
    val fullConf = new LeanConf(hadoopConf)
    val nanSafeConf = if (guarded) Some(new LeanConf(hadoopConf)) else None
    val nat = native.filter(n => NativeFilters.prunable(n.all) || NativeFilters.prunable(n.covered))
    // The conf the read-time checks read files with, taken before Spark's reader adds its per-query entries (the
    // requested schema, ...), so that queries over the same relation share one broadcast (ConfBroadcast).
    val conf =
      if (nat.isEmpty && !guarded) None else Some(ConfBroadcast.of(sparkSession.sparkContext, hadoopConf))
    val fullRead = super.buildReaderWithPartitionValues(sparkSession, dataSchema, partitionSchema, requiredSchema,
      filters, options, fullConf)
    // Files whose writer may leave NaN out of min/max are read with only the filters that cannot be true for NaN.
    val nanSafeRead = nanSafeConf.map(c =>
      super.buildReaderWithPartitionValues(sparkSession, dataSchema, partitionSchema, requiredSchema,
        Conditions.nanSafe(filters), options, c))
    val sel = selection
    val minSkip = BloomConf.minSkipPerExtraRead(sparkSession)
    (file: PartitionedFile) => {
      val read = nanSafeRead match {
        case Some(r) if !NanGuard.statisticsSafe(conf.get.value.value, file) => r
        case _ => fullRead
      }
      BloomParquetFileFormat.splitsToRead(file, sel, nat, conf.get.value.value, minSkip) match {
        case None => read(file)
        case Some(parts) => parts.iterator.flatMap(read)
      }
    }
  }

  override def toString: String =
    if (native.exists(n => n.metrics != null)) "Parquet+Bloom(native filters checked)" else "Parquet+Bloom"

  // ParquetFileFormat equals any ParquetFileFormat; this one only itself, so a rewritten relation never
  // compares equal to the one it replaces.
  override def equals(other: Any): Boolean = other match {
    case b: BloomParquetFileFormat => b eq this
    case _ => false
  }
  override def hashCode(): Int = System.identityHashCode(this)
}

/**
 * Read-time pruning with the files' own (native) bloom filters: `all` for files no index decided, `covered`
 * (the conjuncts on columns no index answered) for the others. Counts go to the scan's SQL metrics.
 */
final class NativeSpec(val all: BloomPredicate, val covered: BloomPredicate,
                       val options: NativeFilters.Options, val metrics: NativeMetrics) extends Serializable {
  /** The split's kept ranges, or None to read it as Spark would (nothing to decide, or any error). */
  def decide(conf: Configuration, file: PartitionedFile, pred: BloomPredicate): Option[Array[Long]] = {
    if (!NativeFilters.prunable(pred)) None
    else {
      val t0 = System.nanoTime()
      try {
        val d = NativeFilters.decide(conf, file.toPath, file.fileSize, file.modificationTime, file.start,
          file.start + file.length, pred, options)
        d.foreach { x =>
          metrics.rowGroupsChecked.add(x.considered); metrics.rowGroupsSkipped.add(x.pruned)
          metrics.filtersInvalid.add(x.invalid)
        }
        d.filter(_.pruned > 0).map(_.ranges)
      } catch {
        case scala.util.control.NonFatal(_) => metrics.filesUnreadable.add(1); None // Spark's reader reports it
      } finally metrics.time.add(System.nanoTime() - t0)
    }
  }
}

object NativeSpec {
  /**
   * The native-filter spec of a scan, shared by the V1 rule and the V2 scan: `cond` translated over the data
   * columns `dataCol` names (partition columns left out by the caller) into `all`, and over the columns no index
   * in `indexedColumns` (lower case) answers into `covered`. Both are Unknown (nothing pruned) when native
   * filtering is off (`enabled`, or Spark's own Parquet pushdown off) or when Parquet field ids decide which file
   * column a read column is (names would probe the wrong filter). Metrics only when something can prune.
   */
  def apply(session: SparkSession, cond: org.apache.spark.sql.catalyst.expressions.Expression,
            dataCol: org.apache.spark.sql.catalyst.expressions.ExprId => Option[String], indexedColumns: Set[String],
            options: NativeFilters.Options, enabled: Boolean): NativeSpec = {
    val byFieldId = session.conf.get("spark.sql.parquet.fieldId.read.enabled", "false").toBoolean
    val on = enabled && !byFieldId && session.sessionState.conf.parquetFilterPushDown
    val all = if (on) BloomPredicate.translate(cond, dataCol) else BloomPredicate.Unknown
    val covered = if (on) BloomPredicate.translate(cond,
      id =>
        dataCol(id).filterNot(n =>
          indexedColumns.contains(n.toLowerCase(java.util.Locale.ROOT))))
    else BloomPredicate.Unknown
    val prunes = NativeFilters.prunable(all) || NativeFilters.prunable(covered)
    new NativeSpec(all, covered, options, if (prunes) NativeMetrics(session.sparkContext) else null)
  }
}

/** Executor-side counters of native bloom filtering (SQL metrics of the scan's BloomIndexSkipping node). */
final class NativeMetrics(val rowGroupsChecked: SQLMetric, val rowGroupsSkipped: SQLMetric,
                          val filtersInvalid: SQLMetric, val filesUnreadable: SQLMetric, val time: SQLMetric)
  extends Serializable {
  def all: Map[String, SQLMetric] = Map("nativeRowGroupsChecked" -> rowGroupsChecked,
    "nativeRowGroupsSkipped" -> rowGroupsSkipped,
    "nativeFiltersInvalid" -> filtersInvalid, "nativeFilesUnreadable" -> filesUnreadable, "nativeTime" -> time)
}

object NativeMetrics {
  def apply(sc: org.apache.spark.SparkContext): NativeMetrics = new NativeMetrics(
    SQLMetrics.createMetric(sc, "row groups checked with native bloom filters"),
    SQLMetrics.createMetric(sc, "row groups skipped by native bloom filters"),
    SQLMetrics.createMetric(sc, "native bloom filters ignored (corrupt or unsupported)"),
    SQLMetrics.createMetric(sc, "files whose native filters could not be read"),
    SQLMetrics.createNanoTimingMetric(sc, "native bloom filter time"))
}

object BloomParquetFileFormat {
  val NativeBloomFiltering = "parquet.filter.bloom.enabled"
  /** parquet-java's dictionary filtering (`ParquetInputFormat.DICTIONARY_FILTERING_ENABLED`). */
  val DictionaryFiltering = "parquet.filter.dictionary.enabled"
  /** parquet-java's row-group statistics and page-index (column index) filtering. */
  val StatisticsFiltering = "parquet.filter.stats.enabled"
  val ColumnIndexFiltering = "parquet.filter.columnindex.enabled"

  /**
   * Whether to read the split [s, e) whole rather than as `pieces`: only when there is more than one piece and
   * the bytes skipped are under `minSkipPerExtraRead` per extra piece (each piece reopens the file).
   */
  def readWhole(pieces: Seq[(Long, Long)], s: Long, e: Long, minSkipPerExtraRead: Long): Boolean =
    pieces.size > 1 && (e - s) -
      pieces.iterator.map(p => p._2 - p._1).sum < (pieces.size - 1).toLong * minSkipPerExtraRead

  /**
   * What Spark's reader should read of the split `file`: None = the split as it is; otherwise these pieces of it
   * (none when no row group may match). Row groups kept = those the index kept (`sel`) and, for files it did
   * not decide or columns it does not answer, those the file's own filters keep (`native`).
   */
  def splitsToRead(file: PartitionedFile, sel: RowGroupSelection, native: Option[NativeSpec], conf: => Configuration,
                   minSkipPerExtraRead: Long): Option[Seq[PartitionedFile]] = {
    val path = file.toPath.toString
    val s = file.start; val e = file.start + file.length
    val fromNative = native.flatMap(n => n.decide(conf, file, if (sel.decidedByIndex(path)) n.covered else n.all))
    val ranges = (sel.get(path), fromNative) match {
      case (Some(a), Some(b)) => Some(NativeFilters.intersect(a, b))
      case (a, b) => a.orElse(b)
    }
    ranges.flatMap { r =>
      val ps = pieces(r, s, e)
      if (ps.nonEmpty && ((ps.size == 1 && ps.head == (s -> e)) || readWhole(ps, s, e, minSkipPerExtraRead))) None
      else Some(ps.map { case (a, b) => file.copy(start = a, length = b - a) })
    }
  }

  /** Kept ranges (flattened pairs, sorted or not) merged where adjacent, intersected with [s, e). */
  def pieces(ranges: Array[Long], s: Long, e: Long): Seq[(Long, Long)] = {
    val pairs = ranges.grouped(2).map(a => (a(0), a(1))).toSeq.sortBy(_._1)
    val merged = pairs.foldLeft(List.empty[(Long, Long)]) {
      case ((ps, pe) :: rest, (a, b)) if a <= pe => (ps, math.max(pe, b)) :: rest
      case (acc, r) => r :: acc
    }.reverse
    merged.flatMap { case (a, b) =>
      val lo = math.max(a, s); val hi = math.min(b, e); if (lo < hi) Some(lo -> hi) else None
    }
  }
}

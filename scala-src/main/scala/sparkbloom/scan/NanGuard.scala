package sparkbloom.scan

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.datasources.PartitionedFile
import org.apache.spark.sql.sources.Filter

import sparkbloom.BloomConf
import sparkbloom.parquet.{Footers, WriterStatistics}
import sparkbloom.predicate.Conditions

/**
 * Keeps parquet-java's statistics and page-index (column index) filters from dropping row groups and pages whose
 * NaN values satisfy the scan's condition. In Spark NaN is greater than every number, so `x > 1e6` holds for a
 * NaN `x`; writers that leave NaN out of float and double min/max (Arrow C++, arrow-rs: as the format says)
 * give bounds parquet-java takes for bounds of every value, and it drops the NaN rows. parquet-java's own files
 * are safe (a NaN chunk's max is NaN, and such statistics are ignored on read; see [[WriterStatistics]]).
 *
 * So, per file, for a scan whose pushed-down filters can be true for NaN on a float or double column
 * ([[Conditions.nanSensitiveColumns]]): a file whose `created_by` names a writer known to count NaN in min/max is
 * read as usual (full statistics pruning); any other is read by a reader handed only the pushed conjuncts that
 * cannot be true for NaN ([[Conditions.nanSafe]]): for the others parquet-java prunes nothing (no statistics,
 * page-index or dictionary level), as for a file without statistics, and Spark evaluates them on the rows. Only
 * those scans read a file's `created_by` (once per file and executor, from the footer without its row groups);
 * an unreadable footer counts as an unknown writer.
 */
object NanGuard {

  /**
   * Whether a scan handed `filters` (the conjuncts Spark pushes to parquet-java) under `conf` (the scan's Hadoop
   * conf) needs the per-file check: the guard is on (`spark.sparkbloom.nanGuard.enabled`), a filter can be
   * true for NaN on a float or double column, and statistics or page-index filtering is on.
   */
  def needed(session: SparkSession, filters: Seq[Filter], conf: Configuration): Boolean =
    BloomConf.nanGuard(session) && session.sessionState.conf.parquetFilterPushDown &&
      (conf.getBoolean(BloomParquetFileFormat.StatisticsFiltering, true) ||
        conf.getBoolean(BloomParquetFileFormat.ColumnIndexFiltering, true)) &&
      Conditions.nanSensitiveColumns(filters).nonEmpty

  /** Whether `file`'s writer counts NaN in float and double min/max, so its statistics can be filtered by. */
  def statisticsSafe(conf: Configuration, file: PartitionedFile): Boolean = {
    val path = file.toPath
    val key = (path.toString, file.fileSize, file.modificationTime)
    val known = safe.get(key)
    if (known != null) known.booleanValue
    else {
      val s = try WriterStatistics.countsNaNInMinMax(Footers.createdBy(conf, path, file.fileSize).orNull)
      catch { case NonFatal(_) => false } // Spark's reader reports an unreadable file
      if (safe.size >= MaxFiles) safe.clear()
      safe.put(key, java.lang.Boolean.valueOf(s))
      s
    }
  }

  /** Files whose writer is remembered per executor (keyed by path, size and modification time). */
  final val MaxFiles = 100000
  private val safe = new java.util.concurrent.ConcurrentHashMap[(String, Long, Long), java.lang.Boolean]()
}

package sparkbloom.formats.parquet

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.Expression

import sparkbloom.BloomConf
import sparkbloom.predicate.Conditions
import sparkbloom.scan.BloomParquetFileFormat

/** What Spark's Parquet scans (V1 and V2) need from sparkbloom whatever the indexes say. */
private[parquet] object ParquetGuards {

  /** Native filters prune row groups like Spark's own Parquet pushdown does: not when the user turned it off. */
  def nativeEnabled(session: SparkSession): Boolean =
    BloomConf.nativeFilters(session) && session.sessionState.conf.parquetFilterPushDown

  /**
   * Scan options (they reach the scan's Hadoop conf) that keep parquet-java from dropping matching row groups:
   * its bloom level off (sparkbloom checks the filters itself), and, when the condition compares with a
   * floating-point zero, its dictionary level too: it tests dictionary values with `Double.equals`/`compareTo`,
   * for which -0.0 and 0.0 differ, while in Spark `-0.0 = 0.0` (a file whose chunk holds only -0.0 would lose
   * its rows for `x = 0.0`, `x IN (0.0)`, `x >= 0.0`); and, when it compares with NaN, its statistics and
   * page-index levels: writers following the format (arrow-rs, Arrow C++, DuckDB) leave NaN out of min/max,
   * so `x = NaN` (true for NaN rows in Spark) would drop every row group holding NaNs. Otherwise statistics
   * filtering is safe (parquet-java widens zero bounds on read) and stays on.
   */
  def safeParquetJavaOptions(cond: Expression): Map[String, String] =
    Map(BloomParquetFileFormat.NativeBloomFiltering -> "false") ++
      (if (Conditions.comparesWithFloatingZero(cond)) Map(BloomParquetFileFormat.DictionaryFiltering -> "false")
       else Map.empty) ++
      (if (Conditions.comparesWithNaN(cond))
         Map(BloomParquetFileFormat.StatisticsFiltering -> "false",
           BloomParquetFileFormat.ColumnIndexFiltering -> "false")
       else Map.empty)

  /**
   * Whether a scan filtered by `cond` may need [[sparkbloom.scan.NanGuard]]'s per-file check: the guard is on,
   * Spark pushes filters to Parquet, and `cond` names a float or double column (the pushed filters, known only
   * when the reader is built, decide).
   */
  def nanGuardMayApply(session: SparkSession, cond: Expression): Boolean =
    BloomConf.nanGuard(session) && session.sessionState.conf.parquetFilterPushDown &&
      Conditions.namesFloatingColumn(cond)

  /** The guard options `cond` needs that `options` lacks. */
  def missing(options: Map[String, String], cond: Expression): Map[String, String] =
    safeParquetJavaOptions(cond).filter { case (k, v) => !options.get(k).contains(v) }
}

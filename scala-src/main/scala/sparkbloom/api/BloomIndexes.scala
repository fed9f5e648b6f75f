package sparkbloom.api

import org.apache.spark.sql.SparkSession

import sparkbloom.BloomConf
import sparkbloom.formats.TableFormats
import sparkbloom.index.{
  BackgroundOptimizer, BloomIndexException, ColumnSpec, IndexDescription, IndexManager, IndexOptionParser,
  ResolvedTable, TableRef, TableResolver
}

/**
 * The one facade every front end calls: the SQL commands, the Scala API and (through [[PythonApi]]) the Python
 * package. A table is resolved through the table formats ([[TableFormats]]: Parquet, Delta Lake, Iceberg), then
 * its indexes are managed by the index layer ([[IndexManager]]). User errors are
 * `sparkbloom.index.BloomIndexException`s raised before anything is written; a failed build leaves the previous
 * version in force.
 * {{{
 *   BloomIndexes.create(spark, TableRef.Catalog("events"), "by_user", Seq(ColumnSpec("user_id")), Map.empty,
 *     ifNotExists = false)
 * }}}
 */
object BloomIndexes {
  /** `table` resolved for indexing; `refresh`: a catalog table's cached listing is refreshed first. */
  def resolve(spark: SparkSession, table: TableRef, refresh: Boolean = false): ResolvedTable =
    TableResolver.resolve(spark, table, TableFormats.all, refresh)

  def create(spark: SparkSession, table: TableRef, name: String, columns: Seq[ColumnSpec],
             options: Map[String, String], ifNotExists: Boolean): IndexDescription =
    resizeIfOverBudget(spark, table,
      IndexManager.create(spark, resolve(spark, table, refresh = true), name, columns, options, ifNotExists))

  def drop(spark: SparkSession, table: TableRef, name: String, ifExists: Boolean): Boolean =
    IndexManager.drop(spark, resolve(spark, table), name, ifExists)

  /**
   * Removes columns from an index in one new version (the remaining columns' entries are copied, nothing
   * is rescanned). Removing every column drops the index. Unknown columns are an error.
   */
  def dropColumns(spark: SparkSession, table: TableRef, name: String, columns: Seq[String]): Option[IndexDescription] =
    IndexManager.dropColumns(spark, resolve(spark, table), name, columns)

  def refresh(spark: SparkSession, table: TableRef, name: String, full: Boolean): IndexDescription =
    resizeIfOverBudget(spark, table, IndexManager.refresh(spark, resolve(spark, table, refresh = true), name, full))

  /**
   * An index whose harvested filters miss its false-read budget ([[IndexManager.harvestedOverBudget]]) is built again
   * to the budget by OPTIMIZE BLOOM INDEX in the background (`spark.sparkbloom.harvest.resizeInBackground`, on by
   * default): the statement returns as soon as the harvested index is committed, and lookups use it meanwhile.
   */
  private def resizeIfOverBudget(spark: SparkSession, table: TableRef, d: IndexDescription): IndexDescription = {
    if (d.harvestedOverBudget.nonEmpty && BloomConf.harvestResizeInBackground(spark))
      BackgroundOptimizer.submit(spark, d.location,
        s"bloom index ${d.name} of ${d.table} (harvested filters over the budget: " +
          s"${d.harvestedOverBudget.mkString(", ")})") {
        optimize(spark, table, d.name)
      }
    d
  }

  /** OPTIMIZE BLOOM INDEX (see IndexManager.optimize); the index as it is after. */
  def optimize(spark: SparkSession, table: TableRef, name: String): IndexDescription = {
    val t = resolve(spark, table, refresh = true)
    IndexManager.optimize(spark, t, name)
    IndexManager.describe(spark, t, name)
  }

  /**
   * VACUUM BLOOM INDEX (see IndexManager.vacuum): `retainHours` defaults to 168, and less is refused unless
   * `spark.sparkbloom.vacuum.retentionDurationCheck.enabled` is false (as Delta's VACUUM). (versions, directories)
   * removed.
   */
  def vacuum(spark: SparkSession, table: TableRef, name: String, retainHours: Option[Double]): (Int, Int) = {
    val hours = retainHours.getOrElse(IndexManager.DefaultRetainHours)
    if (hours < IndexManager.DefaultRetainHours && BloomConf.vacuumRetentionCheck(spark))
      throw new BloomIndexException(s"VACUUM BLOOM INDEX $name RETAIN $hours HOURS would remove versions a query " +
        s"running for less than ${IndexManager.DefaultRetainHours.toInt} hours may still read; set " +
        s"${BloomConf.VacuumRetentionCheck}=false to allow a shorter retention")
    IndexManager.vacuum(spark, resolve(spark, table), name, hours)
  }

  def list(spark: SparkSession, table: TableRef): Seq[IndexDescription] =
    IndexManager.list(spark, resolve(spark, table))

  /** `verify`: also read every run and check its CRC (indexes that fit `spark.sparkbloom.cache.maxBytes`). */
  def describe(spark: SparkSession, table: TableRef, name: String, verify: Boolean = false): IndexDescription =
    IndexManager.describe(spark, resolve(spark, table), name, verify)

  /** Option key of the table-wide false-read budget. */
  val FalseReadsPerKeyKey: String = IndexOptionParser.FalseReadsPerKeyKey
  val MaintainOnWriteKey: String = IndexOptionParser.MaintainOnWriteKey
}

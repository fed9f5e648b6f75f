package sparkbloom.index

import org.apache.spark.sql.SparkSession

/**
 * The one facade every front end calls: the SQL commands, the Scala API and (through
 * `sparkbloom.api.PythonApi`) the Python package. Errors are [[BloomIndexException]]s raised before
 * anything is written.
 */
object BloomIndexes {
  def create(spark: SparkSession, table: TableRef, name: String, columns: Seq[ColumnSpec],
             options: Map[String, String], ifNotExists: Boolean): IndexDescription = ???
  def drop(spark: SparkSession, table: TableRef, name: String, ifExists: Boolean): Boolean = ???
  def refresh(spark: SparkSession, table: TableRef, name: String, full: Boolean): IndexDescription = ???
  def list(spark: SparkSession, table: TableRef): Seq[IndexDescription] = ???
  def describe(spark: SparkSession, table: TableRef, name: String): IndexDescription = ???
}

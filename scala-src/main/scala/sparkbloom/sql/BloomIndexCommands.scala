package sparkbloom.sql

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand

import org.apache.spark.sql.types.StringType

import sparkbloom.api.{BloomIndexes, PythonApi}
import sparkbloom.index.{ColumnSpec, TableRef}

// The commands the parser produces. Each is thin: it calls the facade (the same one the Scala and Python
// APIs call) and turns the answer into rows (see CommandOutput for the schemas). Validation of
// names, tables and columns happens in the facade; validation of syntax and option values in the parser.

/** CREATE BLOOM INDEX; also Databricks' CREATE BLOOMFILTER INDEX, as the index named `bloomfilter`. */
case class CreateBloomIndexCommand(
    table: TableRef,
    name: String,
    columns: Seq[ColumnSpec],
    options: Map[String, String],
    ifNotExists: Boolean,
    override val output: Seq[Attribute] = CommandOutput.summarySchema) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] =
    Seq(CommandOutput.summaryRow(BloomIndexes.create(spark, table, name, columns, options, ifNotExists)))
}

/** DROP BLOOM INDEX; also Databricks' DROP BLOOMFILTER INDEX without a column list. Returns no rows. */
case class DropBloomIndexCommand(table: TableRef, name: String, ifExists: Boolean) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] = {
    BloomIndexes.drop(spark, table, name, ifExists)
    Seq.empty
  }
}

/** REFRESH BLOOM INDEX ... [FULL | INCREMENTAL]: one row about the version just written. */
case class RefreshBloomIndexCommand(
    table: TableRef,
    name: String,
    full: Boolean,
    override val output: Seq[Attribute] = CommandOutput.summarySchema) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] =
    Seq(CommandOutput.summaryRow(BloomIndexes.refresh(spark, table, name, full)))
}

/** OPTIMIZE BLOOM INDEX: small segments merged, filters re-sized for the table as it is (see IndexManager.optimize). */
case class OptimizeBloomIndexCommand(
    table: TableRef,
    name: String,
    override val output: Seq[Attribute] = CommandOutput.summarySchema) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] =
    Seq(CommandOutput.summaryRow(BloomIndexes.optimize(spark, table, name)))
}

/** VACUUM BLOOM INDEX: the versions no reader may still use removed, with Delta's retention (IndexManager.vacuum). */
case class VacuumBloomIndexCommand(
    table: TableRef,
    name: String,
    retainHours: Option[Double],
    override val output: Seq[Attribute] = CommandOutput.vacuumSchema) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] = {
    val (versions, dirs) = BloomIndexes.vacuum(spark, table, name, retainHours)
    Seq(Row(name, versions.toLong, dirs.toLong))
  }
}

/** SHOW BLOOM INDEXES: one row per index on the table. */
case class ShowBloomIndexesCommand(
    table: TableRef,
    override val output: Seq[Attribute] = CommandOutput.showSchema) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] =
    BloomIndexes.list(spark, table).map(CommandOutput.showRow)
}

/** DESCRIBE BLOOM INDEX: `info_name`, `info_value` rows. */
case class DescribeBloomIndexCommand(
    table: TableRef,
    name: String,
    override val output: Seq[Attribute] = CommandOutput.describeSchema) extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] =
    CommandOutput.describeRows(BloomIndexes.describe(spark, table, name, verify = true))
}

/**
 * Databricks' DROP BLOOMFILTER INDEX ... FOR COLUMNS (c, ...): removes those columns from the
 * `bloomfilter` index, in one new version (nothing is rescanned). When none remain the index is dropped.
 */
case class DropBloomFilterColumnsCommand(table: TableRef, columns: Seq[String]) extends LeafRunnableCommand {
  import DropBloomFilterColumnsCommand.IndexName

  override def run(spark: SparkSession): Seq[Row] = {
    BloomIndexes.dropColumns(spark, table, IndexName, columns)
    Seq.empty
  }
}

object DropBloomFilterColumnsCommand {
  /** The index Databricks' statements create and drop: they name no index, so all share this one. */
  val IndexName = "bloomfilter"
}

/**
 * `SPARKBLOOM API method 'json'`: one call of the Python helpers ([[PythonApi.call]]) made over SQL, for a client
 * that has no py4j gateway to the driver (Spark Connect). One row, column `result`: the call's JSON answer.
 */
case class SparkBloomApiCommand(
    method: String,
    arguments: String,
    override val output: Seq[Attribute] = Seq(AttributeReference("result", StringType, nullable = false)()))
  extends LeafRunnableCommand {
  override def run(spark: SparkSession): Seq[Row] = Seq(Row(PythonApi.call(spark, method, arguments)))
}

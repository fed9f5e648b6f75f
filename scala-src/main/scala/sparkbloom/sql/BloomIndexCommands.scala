package sparkbloom.sql

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.internal.SQLConf

import sparkbloom.index.{BloomIndexException, BloomIndexes, ColumnSpec, TableRef}

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
    CommandOutput.describeRows(BloomIndexes.describe(spark, table, name))
}

/**
 * Databricks' DROP BLOOMFILTER INDEX ... FOR COLUMNS (c, ...): removes those columns from the
 * `bloomfilter` index. When none remain the index is dropped; otherwise it is rebuilt over the rest
 * with its table-level options (drop, then create: an interrupted rebuild leaves no index).
 */
case class DropBloomFilterColumnsCommand(table: TableRef, columns: Seq[String]) extends LeafRunnableCommand {
  import DropBloomFilterColumnsCommand.IndexName

  override def run(spark: SparkSession): Seq[Row] = {
    val resolver = SQLConf.get.resolver
    val current = BloomIndexes.describe(spark, table, IndexName)
    val unknown = columns.filterNot(c => current.columns.exists(s => resolver(s.name, c)))
    if (unknown.nonEmpty) {
      throw new BloomIndexException(
        s"Column(s) ${unknown.mkString(", ")} not in bloom index $IndexName on ${table.display}; " +
          s"its columns are ${current.columns.map(_.name).mkString(", ")}")
    }
    val remaining = current.columns.filterNot(s => columns.exists(c => resolver(s.name, c)))
    BloomIndexes.drop(spark, table, IndexName, ifExists = false)
    if (remaining.nonEmpty) {
      val options = Map("fpp" -> current.fpp.toString) ++ current.ndv.map("ndv" -> _.toString)
      BloomIndexes.create(spark, table, IndexName, remaining, options, ifNotExists = false)
    }
    Seq.empty
  }
}

object DropBloomFilterColumnsCommand {
  /** The index Databricks' statements create and drop: they name no index, so all share this one. */
  val IndexName = "bloomfilter"
}

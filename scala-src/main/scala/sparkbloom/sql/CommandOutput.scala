package sparkbloom.sql

import java.time.Instant

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.types._

import sparkbloom.index.{ColumnSpec, IndexDescription}

/**
 * The rows the commands return, and their schemas. Each schema is a `def`: every command instance
 * gets attributes of its own (fresh expression ids), as Spark's own commands do.
 */
private[sql] object CommandOutput {
  private def attr(name: String, dataType: DataType, nullable: Boolean = false): Attribute =
    AttributeReference(name, dataType, nullable)()

  /** CREATE and REFRESH: one row about the version just written. */
  def summarySchema: Seq[Attribute] = Seq(
    attr("name", StringType),
    attr("version", LongType),
    attr("files_indexed", LongType),
    attr("row_groups_indexed", LongType),
    attr("size_in_bytes", LongType))

  def summaryRow(d: IndexDescription): Row =
    Row(d.name, d.version, d.filesCovered, d.rowGroupsCovered, d.sizeInBytes)

  /** SHOW BLOOM INDEXES: one row per index. `ndv` is null when the index sets no cap. */
  def showSchema: Seq[Attribute] = Seq(
    attr("name", StringType),
    attr("columns", ArrayType(StringType, containsNull = false)),
    attr("fpp", DoubleType),
    attr("ndv", LongType, nullable = true),
    attr("version", LongType),
    attr("files_covered", LongType),
    attr("row_groups_covered", LongType),
    attr("size_in_bytes", LongType),
    attr("files_not_covered", LongType))

  def showRow(d: IndexDescription): Row =
    Row(d.name, d.columns.map(_.name), d.fpp, d.ndv.map(Long.box).orNull, d.version, d.filesCovered,
      d.rowGroupsCovered, d.sizeInBytes, d.filesNotCovered)

  /** DESCRIBE BLOOM INDEX: name / value rows, like DESCRIBE DATABASE or DESCRIBE TABLE EXTENDED. */
  def describeSchema: Seq[Attribute] = Seq(attr("info_name", StringType), attr("info_value", StringType))

  def describeRows(d: IndexDescription): Seq[Row] = {
    val facts = Seq(
      "Index Name" -> d.name,
      "Table" -> d.table,
      "Location" -> d.location,
      "Columns" -> d.columns.map(_.name).mkString(", ")) ++
      d.columns.map(c => s"Column ${c.name}" -> columnOptions(c)) ++ Seq(
      "FPP" -> d.fpp.toString,
      "NDV" -> d.ndv.fold("none")(_.toString),
      "Version" -> d.version.toString,
      "Created At" -> Instant.ofEpochMilli(d.createdAtMillis).toString,
      "Files Covered" -> d.filesCovered.toString,
      "Row Groups Covered" -> d.rowGroupsCovered.toString,
      "Filters Harvested" -> d.filtersHarvested.toString,
      "Filters Scanned" -> d.filtersScanned.toString,
      "Size In Bytes" -> d.sizeInBytes.toString,
      "Files In Table" -> d.filesInTable.toString,
      "Files Not Covered" -> d.filesNotCovered.toString,
      "Files Deleted" -> d.filesDeleted.toString) ++
      (if (d.problems.isEmpty) Seq("Problems" -> "none") else d.problems.map("Problem" -> _))
    facts.map { case (name, value) => Row(name, value) }
  }

  /** A column's own options, or what it inherits. */
  private def columnOptions(c: ColumnSpec): String = {
    val own = c.fpp.map(v => s"fpp=$v").toSeq ++ c.ndv.map(v => s"ndv=$v")
    if (own.isEmpty) "index options" else own.mkString(", ")
  }
}

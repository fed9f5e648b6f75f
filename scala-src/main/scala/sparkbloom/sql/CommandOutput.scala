package sparkbloom.sql

import java.time.Instant

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.types._

import sparkbloom.index.{ColumnSpec, ColumnStats, IndexDescription}

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

  def vacuumSchema: Seq[Attribute] =
    Seq(attr("name", StringType), attr("versions_removed", LongType), attr("directories_removed", LongType))

  def summaryRow(d: IndexDescription): Row =
    Row(d.name, d.version, d.filesCovered, d.rowGroupsCovered, d.sizeInBytes)

  /**
   * SHOW BLOOM INDEXES: one row per index. `ndv` is null when the index sets no cap; `fpp` is null for an
   * index sized by its false-read budget, `false_reads_per_key` null for one sized by a fixed fpp.
   */
  def showSchema: Seq[Attribute] = Seq(
    attr("name", StringType),
    attr("columns", ArrayType(StringType, containsNull = false)),
    attr("fpp", DoubleType, nullable = true),
    attr("ndv", LongType, nullable = true),
    attr("version", LongType),
    attr("files_covered", LongType),
    attr("row_groups_covered", LongType),
    attr("size_in_bytes", LongType),
    attr("files_not_covered", LongType),
    attr("false_reads_per_key", DoubleType, nullable = true))

  def showRow(d: IndexDescription): Row =
    Row(d.name, d.columns.map(_.name), d.fpp.map(Double.box).orNull, d.ndv.map(Long.box).orNull, d.version,
      d.filesCovered, d.rowGroupsCovered, d.sizeInBytes, d.filesNotCovered, d.falseReadsPerKey.map(Double.box).orNull)

  /** DESCRIBE BLOOM INDEX: name / value rows, like DESCRIBE DATABASE or DESCRIBE TABLE EXTENDED. */
  def describeSchema: Seq[Attribute] = Seq(attr("info_name", StringType), attr("info_value", StringType))

  def describeRows(d: IndexDescription): Seq[Row] = {
    val facts = Seq(
      "Index Name" -> d.name,
      "Table" -> d.table,
      "Location" -> d.location,
      "Columns" -> d.columns.map(_.name).mkString(", ")) ++
      d.columns.map(c => s"Column ${c.name}" -> columnOptions(c)) ++
      Seq(
        "False Reads Per Key" -> d.falseReadsPerKey.fold("none")(_.toString),
        "FPP" -> d.fpp.fold("none")(_.toString),
        "NDV" -> d.ndv.fold("none")(_.toString),
        "Maintain On Write" -> d.maintainOnWrite.toString) ++
      perColumn(d, "Sizing")(d.policies.lift) ++
      perColumn(d, "Expected False Reads Per Key")(stat(d, _)(s => f"${s.expectedFalseReadsPerKey}%.4g")) ++
      perColumn(d, "Expected False Reads Per Present Key")(i =>
        stat(d, i)(_.expectedFalseReadsPerPresentKey.map(p => f"$p%.4g")).flatten) ++
      perColumn(d, "Bytes Per Value")(stat(d, _)(s =>
          s.bytesPerValue.fold("unknown (harvested filters)")(b => f"$b%.2f"))) ++
      d.maxBitsPerValue.map(b =>
        "Max Bits Per Value" ->
          (s"$b; past it the expected false reads rise instead; row groups there: " +
            d.columnStats.map(s => s"${s.column} ${s.rowGroupsAtCeiling} of ${s.rowGroups}").mkString(", "))).toSeq ++
      Seq(
        "Version" -> d.version.toString,
        "Versions Kept" -> d.versions.toString,
        "Commit Safety" -> d.commitSafety,
        "Created At" -> Instant.ofEpochMilli(d.createdAtMillis).toString,
        "Files Covered" -> d.filesCovered.toString,
        "Row Groups Covered" -> d.rowGroupsCovered.toString,
        "Filters Harvested" -> d.filtersHarvested.toString,
        "Filters Scanned" -> d.filtersScanned.toString,
        "Size In Bytes" -> d.sizeInBytes.toString,
        "Layout" -> d.levels,
        "Segment Files" -> d.segments.toString,
        "Files In Table" -> d.filesInTable.toString,
        "Files Not Covered" -> d.filesNotCovered.toString,
        "Files Deleted" -> d.filesDeleted.toString) ++
      d.snapshotCovered.map("Table Version Covered" -> _).toSeq ++ d.snapshotNow.map("Table Version Now" -> _).toSeq ++
      Seq(
        "Lookups (this driver)" -> d.usage.lookups.toString,
        "Files Skipped (this driver)" -> d.usage.filesSkipped.toString,
        "Row Groups Skipped (this driver)" -> d.usage.rowGroupsSkipped.toString,
        "Index Bytes Read (this driver)" -> d.usage.indexBytesRead.toString,
        "Probe Time (this driver)" -> f"${d.usage.probeTimeNs / 1e6}%.1f ms") ++
      (if (d.problems.isEmpty) Seq("Problems" -> "none") else d.problems.map("Problem" -> _))
    facts.map { case (name, value) => Row(name, value) }
  }

  /** "c1: v1; c2: v2" over the columns that have a value, or nothing when none has. */
  private def perColumn(d: IndexDescription, name: String)(value: Int => Option[String]): Seq[(String, String)] = {
    val parts = d.columns.indices.flatMap(i => value(i).map(v => s"${d.columns(i).name}: $v"))
    if (parts.isEmpty) Nil else Seq(name -> parts.mkString("; "))
  }

  private def stat[T](d: IndexDescription, i: Int)(show: ColumnStats => T): Option[T] =
    d.columnStats.find(_.column == d.columns(i).name).map(show)

  /** A column's own options, or what it inherits. */
  private def columnOptions(c: ColumnSpec): String = {
    val own = c.fpp.map(v => s"fpp=$v").toSeq ++ c.falseReadsPerKey.map(v => s"false_reads_per_key=$v") ++
      c.ndv.map(v => s"ndv=$v")
    if (own.isEmpty) "index options" else own.mkString(", ")
  }
}

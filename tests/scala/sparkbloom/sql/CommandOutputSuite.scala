package sparkbloom.sql

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.index.{ColumnSpec, ColumnStats, IndexDescription}

/** The rows SHOW, DESCRIBE, CREATE and REFRESH return for an index description. */
class CommandOutputSuite extends AnyFunSuite {
  private val description = IndexDescription(
    name = "by_user", table = "db.events", location = "/lake/events/_sparkbloom/by_user",
    columns = Seq(ColumnSpec("user_id", Some(0.001), Some(5000L)), ColumnSpec("session")),
    fpp = Some(0.01), ndv = None, version = 3, createdAtMillis = 86400000L,
    filesCovered = 200, rowGroupsCovered = 410, filtersHarvested = 10, filtersScanned = 810,
    sizeInBytes = 123456, filesInTable = 203, filesNotCovered = 3, filesDeleted = 1, problems = Nil)

  private def schema(attrs: Seq[org.apache.spark.sql.catalyst.expressions.Attribute]): Seq[(String, DataType)] =
    attrs.map(a => a.name -> a.dataType)

  test("CREATE and REFRESH return one summary row of the version written") {
    assert(schema(CommandOutput.summarySchema) == Seq("name" -> StringType, "version" -> LongType,
      "files_indexed" -> LongType, "row_groups_indexed" -> LongType, "size_in_bytes" -> LongType))
    assert(CommandOutput.summaryRow(description) == Row("by_user", 3L, 200L, 410L, 123456L))
  }

  test("SHOW returns one row per index with its columns and options, ndv null when uncapped") {
    assert(schema(CommandOutput.showSchema) == Seq("name" -> StringType,
      "columns" -> ArrayType(StringType, containsNull = false), "fpp" -> DoubleType, "ndv" -> LongType,
      "version" -> LongType, "files_covered" -> LongType, "row_groups_covered" -> LongType,
      "size_in_bytes" -> LongType, "files_not_covered" -> LongType, "false_reads_per_key" -> DoubleType))
    assert(CommandOutput.showSchema.map(_.nullable) == Seq(false, false, true, true, false, false, false, false, false,
      true))
    assert(CommandOutput.showRow(description) ==
      Row("by_user", Seq("user_id", "session"), 0.01, null, 3L, 200L, 410L, 123456L, 3L, null))
    assert(CommandOutput.showRow(description.copy(fpp = None, falseReadsPerKey = Some(0.1))) ==
      Row("by_user", Seq("user_id", "session"), null, null, 3L, 200L, 410L, 123456L, 3L, 0.1))
    assert(CommandOutput.showRow(description.copy(ndv = Some(99L))).get(3) == 99L)
  }

  test("DESCRIBE returns name / value rows, one per fact, one per column and one per problem") {
    assert(schema(CommandOutput.describeSchema) == Seq("info_name" -> StringType, "info_value" -> StringType))
    assert(CommandOutput.describeRows(description) == Seq(
      Row("Index Name", "by_user"),
      Row("Table", "db.events"),
      Row("Location", "/lake/events/_sparkbloom/by_user"),
      Row("Columns", "user_id, session"),
      Row("Column user_id", "fpp=0.001, ndv=5000"),
      Row("Column session", "index options"),
      Row("False Reads Per Key", "none"),
      Row("FPP", "0.01"),
      Row("NDV", "none"),
      Row("Maintain On Write", "true"),
      Row("Version", "3"),
      Row("Versions Kept", "1"),
      Row("Commit Safety", ""),
      Row("Created At", "1970-01-02T00:00:00Z"),
      Row("Files Covered", "200"),
      Row("Row Groups Covered", "410"),
      Row("Filters Harvested", "10"),
      Row("Filters Scanned", "810"),
      Row("Size In Bytes", "123456"),
      Row("Layout", ""),
      Row("Segment Files", "0"),
      Row("Files In Table", "203"),
      Row("Files Not Covered", "3"),
      Row("Files Deleted", "1"),
      Row("Lookups (this driver)", "0"),
      Row("Files Skipped (this driver)", "0"),
      Row("Row Groups Skipped (this driver)", "0"),
      Row("Index Bytes Read (this driver)", "0"),
      Row("Probe Time (this driver)", "0.0 ms"),
      Row("Problems", "none")))
    val damaged = CommandOutput.describeRows(description.copy(problems = Seq("bad footer in part-1", "missing part-2")))
    assert(damaged.takeRight(2) == Seq(Row("Problem", "bad footer in part-1"), Row("Problem", "missing part-2")))
  }

  test("DESCRIBE shows the budget, each column's sizing, expected false reads, bytes per value and the ceiling") {
    val budgeted = description.copy(fpp = None, falseReadsPerKey = Some(0.1),
      columns = Seq(ColumnSpec("user_id"), ColumnSpec("session", fpp = Some(0.001))),
      policies = Seq("false_reads_per_key=0.1", "fpp=0.001 per row group"), maxBitsPerValue = Some(32.0),
      columnStats = Seq(ColumnStats("user_id", 410, 100000, 40000, 100000, 0.0912, 3),
        ColumnStats("session", 410, 23456, 0, 0, 0.41, 0)))
    val rows = CommandOutput.describeRows(budgeted).map(r => r.getString(0) -> r.getString(1)).toMap
    assert(rows("False Reads Per Key") == "0.1")
    assert(rows("FPP") == "none")
    assert(rows("Sizing") == "user_id: false_reads_per_key=0.1; session: fpp=0.001 per row group")
    assert(rows("Expected False Reads Per Key") == "user_id: 0.09120; session: 0.4100")
    assert(rows("Bytes Per Value") == "user_id: 2.50; session: unknown (harvested filters)")
    assert(rows("Max Bits Per Value") ==
      "32.0; past it the expected false reads rise instead; row groups there: user_id 3 of 410, session 0 of 410")
  }

  test("DESCRIBE of a version written before the budget existed shows no figures it does not have") {
    val rows = CommandOutput.describeRows(description).map(_.getString(0))
    assert(!rows.contains("Expected False Reads Per Key") && !rows.contains("Max Bits Per Value"))
  }
}

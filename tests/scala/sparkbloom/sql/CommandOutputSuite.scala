package sparkbloom.sql

import org.apache.spark.sql.Row
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.index.{ColumnSpec, IndexDescription}

/** The rows SHOW, DESCRIBE, CREATE and REFRESH return for an index description. */
class CommandOutputSuite extends AnyFunSuite {
  private val description = IndexDescription(
    name = "by_user", table = "db.events", location = "/lake/events/_sparkbloom/by_user",
    columns = Seq(ColumnSpec("user_id", Some(0.001), Some(5000L)), ColumnSpec("session")),
    fpp = 0.01, ndv = None, version = 3, createdAtMillis = 86400000L,
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
      "size_in_bytes" -> LongType, "files_not_covered" -> LongType))
    assert(CommandOutput.showSchema.map(_.nullable) == Seq(false, false, false, true, false, false, false, false, false))
    assert(CommandOutput.showRow(description) ==
      Row("by_user", Seq("user_id", "session"), 0.01, null, 3L, 200L, 410L, 123456L, 3L))
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
      Row("FPP", "0.01"),
      Row("NDV", "none"),
      Row("Version", "3"),
      Row("Created At", "1970-01-02T00:00:00Z"),
      Row("Files Covered", "200"),
      Row("Row Groups Covered", "410"),
      Row("Filters Harvested", "10"),
      Row("Filters Scanned", "810"),
      Row("Size In Bytes", "123456"),
      Row("Files In Table", "203"),
      Row("Files Not Covered", "3"),
      Row("Files Deleted", "1"),
      Row("Problems", "none")))
    val damaged = CommandOutput.describeRows(description.copy(problems = Seq("bad footer in part-1", "missing part-2")))
    assert(damaged.takeRight(2) == Seq(Row("Problem", "bad footer in part-1"), Row("Problem", "missing part-2")))
  }
}

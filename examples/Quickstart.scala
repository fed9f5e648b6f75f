// sparkbloom from Scala: the same facade the SQL statements and the Python package call.
//
// A spark-shell script. Give the shell sparkbloom's jars, extension and JVM flags, then load it:
//   python -m sparkbloom conf > /tmp/sparkbloom.conf             # or write the four properties by hand
//   spark-shell --properties-file /tmp/sparkbloom.conf -i examples/Quickstart.scala   # stays in the shell
//   spark-shell --properties-file /tmp/sparkbloom.conf < examples/Quickstart.scala    # exits when done
// In a compiled application, put the lines below in a method taking the SparkSession `spark`.
import sparkbloom.api.BloomIndexes
import sparkbloom.index.{ColumnSpec, TableRef}
import sparkbloom.scan.SkippingReport

val quickstartPath = java.nio.file.Files.createTempDirectory("sparkbloom-quickstart").resolve("events").toString

// 20 Parquet files; user_id is scattered over all of them, so min/max statistics cannot skip any.
spark.range(0, 200000, 1, 20)
  .selectExpr("(id * 7919) % 200000 AS user_id", "concat('session-', id) AS session", "id % 7 AS kind")
  .write.parquet(quickstartPath)

// CREATE BLOOM INDEX quickstart_user ON parquet.`<path>` (user_id) OPTIONS (fpp = 0.01)
val quickstartTable = TableRef.Path(quickstartPath)
val quickstartIndex = BloomIndexes.create(spark, quickstartTable, "quickstart_user",
  Seq(ColumnSpec("user_id")), Map("fpp" -> "0.01"), ifNotExists = true)
println(s"${quickstartIndex.name} on ${quickstartIndex.table}: ${quickstartIndex.filesCovered} files, " +
  s"${quickstartIndex.sizeInBytes} bytes")

val lookup = spark.read.parquet(quickstartPath).where("user_id = 4242")
lookup.show()
SkippingReport.forPlan(lookup.queryExecution.executedPlan).foreach { s =>
  println(
    s"${s.index}: read ${s.filesKept} of ${s.filesTotal} files, ${s.rowGroupsKept} of ${s.rowGroupsTotal} row groups")
}

BloomIndexes.drop(spark, quickstartTable, "quickstart_user", ifExists = true)

package sparkbloom.scan

import scala.io.Source

import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.functions._

import sparkbloom.api.BloomIndexes
import sparkbloom.index.{ColumnSpec, ScanSkipping, TableRef}
import sparkbloom.index.sliced.IndexCache
import sparkbloom.testing.SparkSessionSuite

/**
 * The SQL metrics of bloom-pruned scans: on the executed plan, in the SQL status store the UI
 * renders, and through the UI's REST API of a real session with the UI on. The figures equal what
 * `sparkbloom.skipping` reports, and the rows equal the index-off query.
 */
class ScanMetricsSuite extends SparkSessionSuite {
  // This suite needs the UI (its REST API is what the SQL tab shows); port 0 = any free port.
  override protected def sparkConf: Map[String, String] = Map("spark.ui.enabled" -> "true", "spark.ui.port" -> "0")

  private lazy val table: String = {
    val dir = tempDir("metrics") + "/t"
    spark.range(0, 20000, 1, 20).select(col("id"), concat(lit("k-"), col("id")).as("s")).write.parquet(dir)
    BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
      ifNotExists = false)
    dir
  }

  private def metricsNodes(df: DataFrame): Seq[BloomScanMetricsExec] =
    collect(df.queryExecution.executedPlan) { case m: BloomScanMetricsExec => m }

  /**
   * The newest finished SQL execution whose plan has the metrics node (the listener bus is asynchronous:
   * waits up to 20 s for it to show up in the status store).
   */
  private def lastBloomExecution(after: Long = -1L): Long = {
    val store = spark.sharedState.statusStore
    val deadline = System.nanoTime() + 20L * 1000000000L
    var found: Option[Long] = None
    while (found.isEmpty && System.nanoTime() < deadline) {
      found = store.executionsList().filter(e =>
        e.completionTime.isDefined &&
          e.physicalPlanDescription.contains("BloomIndexSkipping")).map(_.executionId).filter(_ > after)
        .reduceOption(_ max _)
      if (found.isEmpty) Thread.sleep(100)
    }
    found.getOrElse(fail("no finished execution with a BloomIndexSkipping node in the SQL status store"))
  }

  /** name -> value string of every metric of the newest bloom-pruned SQL execution, as the SQL tab shows them. */
  private def statusStoreMetrics(): Map[String, String] = {
    val store = spark.sharedState.statusStore
    val id = lastChecked
    val exec = store.execution(id).get
    val values = store.executionMetrics(id)
    exec.metrics.flatMap(m => values.get(m.accumulatorId).map(v => m.name -> v)).toMap
  }

  @volatile private var lastChecked = -1L

  private def check(query: => DataFrame, expectFiles: Long): ScanSkipping = {
    val df = query
    val before = spark.sharedState.statusStore.executionsList().map(_.executionId).reduceOption(_ max _).getOrElse(-1L)
    val rows = df.collect().toSeq
    lastChecked = lastBloomExecution(after = before)
    val off = withIndexEnabled(on = false)(query.collect().toSeq)
    assert(sortRows(rows) == sortRows(off) && rows.nonEmpty)
    val nodes = metricsNodes(df)
    assert(nodes.size == 1, df.queryExecution.executedPlan.treeString)
    val k = SkippingReport.forPlan(df.queryExecution.executedPlan).head
    val m = nodes.head.metrics
    assert(m("filesSkipped").value == k.filesTotal - k.filesKept)
    assert(m("rowGroupsSkipped").value == k.rowGroupsTotal - k.rowGroupsKept)
    assert(m("indexBytesRead").value == k.indexBytesRead)
    assert(k.filesKept == expectFiles, k)
    // Spark's own scan, under the metrics node, read only the kept files.
    val scanned = collect(df.queryExecution.executedPlan) { case s: FileSourceScanExec =>
      s.metrics("numFiles").value
    }.sum
    assert(scanned == expectFiles)
    k
  }

  test(
    "a point lookup without an exchange (no AQE stage) has the metrics node over its scan, with the skipping figures") {
    IndexCache.clear()
    val k = check(spark.read.parquet(table).where(col("id") === 777L), expectFiles = 1)
    assert(k.filesTotal == 20 && k.indexBytesRead > 0)
    val shown = statusStoreMetrics()
    assert(shown("files skipped by bloom indexes") == "19", shown)
    assert(shown.contains("bloom index bytes read") && shown.contains("bloom index probe time"), shown)
    assert(shown("number of files read") == "1", shown)
  }

  test("an aggregate (AQE query stages) keeps the node and its figures; a warm lookup reads no index bytes") {
    val q = spark.read.parquet(table).where(col("s").isin("k-5", "k-19999", "absent"))
    val df = q.groupBy(col("s")).count()
    val before = spark.sharedState.statusStore.executionsList().map(_.executionId).reduceOption(_ max _).getOrElse(-1L)
    val rows = df.collect()
    lastChecked = lastBloomExecution(after = before)
    assert(rows.map(_.getString(0)).sorted.toSeq == Seq("k-19999", "k-5"))
    val nodes = metricsNodes(df)
    assert(nodes.size == 1, df.queryExecution.executedPlan.treeString)
    assert(nodes.head.metrics("filesSkipped").value == 18)
    assert(statusStoreMetrics()("files skipped by bloom indexes") == "18")
    val warm = check(spark.read.parquet(table).where(col("id") === 777L), expectFiles = 1)
    assert(warm.indexBytesRead == 0)
  }

  test("the Spark UI's REST API shows the metrics of the executed plan") {
    check(spark.read.parquet(table).where(col("s") === "k-12345"), expectFiles = 1)
    val id = lastChecked
    val ui = spark.sparkContext.uiWebUrl.get
    val url = s"$ui/api/v1/applications/${spark.sparkContext.applicationId}/sql/$id?details=true"
    val json = {
      val src = Source.fromURL(url);
      try src.mkString
      finally src.close()
    }
    assert(json.contains("\"nodeName\" : \"BloomIndexSkipping\""), json.take(2000))
    assert(json.contains("files skipped by bloom indexes"), json.take(2000))
    val node = spark.read.json(spark.createDataset(Seq(json))(org.apache.spark.sql.Encoders.STRING))
      .selectExpr("explode(nodes) AS n").where("n.nodeName = 'BloomIndexSkipping'")
      .selectExpr("explode(n.metrics) AS m").where("m.name = 'files skipped by bloom indexes'").select(
        "m.value").collect()
    assert(node.map(_.getString(0)).toSeq == Seq("19"))
  }

  test("DESCRIBE BLOOM INDEX sums the same figures over the lookups this driver planned") {
    def usage() = spark.sql(s"DESCRIBE BLOOM INDEX ix ON parquet.`$table`").collect().map(r =>
      r.getString(0) -> r.getString(1)).toMap
    val before = usage()
    IndexCache.clear()
    val k = check(spark.read.parquet(table).where(col("id") === 4242L), expectFiles = 1)
    val after = usage()
    def n(m: Map[String, String], key: String) = m(key).toLong
    assert(n(after, "Lookups (this driver)") == n(before, "Lookups (this driver)") + 1)
    assert(n(after, "Files Skipped (this driver)") - n(before, "Files Skipped (this driver)") ==
      k.filesTotal - k.filesKept)
    assert(n(after, "Index Bytes Read (this driver)") - n(before, "Index Bytes Read (this driver)") == k.indexBytesRead)
    assert(k.indexBytesRead > 0)
  }

  test("with skipping off there is no metrics node and the plan is Spark's own") {
    withIndexEnabled(on = false) {
      val df = spark.read.parquet(table).where(col("id") === 777L)
      assert(df.collect().length == 1)
      assert(metricsNodes(df).isEmpty)
    }
  }
}

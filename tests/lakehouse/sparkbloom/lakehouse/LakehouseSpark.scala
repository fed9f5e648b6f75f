package sparkbloom.lakehouse

import java.nio.file.Files

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.{BeforeAndAfterAll, Suite}

import sparkbloom.scan.{BloomScanMetricsExec, ScanSkipping, SkippingReport}

/**
 * A local session with a table format's extension listed before sparkbloom's (as `sparkbloom.configure()`
 * orders them), real tables in a temporary warehouse, and the index-on / index-off comparison every test uses.
 */
trait LakehouseSpark extends BeforeAndAfterAll with AdaptiveSparkPlanHelper { self: Suite =>
  protected def formatExtension: String
  protected def formatConf(warehouse: String): Map[String, String]

  lazy val warehouse: String = Files.createTempDirectory("sparkbloom-lake").toString

  @transient lazy val spark: SparkSession = {
    SparkSession.clearActiveSession(); SparkSession.clearDefaultSession()
    val b = SparkSession.builder()
      .master("local[2]")
      .appName(getClass.getSimpleName)
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "4")
      .config("spark.driver.host", "127.0.0.1")
      .config("spark.sql.extensions", s"$formatExtension,sparkbloom.SparkBloomExtensions")
      .config("spark.sql.warehouse.dir", warehouse + "/spark-warehouse")
    formatConf(warehouse).foreach { case (k, v) => b.config(k, v) }
    b.getOrCreate()
  }

  override def afterAll(): Unit = {
    try spark.stop()
    finally { SparkSession.clearActiveSession(); SparkSession.clearDefaultSession(); super.afterAll() }
  }

  def sql(text: String): DataFrame = spark.sql(text)

  def withIndexEnabled[T](on: Boolean)(f: => T): T = {
    val old = spark.conf.get("spark.sparkbloom.enabled", "true")
    spark.conf.set("spark.sparkbloom.enabled", on.toString)
    try f finally spark.conf.set("spark.sparkbloom.enabled", old)
  }

  def sortRows(rows: Seq[Row]): Seq[Row] = rows.sortBy(_.toString)

  /** A query's rows with sparkbloom on, its skipping, the scan's SQL metrics, and its rows with sparkbloom off. */
  case class Outcome(on: Seq[Row], off: Seq[Row], skipping: Seq[ScanSkipping], metrics: Map[String, Long], plan: SparkPlan) {
    def skipped: Long = skipping.map(s => s.filesTotal - s.filesKept).sum
    def kept: Long = skipping.map(_.filesKept).sum
  }

  def compare(query: => DataFrame): Outcome = {
    val (on, skipping, metrics, plan) = withIndexEnabled(on = true) {
      val df = query
      val rows = df.collect().toSeq
      val plan = df.queryExecution.executedPlan
      val m = collect(plan) { case b: BloomScanMetricsExec => b.metrics.map { case (k, v) => k -> v.value } }
        .foldLeft(Map.empty[String, Long])(_ ++ _)
      (rows, SkippingReport.forPlan(plan), m, plan)
    }
    val off = withIndexEnabled(on = false)(query.collect().toSeq)
    Outcome(sortRows(on), sortRows(off), skipping, metrics, plan)
  }
}

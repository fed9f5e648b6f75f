package sparkbloom.testing

import java.nio.file.Files

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.FileSourceScanExec
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.{BeforeAndAfterAll, Suite}

import sparkbloom.index.ScanSkipping
import sparkbloom.scan.SkippingReport

/** One small local Spark session per suite, with the sparkbloom extension, and skipping helpers. */
trait LocalSpark extends BeforeAndAfterAll with AdaptiveSparkPlanHelper { self: Suite =>
  @transient lazy val spark: SparkSession = SparkSession.builder()
    .master("local[2]")
    .appName(getClass.getSimpleName)
    .config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "4")
    .config("spark.sql.extensions", "sparkbloom.SparkBloomExtensions")
    .config("spark.sql.warehouse.dir", Files.createTempDirectory("sparkbloom-wh").toString)
    .getOrCreate()

  override def afterAll(): Unit = { try spark.stop() finally super.afterAll() }

  def tempDir(prefix: String = "sparkbloom"): String = Files.createTempDirectory(prefix).toString

  def withIndexEnabled[T](on: Boolean)(f: => T): T = {
    val old = spark.conf.get("spark.sparkbloom.enabled", "true")
    spark.conf.set("spark.sparkbloom.enabled", on.toString)
    try f finally spark.conf.set("spark.sparkbloom.enabled", old)
  }

  /** Runs `query` with the index on and off; returns both answers (sorted) and the skipping with it on. */
  case class Outcome(on: Seq[Row], off: Seq[Row], skipping: Seq[ScanSkipping], filesRead: Long)

  def compare(query: => DataFrame): Outcome = {
    val (on, skipping, files) = withIndexEnabled(on = true) {
      val df = query
      val rows = df.collect().toSeq
      val plan = df.queryExecution.executedPlan
      val files = collect(plan) { case s: FileSourceScanExec => s.metrics.get("numFiles").map(_.value).getOrElse(0L) }.sum
      (rows, SkippingReport.forPlan(plan), files)
    }
    val off = withIndexEnabled(on = false)(query.collect().toSeq)
    Outcome(sortRows(on), sortRows(off), skipping, files)
  }

  def sortRows(rows: Seq[Row]): Seq[Row] = rows.sortBy(_.toString)
}

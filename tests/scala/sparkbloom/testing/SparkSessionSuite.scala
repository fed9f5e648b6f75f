package sparkbloom.testing

import java.io.File
import java.nio.file.Files

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.{FileSourceScanExec, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.{BloomConf, SparkBloomExtensions}
import sparkbloom.index.ScanSkipping
import sparkbloom.scan.{BloomScanMetricsExec, SkippingReport}

/**
 * The one Spark-session base of the Scala suites: a local SparkSession per suite, started the way users start
 * it (`spark.sql.extensions` naming [[SparkBloomExtensions]]), local[2], UI off, few shuffle partitions,
 * warehouse in a temporary folder; and the index-on / index-off comparison every skipping test makes.
 */
trait SparkSessionSuite extends AnyFunSuite with BeforeAndAfterAll with AdaptiveSparkPlanHelper {
  @transient private var started = false
  private lazy val scratch: File = Files.createTempDirectory("sparkbloom-test").toFile

  /** Extra settings a suite needs (added to the defaults below). */
  protected def sparkConf: Map[String, String] = Map.empty

  /** Started on first use, stopped after the suite. */
  @transient lazy val spark: SparkSession = {
    SparkSession.clearActiveSession(); SparkSession.clearDefaultSession()
    val builder = SparkSession.builder()
      .master("local[2]")
      .appName(getClass.getSimpleName)
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "4")
      .config("spark.sql.extensions", classOf[SparkBloomExtensions].getName)
      .config("spark.sql.warehouse.dir", new File(scratch, "warehouse").getAbsolutePath)
      .config("spark.driver.host", "127.0.0.1")
      // The suites check index states (files not covered after a lookup): the background catch-up a lookup of
      // uncovered files starts is off here, and on in the tests of it (BloomConf.RefreshOnRead).
      .config(BloomConf.RefreshOnRead, "false")
      // Nor does a CREATE over harvested filters that miss the budget (parquet-java's fixed fpp) re-size them in the
      // background: the suites check the versions they make. On in the test of it (HarvestResizeInBackground).
      .config(BloomConf.HarvestResizeInBackground, "false")
    sparkConf.foreach { case (k, v) => builder.config(k, v) }
    started = true
    builder.getOrCreate()
  }

  override protected def afterAll(): Unit =
    try { if (started) spark.stop() }
    finally {
      SparkSession.clearActiveSession(); SparkSession.clearDefaultSession()
      deleteRecursively(scratch)
      super.afterAll()
    }

  protected def sql(text: String): DataFrame = spark.sql(text)

  /** A fresh empty folder under the suite's scratch folder, deleted afterwards. */
  protected def withTempDir[T](f: File => T): T = {
    val dir = Files.createTempDirectory(scratch.toPath, "t").toFile
    try f(dir)
    finally deleteRecursively(dir)
  }

  /** A fresh folder of its own (kept until the suite's scratch folder is deleted). */
  def tempDir(prefix: String = "sparkbloom"): String = Files.createTempDirectory(scratch.toPath, prefix).toString

  /** Runs `f` with SQL confs set, restoring the previous values afterwards. */
  protected def withSQLConf[T](pairs: (String, String)*)(f: => T): T = {
    val before = pairs.map { case (k, _) => k -> spark.conf.getOption(k) }
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try f
    finally before.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }

  def withIndexEnabled[T](on: Boolean)(f: => T): T = withSQLConf("spark.sparkbloom.enabled" -> on.toString)(f)

  def sortRows(rows: Seq[Row]): Seq[Row] = rows.sortBy(_.toString)

  /**
   * A query's rows with sparkbloom on and off (sorted), the skipping with it on, the files Spark's V1 scans
   * read, the pruned scans' SQL metrics and the executed plan.
   */
  case class Outcome(on: Seq[Row], off: Seq[Row], skipping: Seq[ScanSkipping], filesRead: Long,
                     metrics: Map[String, Long], plan: SparkPlan) {
    def skipped: Long = skipping.map(s => s.filesTotal - s.filesKept).sum
    def kept: Long = skipping.map(_.filesKept).sum
  }

  def compare(query: => DataFrame): Outcome = {
    val (on, skipping, files, metrics, plan) = withIndexEnabled(true) {
      val df = query
      val rows = df.collect().toSeq
      val plan = df.queryExecution.executedPlan
      val files = collect(plan) { case s: FileSourceScanExec =>
        s.metrics.get("numFiles").map(_.value).getOrElse(0L)
      }.sum
      val m = collect(plan) { case b: BloomScanMetricsExec => b.metrics.map { case (k, v) => k -> v.value } }
        .foldLeft(Map.empty[String, Long])(_ ++ _)
      (rows, SkippingReport.forPlan(plan), files, m, plan)
    }
    val off = withIndexEnabled(on = false)(query.collect().toSeq)
    Outcome(sortRows(on), sortRows(off), skipping, files, metrics, plan)
  }

  private def deleteRecursively(f: File): Unit = {
    if (f.isDirectory) Option(f.listFiles()).foreach(_.foreach(deleteRecursively))
    f.delete()
  }
}

package sparkbloom.bench

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.scheduler.{SparkListener, SparkListenerJobEnd, SparkListenerJobStart}
import org.apache.spark.sql.SparkSession

/** What the timing programs share: `key=value` arguments, a local session with sparkbloom, a job timeline. */
object Harness {

  /** `key=value` arguments. */
  def options(args: Array[String]): Map[String, String] =
    args.map { a =>
      val i = a.indexOf('=')
      require(i > 0, s"arguments are key=value, got '$a'")
      a.substring(0, i) -> a.substring(i + 1)
    }.toMap

  /** A local[2] session with sparkbloom's extension, no UI, warnings only. */
  def session(app: String, warehouse: String): SparkSession = {
    val spark = SparkSession.builder()
      .master("local[2]")
      .appName(app)
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "4")
      .config("spark.sql.extensions", "sparkbloom.SparkBloomExtensions")
      .config("spark.sql.warehouse.dir", warehouse)
      .config("spark.driver.host", "127.0.0.1")
      .getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    spark
  }

  /**
   * Prints each Spark job that ends while `printing` (start relative to `mark`, duration, tasks, stage names), to
   * tell a statement's fixed costs (driver work between jobs) from the work in its jobs.
   */
  final class Timeline(spark: SparkSession) {
    @volatile var printing = true
    @volatile private var start = System.currentTimeMillis()
    /** Job starts are printed relative to now. */
    def mark(): Unit = start = System.currentTimeMillis()

    private val starts = new ConcurrentHashMap[Int, (Long, Int, String)]()
    spark.sparkContext.addSparkListener(new SparkListener {
      override def onJobStart(e: SparkListenerJobStart): Unit =
        starts.put(e.jobId, (e.time, e.stageInfos.map(_.numTasks).sum, e.stageInfos.map(_.name).mkString(";")))
      override def onJobEnd(e: SparkListenerJobEnd): Unit =
        Option(starts.remove(e.jobId)).foreach { case (t0, tasks, names) =>
          if (printing) println(f"  job ${e.jobId}: +${t0 - start}%5d ms, ${e.time - t0}%5d ms, $tasks tasks $names")
        }
    })
  }
}

package sparkbloom.bench

import java.lang.management.ManagementFactory
import java.util.concurrent.ConcurrentHashMap

import com.sun.management.{OperatingSystemMXBean, ThreadMXBean}

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

  /**
   * The CPU time and allocation of this JVM (a local session: driver, tasks, GC, JIT) between two points: steadier
   * than wall time on a loaded 2-core machine, and split by thread kind (names without their digits), with what
   * no Java thread used (GC, JIT compilers) as "(GC, JIT: not Java threads)".
   */
  object Cpu {
    private val os = ManagementFactory.getOperatingSystemMXBean.asInstanceOf[OperatingSystemMXBean]
    private val threads = ManagementFactory.getThreadMXBean.asInstanceOf[ThreadMXBean]
    val Other = "(GC, JIT: not Java threads)"

    final case class Snapshot(process: Long, allocated: Long, byKind: Map[String, Long]) {
      /** "CPU ms, <kind>" (and ", total" for the JVM) and "MB allocated" since `before`. */
      def since(before: Snapshot): Map[String, Double] = {
        val kinds = byKind.map { case (k, c) => k -> (c - before.byKind.getOrElse(k, 0L)) / 1e6 }
        val total = (process - before.process) / 1e6
        (kinds ++ Map("total" -> total, Other -> (total - kinds.values.sum))).map { case (k, v) =>
          s"CPU ms, $k" -> v
        } +
          ("MB allocated" -> (allocated - before.allocated) / 1e6)
      }
    }

    def snapshot(): Snapshot = {
      val ids = threads.getAllThreadIds
      val byKind = ids.zip(threads.getThreadCpuTime(ids)).flatMap { case (id, c) =>
        Option(threads.getThreadInfo(id)).filter(_ => c >= 0).map(_.getThreadName.replaceAll("[0-9]+", "#") -> c)
      }.groupBy(_._1).map { case (kind, cs) => kind -> cs.map(_._2).sum } // Scala 2.12 has no groupMapReduce
      Snapshot(os.getProcessCpuTime, threads.getTotalThreadAllocatedBytes, byKind)
    }
  }
}

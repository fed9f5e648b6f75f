package sparkbloom.reliability

import java.nio.file.Files

import org.apache.hadoop.fs.{FSDataInputStream, LocalFileSystem, Path}
import org.apache.spark.TaskContext
import org.apache.spark.sql.SparkSession

/**
 * A Spark driver of its own, for [[ConcurrencySuite]] to kill with SIGKILL in the middle of a build:
 * {{{
 *   IndexBuildDriver create|refresh <table dir> <slow-down ms per data file opened by a build task>
 * }}}
 * It runs `CREATE BLOOM INDEX ix ON parquet.`dir` (id, s)` or `REFRESH BLOOM INDEX ix ... FULL` in a local
 * session with the sparkbloom extension. The local file system is [[SlowLocalFileSystem]], which sleeps
 * when a Spark task opens a data file, so the build lasts long enough to be killed half way. Prints
 * `BUILT` and exits 0 when the statement returns.
 */
object IndexBuildDriver {
  def main(args: Array[String]): Unit = {
    val Array(mode, dir, slowMs) = args
    val spark = SparkSession.builder()
      .master("local[2]")
      .appName("IndexBuildDriver")
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "2")
      .config("spark.sql.extensions", "sparkbloom.SparkBloomExtensions")
      .config("spark.sql.warehouse.dir", Files.createTempDirectory("sparkbloom-driver-wh").toString)
      .config("spark.hadoop.fs.file.impl", classOf[SlowLocalFileSystem].getName)
      .config("spark.hadoop.fs.file.impl.disable.cache", "true")
      .config(SlowLocalFileSystem.Key, slowMs)
      .getOrCreate()
    val sql = mode match {
      case "create" => s"CREATE BLOOM INDEX ix ON parquet.`$dir` (id, s)"
      case "refresh" => s"REFRESH BLOOM INDEX ix ON parquet.`$dir` FULL"
      case other => sys.error(s"unknown mode $other")
    }
    println(s"STARTED $mode fs=${new Path(dir).getFileSystem(spark.sessionState.newHadoopConf()).getClass.getName}")
    spark.sql(sql).collect()
    println("BUILT")
    spark.stop()
  }
}

/** The local file system, slowed down where a build task opens a table's data file. */
class SlowLocalFileSystem extends LocalFileSystem {
  override def open(f: Path, bufferSize: Int): FSDataInputStream = {
    val ms = getConf.getLong(SlowLocalFileSystem.Key.stripPrefix("spark.hadoop."), 0L)
    val name = f.getName
    if (ms > 0 && TaskContext.get() != null && name.startsWith("part-") && name.endsWith(".parquet") &&
      !f.toString.contains("/_sparkbloom/")) Thread.sleep(ms)
    super.open(f, bufferSize)
  }
}

object SlowLocalFileSystem { val Key = "spark.hadoop.sparkbloom.test.slowOpenMs" }

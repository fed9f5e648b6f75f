package sparkbloom

import java.io.File
import java.nio.file.Files

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * One local SparkSession per suite, started the way users start it: `spark.sql.extensions` naming
 * [[SparkBloomExtensions]]. local[2], UI off, few shuffle partitions, warehouse in a temporary folder.
 */
trait SparkSessionSuite extends AnyFunSuite with BeforeAndAfterAll {
  @transient private var session: SparkSession = _
  private lazy val scratch: File = Files.createTempDirectory("sparkbloom-test").toFile

  /** Extra settings a suite needs (added to the defaults below). */
  protected def sparkConf: Map[String, String] = Map.empty

  protected def spark: SparkSession = session

  override protected def beforeAll(): Unit = {
    super.beforeAll()
    SparkSession.clearActiveSession(); SparkSession.clearDefaultSession()
    val builder = SparkSession.builder()
      .master("local[2]")
      .appName(getClass.getSimpleName)
      .config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "4")
      .config("spark.sql.extensions", classOf[SparkBloomExtensions].getName)
      .config("spark.sql.warehouse.dir", new File(scratch, "warehouse").getAbsolutePath)
      .config("spark.driver.host", "127.0.0.1")
    sparkConf.foreach { case (k, v) => builder.config(k, v) }
    session = builder.getOrCreate()
  }

  override protected def afterAll(): Unit =
    try { if (session != null) session.stop() }
    finally {
      session = null
      SparkSession.clearActiveSession(); SparkSession.clearDefaultSession()
      deleteRecursively(scratch)
      super.afterAll()
    }

  protected def sql(text: String): DataFrame = spark.sql(text)

  /** A fresh empty folder under the suite's scratch folder, deleted afterwards. */
  protected def withTempDir[T](f: File => T): T = {
    val dir = Files.createTempDirectory(scratch.toPath, "t").toFile
    try f(dir) finally deleteRecursively(dir)
  }

  /** Runs `f` with SQL confs set, restoring the previous values afterwards. */
  protected def withSQLConf[T](pairs: (String, String)*)(f: => T): T = {
    val before = pairs.map { case (k, _) => k -> spark.conf.getOption(k) }
    pairs.foreach { case (k, v) => spark.conf.set(k, v) }
    try f finally before.foreach { case (k, v) => v.fold(spark.conf.unset(k))(spark.conf.set(k, _)) }
  }

  private def deleteRecursively(f: File): Unit = {
    if (f.isDirectory) Option(f.listFiles()).foreach(_.foreach(deleteRecursively))
    f.delete()
  }
}

package sparkbloom.formats

import java.nio.file.Files

import org.apache.spark.sql.DataFrame

import sparkbloom.api.BloomIndexes
import sparkbloom.index.{ColumnSpec, TableRef}
import sparkbloom.scan.SkippingReport
import sparkbloom.testing.SparkSessionSuite

/**
 * A local session with a table format's extension listed before sparkbloom's (as `sparkbloom.configure()`
 * orders them), real tables in a temporary warehouse, and the index-on / index-off comparison every test uses.
 */
trait LakehouseSpark extends SparkSessionSuite {
  protected def formatExtension: String
  protected def formatConf(warehouse: String): Map[String, String]

  /**
   * `f` with maintenance on write off: its Delta and Iceberg writes leave their files uncovered, as writes by other
   * engines do (the REFRESH tests).
   */
  def withoutMaintenance[T](f: => T): T = withSQLConf("spark.sparkbloom.maintainOnWrite.enabled" -> "false")(f)

  lazy val warehouse: String = Files.createTempDirectory("sparkbloom-lake").toString

  // The format's extension first, as sparkbloom.configure() orders them (Delta's scan is prepared by then).
  override protected def sparkConf: Map[String, String] =
    formatConf(warehouse) +
      ("spark.sql.extensions" -> s"$formatExtension,${classOf[sparkbloom.SparkBloomExtensions].getName}")

  /**
   * The differential fuzzer of `sparkbloom.reliability.DifferentialFuzzSuite` on a table of this format: the
   * random rows of [[sparkbloom.reliability.RandomTables]] (every indexable type, specials, nulls) written by
   * `write` in 24 files, indexed on every column, then random predicates compared with sparkbloom on and off.
   * Size: `SPARKBLOOM_LAKEHOUSE_FUZZ_QUERIES` (default 12 per format in CI, 20 until CI passed 60 minutes;
   * docs/fuzzing.md has the long run).
   */
  def fuzz(write: DataFrame => Unit, read: () => DataFrame, ref: TableRef, seed: Long): (Int, Int, Int) = {
    import sparkbloom.reliability.RandomTables
    val n = sys.env.get("SPARKBLOOM_LAKEHOUSE_FUZZ_QUERIES").map(_.toInt).getOrElse(12)
    spark.conf.set("spark.sql.datetime.java8API.enabled", "true")
    val rows = RandomTables.rows(new scala.util.Random(seed), 4800, 0L).toIndexedSeq
    write(spark.createDataFrame(spark.sparkContext.parallelize(rows, 24), RandomTables.schema))
    BloomIndexes.create(spark, ref, "fz", RandomTables.indexed.map(f => ColumnSpec(f.name)),
      Map.empty, ifNotExists = false)
    def render(df: DataFrame): Seq[String] = df.collect().toSeq.map(_.toSeq.map {
      case b: Array[Byte] => b.map("%02x".format(_)).mkString("0x", "", "")
      case other => String.valueOf(other)
    }.mkString("|")).sorted
    var pruned, bothFailed = 0
    val failures = scala.collection.mutable.Buffer[String]()
    for (q <- 0 until n) {
      val rng = new scala.util.Random(seed * 1000003L + q)
      val pred = RandomTables.predicate(rng, 3, () => rows(rng.nextInt(rows.size)))
      val on = scala.util.Try(withIndexEnabled(true) {
        val df = read().where(pred); (render(df), SkippingReport.forPlan(df.queryExecution.executedPlan))
      })
      val off = scala.util.Try(withIndexEnabled(on = false)(render(read().where(pred))))
      (on, off) match {
        case (scala.util.Success((rowsOn, skip)), scala.util.Success(rowsOff)) =>
          if (skip.exists(s => s.filesKept < s.filesTotal)) pruned += 1
          if (rowsOn != rowsOff) failures +=
            s"REPRODUCER seed=$seed query=$q on $ref: $pred: ${rowsOn.size} rows with the index, ${rowsOff.size} " +
              "without"
        case (scala.util.Failure(_), scala.util.Failure(_)) =>
          // Spark or the format fails this query by itself (e.g. Spark 4.0's V2 push-down log of a binary IN with NULL)
          bothFailed += 1
        case (scala.util.Failure(e), _) => failures +=
            s"REPRODUCER seed=$seed query=$q on $ref: $pred fails only with the index: $e"
        case (_, scala.util.Failure(e)) => failures +=
            s"REPRODUCER seed=$seed query=$q on $ref: $pred fails only without the index: $e"
      }
    }
    // fewer than a tenth (none in a sample under 10: dev/matrix draws small ones on the lines besides the default)
    assert(bothFailed == 0 || bothFailed < n / 10, s"$bothFailed of $n queries fail even without the index")
    assert(failures.isEmpty, failures.take(5).mkString("\n"))
    (n, pruned, bothFailed)
  }

}

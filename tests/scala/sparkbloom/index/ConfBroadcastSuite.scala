package sparkbloom.index

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec
import org.apache.spark.sql.functions.col

import sparkbloom.scan.BloomParquetScanV2
import sparkbloom.testing.SparkSessionSuite

/**
 * The read-time checks' Hadoop conf is broadcast once for scans with equal confs (ConfBroadcast), and a V2 scan
 * sparkbloom rewrites reuses the reader factory (and its broadcast conf) Spark's planner already built: the NaN
 * guard's cost per scan is counted in broadcasts (each a serialisation of the whole conf on the driver).
 */
class ConfBroadcastSuite extends SparkSessionSuite {

  test("a conf with the same entries reuses the broadcast; any changed entry gets a new one with that entry") {
    val sc = spark.sparkContext
    val a = new Configuration(spark.sessionState.newHadoopConf())
    a.set("sparkbloom.test.key", "1")
    val first = ConfBroadcast.of(sc, a)
    val same = ConfBroadcast.of(sc, new Configuration(a))
    assert(same eq first)
    assert(first.value.value.get("sparkbloom.test.key") == "1")
    // The broadcast is a snapshot: changing the conf afterwards neither changes it nor reuses it.
    a.set("sparkbloom.test.key", "2")
    val changed = ConfBroadcast.of(sc, a)
    assert(!(changed eq first))
    assert(changed.value.value.get("sparkbloom.test.key") == "2")
    assert(first.value.value.get("sparkbloom.test.key") == "1")
    a.unset("sparkbloom.test.key")
    val removed = ConfBroadcast.of(sc, a)
    assert(!(removed eq changed) && removed.value.value.get("sparkbloom.test.key") == null)
  }

  /** Broadcasts made while `f` runs (broadcast ids are consecutive: the gap between two markers). */
  private def broadcastsDuring[T](f: => T): (Long, T) = {
    val sc = spark.sparkContext
    val before = sc.broadcast(0).id
    val r = f
    (sc.broadcast(0).id - before - 1, r)
  }

  test("the NaN guard adds no broadcast to a V2 scan and one (its second reader) to a V1 scan, warm") {
    withTempDir { dir =>
      val path = new java.io.File(dir, "t").toString
      spark.range(0, 2000, 1, 2).select(col("id"), (col("id") * 0.5).as("d")).write.parquet(path)
      val expected = withIndexEnabled(on = false)(spark.read.parquet(path).where("d > 900.0").collect().length)
      assert(expected == 199)
      for ((scan, v1List, extra) <- Seq(("V2", "", 0L), ("V1", "parquet", 1L))) {
        withSQLConf("spark.sql.sources.useV1SourceList" -> v1List) {
          def run(guard: Boolean): Long = withSQLConf("spark.sparkbloom.nanGuard.enabled" -> guard.toString) {
            run1(); val (n, rows) = broadcastsDuring(run1()); assert(rows == expected, scan); n
          }
          def run1(): Int = spark.read.parquet(path).where("d > 900.0").collect().length
          // The guarded V2 scan is sparkbloom's (so the count below is of the rewritten scan).
          if (scan == "V2") withSQLConf("spark.sparkbloom.nanGuard.enabled" -> "true") {
            val plan = spark.read.parquet(path).where("d > 900.0").queryExecution.executedPlan
            assert(collect(plan) { case b: BatchScanExec if b.scan.isInstanceOf[BloomParquetScanV2] => b }.size == 1,
              plan)
          }
          val off = run(guard = false)
          val on = run(guard = true)
          assert(on == off + extra, s"$scan: $on broadcasts with the guard, $off without")
        }
      }
    }
  }
}

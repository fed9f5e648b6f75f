package sparkbloom.bench

import java.nio.file.{Files, Paths}

/**
 * Where a maintained Parquet append spends its time: the same appends as `benchmarks/write_maintenance.py`
 * (`id`, `uuid() AS key`, `id * 7 AS v`, a 40-character pad; `rows` rows in `files` files), alternated between a
 * plain table and one with a bloom index on `id` and `key`, in one JVM, with Spark's jobs of each timed append
 * printed (`timeline=true`) and a JFR profile of the indexed appends (`jfr=true`, into `<dir>/write.jfr`). Beside
 * each append's wall time, the JVM's CPU time and allocation ([[Harness.Cpu]]), whose medians are printed by thread
 * kind: on this 2-core machine they move less from run to run than wall time.
 *
 *   dev/sbt "harness/runMain sparkbloom.bench.WriteSpeed [rows=1000000] [files=8] [reps=9] [timeline=true] [jfr=true]"
 */
object WriteSpeed {
  def main(args: Array[String]): Unit = {
    val opts = Harness.options(args)
    val rows = opts.getOrElse("rows", "1000000").toLong
    val files = opts.getOrElse("files", "8").toInt
    val reps = opts.getOrElse("reps", "9").toInt
    val timeline = opts.getOrElse("timeline", "false").toBoolean
    val jfr = opts.getOrElse("jfr", "false").toBoolean
    val root = Files.createTempDirectory(opts.getOrElse("dir", "/tmp").stripSuffix("/") match {
        case d => Paths.get(d)
      }, "sparkbloom-writespeed").toString

    val spark = Harness.session("WriteSpeed", s"$root/wh")
    // the jobs of the indexed appends only
    val tl = if (timeline) Some(new Harness.Timeline(spark)) else None
    tl.foreach(_.printing = false)

    val plain = s"$root/plain"
    val indexed = s"$root/indexed"
    def batch(start: Long) = spark.range(start, start + rows, 1, files)
      .selectExpr("id", "uuid() AS key", "id * 7 AS v", "repeat('x', 40) AS pad")
    batch(0).write.parquet(plain)
    batch(0).write.parquet(indexed)
    spark.sql(s"CREATE BLOOM INDEX ix ON parquet.`$indexed` (id, key)").collect()

    var next = rows
    def median(xs: Seq[Double]) = xs.sorted.apply(xs.size / 2)
    val cpu = scala.collection.mutable.Map[String, Seq[Map[String, Double]]]().withDefaultValue(Nil)
    def append(target: String): Double = {
      val df = batch(next); next += rows
      System.gc()
      tl.foreach(_.mark())
      val c0 = Harness.Cpu.snapshot()
      val t0 = System.nanoTime()
      df.write.mode("append").parquet(target)
      val ms = (System.nanoTime() - t0) / 1e6
      // the write's tasks have ended when it returns (their CPU is counted), its listener events may not have
      cpu(target) :+= Harness.Cpu.snapshot().since(c0)
      ms
    }
    append(plain); append(indexed) // warm-up
    cpu.clear()
    val recording = if (jfr) {
      val r = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("profile"))
      r.start(); Some(r)
    } else None
    val times = (1 to reps).map { i =>
      // alternate the order, as write_maintenance.py does
      val order = if (i % 2 == 0) Seq(plain, indexed) else Seq(indexed, plain)
      val t = order.map { target =>
        tl.foreach(_.printing = target == indexed)
        if (timeline && target == indexed) println(s"indexed append $i:")
        target -> append(target)
      }.toMap
      tl.foreach(_.printing = false)
      println(f"round $i: plain ${t(plain)}%.0f ms, indexed ${t(indexed)}%.0f ms")
      (t(plain), t(indexed))
    }
    recording.foreach { r =>
      r.stop(); r.dump(Paths.get(s"$root/write.jfr")); r.close(); println(s"JFR: $root/write.jfr")
    }
    val (p, ix) = (median(times.map(_._1)), median(times.map(_._2)))
    println(f"median plain $p%.0f ms, indexed $ix%.0f ms, ratio ${ix / p}%.2f")
    for (k <- cpu(indexed).flatMap(_.keys).distinct.sorted) {
      val (pk, ik) = (median(cpu(plain).map(_.getOrElse(k, 0.0))), median(cpu(indexed).map(_.getOrElse(k, 0.0))))
      if (pk + ik >= 5) println(f"  median $k%-72s plain $pk%6.0f, indexed $ik%6.0f, ratio ${ik / pk}%.2f")
    }
    val d = spark.sql(s"DESCRIBE BLOOM INDEX ix ON parquet.`$indexed`").collect()
      .map(r => r.getString(0) -> r.getString(1)).toMap
    println(s"files not covered: ${d.getOrElse("Files Not Covered", "?")}")
    spark.stop()
  }
}

package sparkbloom.bench

import java.io.File
import java.nio.file.{Files, Paths}

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.functions._

import sparkbloom.parquet.Footers

/**
 * "A build at scan speed": times the index build against a plain scan of the same columns.
 *
 *   dev/sbt "harness/runMain sparkbloom.bench.BuildSpeed [files=200] [rows=20000] [reps=3] \
 *     [jfr=scan|harvest|none] [dir=/tmp/sparkbloom-buildspeed]"
 *
 * Writes (once, reused when present) a table of `files` one-row-group files of `rows` rows: `id` a unique
 * long, `u` a unique UUID-like string (too many distinct values for the dictionary), `c` a string of 50
 * values (dictionary-encoded), and a copy written with parquet-java's native bloom filters (expected NDV
 * = `rows` per column). Then, after
 * one warm-up of each, times `reps` runs of (a) `select(id, u, c)` written to the noop sink, (b) the
 * scanning build (`spark.sparkbloom.harvest.enabled=false`), (c) the harvesting build over the copy, and
 * prints the medians and the ratios b/a and c/a. `only=floor` (not run by default) times the least any harvest
 * of the copy must do: list it and read each file's footer in one Spark job, nothing built. `jfr=scan|harvest`
 * records a JFR profile (profile settings) of that build's timed runs into `<dir>/<jfr>.jfr`.
 */
object BuildSpeed {
  def main(args: Array[String]): Unit = {
    val opts = Harness.options(args)
    val files = opts.getOrElse("files", "200").toInt
    val rows = opts.getOrElse("rows", "20000").toInt
    val reps = opts.getOrElse("reps", "3").toInt
    val jfr = opts.getOrElse("jfr", "none")
    val root = opts.getOrElse("dir", "/tmp/sparkbloom-buildspeed")
    val only = opts.get("only").map(_.split(',').toSet).getOrElse(Set("scan", "build", "harvest"))
    // The columns indexed (`cols=id,u` for a harvest of native filters only: parquet-java writes none for `c`,
    // whose chunks are all dictionary-encoded, so it is scanned).
    val cols = opts.get("cols").map(_.split(',').toSeq).getOrElse(Seq("id", "u", "c"))
    require(!only("floor") || cols.toSet == Set("id", "u"), "only=floor reads the copy written with cols=id,u")

    val spark = Harness.session("BuildSpeed", Files.createTempDirectory("sparkbloom-wh").toString)
    // `timeline=true`: prints each Spark job of the timed runs (start relative to the run's start, duration, tasks),
    // to tell the statement's fixed costs (driver work between jobs) from the work in its jobs.
    val timeline = if (opts.getOrElse("timeline", "false").toBoolean) Some(new Harness.Timeline(spark)) else None

    val plain = s"$root/plain-${files}x$rows"
    val native = s"$root/native-${files}x$rows-ndv"
    def write(dir: String, bloom: Boolean): Unit = if (!new File(dir, "_SUCCESS").exists()) {
      val df = spark.range(0L, files.toLong * rows, 1, files)
        .select(col("id"),
          // UUID-like and unique: 36 characters derived from id (no dictionary can hold 20,000 of them)
          concat_ws("-", lpad(hex(xxhash64(col("id"))), 8, "0").substr(1, 8), lpad(hex(col("id")), 4, "0"),
          lit("4abc"), lpad(hex(hash(col("id"))), 4, "0").substr(1, 4),
          lpad(hex(xxhash64(col("id"), lit(7))), 12, "0").substr(1, 12)).as("u"),
          concat(lit("category-"), (col("id") % 50).cast("string")).as("c"))
      val w = df.write.mode("overwrite")
      // parquet-java's filters sized for the rows of a file (its default expects 1M values: 1 MiB each)
      (if (bloom) cols.foldLeft(w.option("parquet.bloom.filter.enabled", "true")) { (w, c) =>
         w.option(s"parquet.bloom.filter.expected.ndv#$c", rows.toString)
       }
       else w).parquet(dir)
    }
    write(plain, bloom = false)
    write(native, bloom = true)
    println(
      s"table: $files files x $rows rows ($plain, ${dirBytes(plain) >> 20} MiB; $native, ${dirBytes(native) >> 20} " +
        "MiB)")

    def noop(): Unit = spark.read.parquet(plain).select(cols.map(col): _*).write.format("noop").mode("overwrite").save()
    var n = 0
    def build(dir: String, harvest: Boolean): Unit = {
      spark.conf.set("spark.sparkbloom.harvest.enabled", harvest.toString)
      n += 1
      spark.sql(s"CREATE BLOOM INDEX ix$n ON parquet.`$dir` (${cols.mkString(", ")})").collect()
    }
    def drop(dir: String): Unit = spark.sql(s"DROP BLOOM INDEX ix$n ON parquet.`$dir`").collect()
    // Index dirs from earlier runs would only slow listing down.
    Seq(plain, native).foreach(d => deleteRecursively(new File(d, "_sparkbloom")))

    // `after` (dropping the index just built) runs after each run, outside the timing.
    def timed(name: String, f: () => Unit, after: () => Unit): Double = {
      f(); after() // warm-up
      val recording = if (jfr == name) {
        val r = new jdk.jfr.Recording(jdk.jfr.Configuration.getConfiguration("profile"))
        r.start(); Some(r)
      } else None
      val ms = (1 to reps).map { _ =>
        timeline.foreach(_.mark())
        val t0 = System.nanoTime(); f(); val t = (System.nanoTime() - t0) / 1e6; after(); t
      }
      recording.foreach { r =>
        r.stop(); r.dump(Paths.get(s"$root/$name.jfr")); r.close(); println(s"JFR: $root/$name.jfr")
      }
      val med = ms.sorted.apply(ms.size / 2)
      println(f"$name%-8s runs ${ms.map(m => f"$m%.0f").mkString(", ")} ms; median $med%.0f ms")
      med
    }
    // The least a harvest of this table can do: list it (no schema inferred) and read each file's footer, in a
    // Spark job of one task per core; nothing built, nothing written.
    def floor(): Unit = {
      val listed = spark.read.schema("id BIGINT, u STRING, c STRING").parquet(native).inputFiles
      val footers = spark.sparkContext.parallelize(listed.toSeq, spark.sparkContext.defaultParallelism)
        .mapPartitions { fs =>
          val conf = new Configuration()
          fs.map { f =>
            val path = new Path(f)
            val length = path.getFileSystem(conf).getFileStatus(path).getLen
            Footers.read(conf, path, length).rowGroups.size
          }
        }.sum()
      require(footers == files, s"read $footers footers' row groups, expected $files")
    }
    val results = Seq(
      ("scan", () => noop(), () => ()),
      ("floor", () => floor(), () => ()),
      ("build", () => build(plain, harvest = false), () => drop(plain)),
      ("harvest", () => build(native, harvest = true), () => drop(native))
    ).filter(x => only.contains(x._1)).map { case (k, f, after) => k -> timed(k, f, after) }.toMap
    results.get("scan").foreach { s =>
      results.get("build").foreach(b => println(f"scanning build / noop scan   = ${b / s}%.2f"))
      results.get("harvest").foreach(h => println(f"harvesting build / noop scan = ${h / s}%.2f"))
      results.get("floor").foreach(f => println(f"footers alone / noop scan    = ${f / s}%.2f"))
    }
    spark.stop()
  }

  private def dirBytes(d: String): Long =
    Option(new File(d).listFiles()).toSeq.flatten.filter(_.isFile).map(_.length).sum

  private def deleteRecursively(f: File): Unit = {
    if (f.isDirectory) Option(f.listFiles()).toSeq.flatten.foreach(deleteRecursively)
    f.delete()
  }
}

package sparkbloom.reliability

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.Files
import java.util.concurrent.{CyclicBarrier, TimeUnit}
import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger}

import scala.jdk.CollectionConverters._

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions._

import sparkbloom.api.BloomIndexes
import sparkbloom.index.{
  BloomIndexException, ColumnSpec, ConcurrentIndexUpdateException, IndexDescription, IndexStore, TableRef
}
import sparkbloom.testing.SparkSessionSuite

/**
 * Crash safety and concurrency of the commit protocol: a build killed with SIGKILL leaves the previous
 * version in force and is never read; two concurrent REFRESHes never tear the index (one wins, the other
 * fails with a clear error); queries running during REFRESHes return the rows they return without the index.
 */
class ConcurrencySuite extends SparkSessionSuite {
  private val Files_ = 8
  private val Rows = 4000L

  private def newTable(prefix: String, index: Boolean = true): String = {
    val dir = tempDir(prefix) + "/t"
    spark.range(0, Rows, 1, Files_).select(col("id"), concat(lit("k"), col("id")).as("s")).write.parquet(dir)
    if (index) BloomIndexes.create(spark, TableRef.Path(dir), "ix", Seq(ColumnSpec("id"), ColumnSpec("s")), Map.empty,
      ifNotExists = false)
    dir
  }
  private def ixDir(dir: String) = new File(dir, s"${IndexStore.DirName}/ix")
  private def dataDirs(dir: String): Set[String] =
    Option(ixDir(dir).listFiles()).toSeq.flatten.filter(f => f.isDirectory && f.getName.matches("v\\d+-.*")).map(
      _.getName).toSet
  private def describe(s: SparkSession, dir: String): IndexDescription =
    BloomIndexes.describe(s, TableRef.Path(dir), "ix")
  private def refreshSql(dir: String) = s"REFRESH BLOOM INDEX ix ON parquet.`$dir` FULL"

  private val probes = Seq(7L, 2999L, Rows + 5)
  private val checked = new AtomicInteger()

  /** Point lookups and combinations: same rows with the index on and off; returns how many queries skipped files. */
  private def assertCorrect(dir: String, keys: Seq[Long] = probes): Int = {
    def df = spark.read.parquet(dir)
    val preds = keys.flatMap(k => Seq(col("id") === k, col("s") === s"k$k")) :+ col("id").isin(keys: _*)
    preds.count { p =>
      val o = compare(df.where(p))
      checked.incrementAndGet()
      assert(o.on == o.off, s"$p on $dir: with index ${o.on.size} rows, without ${o.off.size}")
      o.filesRead < Files_
    }
  }

  /** The latest commit loads cleanly, and every data directory left behind is one a commit names. */
  private def assertConsistent(dir: String, version: Long): Unit = {
    val d = describe(spark, dir)
    assert(d.problems.isEmpty, d.problems)
    assert(d.version == version, d)
    assert(d.filesCovered == Files_ && d.filesNotCovered == 0, d)
  }

  test("two concurrent REFRESH FULL of the same index never tear it: one wins, the other fails with a clear error") {
    val dir = newTable("concurrent")
    val other = spark.newSession()
    val rounds = 3
    var lost = 0
    for (round <- 1 to rounds) {
      val before = describe(spark, dir).version
      val barrier = new CyclicBarrier(2)
      val outcomes = Seq(spark, other).map { s =>
        val result = new java.util.concurrent.atomic.AtomicReference[Either[Throwable, Unit]]()
        val t = new Thread(() => {
            try { barrier.await(60, TimeUnit.SECONDS); s.sql(refreshSql(dir)).collect(); result.set(Right(())) }
            catch { case e: Throwable => result.set(Left(e)) }
          }, s"refresh-$round")
        t.start()
        (t, result)
      }
      outcomes.foreach(_._1.join(300000))
      val results = outcomes.map(_._2.get())
      assert(results.forall(_ != null), "a refresh thread did not finish")
      results.collect { case Left(e) => e }.foreach {
        case e: ConcurrentIndexUpdateException =>
          assert(e.getMessage.contains("updated concurrently") && e.getMessage.contains("retry"), e.getMessage)
        case e =>
          fail(s"round $round: a concurrent REFRESH failed with something else than ConcurrentIndexUpdateException", e)
      }
      val failures = results.count(_.isLeft)
      assert(failures <= 1, s"round $round: both refreshes failed")
      lost += failures
      val after = describe(spark, dir)
      assert(after.problems.isEmpty, after.problems)
      assert(after.version - before == 2 - failures,
        s"round $round: version $before -> ${after.version}, $failures failed")
      assertConsistent(dir, after.version)
      // the loser removed its own entries: every data directory is named by a commit
      val named = IndexStore.versions(org.apache.hadoop.fs.FileSystem.getLocal(spark.sessionState.newHadoopConf()),
        new org.apache.hadoop.fs.Path(ixDir(dir).toURI)).map(v =>
        IndexStore.readMeta(
          org.apache.hadoop.fs.FileSystem.getLocal(spark.sessionState.newHadoopConf()),
          new org.apache.hadoop.fs.Path(ixDir(dir).toURI), v).dataDir).toSet
      assert(dataDirs(dir).subsetOf(named), s"unreferenced data directories: ${dataDirs(dir) -- named}")
      assert(assertCorrect(dir) > 0, "the index was never used")
    }
    info(
      s"$rounds rounds, $lost refreshes lost the race with ConcurrentIndexUpdateException, ${checked.get} queries " +
        "compared so far")
  }

  test("queries running during repeated REFRESH FULL return the same rows as without the index") {
    val dir = newTable("during")
    val writer = spark.newSession()
    val stop = new AtomicBoolean(false)
    val refreshes = new AtomicInteger()
    val error = new java.util.concurrent.atomic.AtomicReference[Throwable]()
    val t = new Thread(() => {
        try while (!stop.get() || refreshes.get() == 0) {
            writer.sql(refreshSql(dir)).collect(); refreshes.incrementAndGet()
          }
        catch { case e: Throwable => error.set(e) }
      }, "refresher")
    t.start()
    var queries = 0; var skipped = 0
    val rnd = new scala.util.Random(6)
    try for (_ <- 1 to 3) { // the refresher runs REFRESH FULL back to back for as long as these queries run
        val keys = Seq(rnd.self.nextLong(Rows), Rows + rnd.self.nextLong(1000))
        skipped += assertCorrect(dir, keys)
        queries += 2 * keys.size + 1
      }
    finally stop.set(true)
    t.join()
    assert(error.get() == null, s"refresh failed: ${error.get()}")
    assertConsistent(dir, 1L + refreshes.get())
    assertCorrect(dir)
    assert(skipped > 0, "no query used the index")
    info(s"$queries queries during ${refreshes.get} refreshes, $skipped of them skipped files")
  }

  // ---- SIGKILL of a driver in the middle of a build ----

  private lazy val jvmFlags: Seq[String] = {
    val f = Seq(new File("project/jvm-flags.txt"), new File("../project/jvm-flags.txt")).find(_.exists())
      .getOrElse(fail("project/jvm-flags.txt not found"))
    Files.readAllLines(f.toPath, StandardCharsets.UTF_8).asScala.map(_.trim).filter(l =>
      l.nonEmpty && !l.startsWith("#")).toSeq
  }

  /** Starts [[IndexBuildDriver]], waits until a build directory `v<version>-*` appears, SIGKILLs it. */
  private def killMidBuild(mode: String, dir: String, version: Long): (Int, String) = {
    val java = new File(System.getProperty("java.home"), "bin/java").getPath
    val log = Files.createTempFile("driver", ".log").toFile
    val cmd = Seq(java, "-Xmx1g") ++ jvmFlags ++ Seq("-cp", System.getProperty("java.class.path"),
      IndexBuildDriver.getClass.getName.stripSuffix("$"), mode, dir, "400")
    val pb = new ProcessBuilder(cmd.asJava).redirectErrorStream(true).redirectOutput(log)
    pb.environment().put("SPARK_TESTING", "1")
    val before = dataDirs(dir)
    val p = pb.start()
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240)
    def fresh = (dataDirs(dir) -- before).filter(_.startsWith(s"v$version-"))
    while (fresh.isEmpty && p.isAlive && System.nanoTime() < deadline) Thread.sleep(10)
    val output = () => new String(Files.readAllBytes(log.toPath), StandardCharsets.UTF_8)
    assert(fresh.nonEmpty, s"no build directory appeared (alive=${p.isAlive}):\n${output().takeRight(4000)}")
    Thread.sleep(300) // well inside the build: tasks are running
    p.destroyForcibly()
    assert(p.waitFor(60, TimeUnit.SECONDS), "killed driver did not exit")
    val out = output()
    assert(out.contains("STARTED") && out.contains("SlowLocalFileSystem"), out.takeRight(4000))
    (p.exitValue(), out)
  }

  test("a driver killed with SIGKILL in the middle of CREATE leaves no index, and CREATE then succeeds") {
    val dir = newTable("killcreate", index = false)
    val (code, out) = killMidBuild("create", dir, 1)
    assert(code == 137, s"exit code $code is not SIGKILL's:\n${out.takeRight(2000)}")
    val committedBeforeKill = out.contains("BUILT") || IndexStore.versions(
      org.apache.hadoop.fs.FileSystem.getLocal(spark.sessionState.newHadoopConf()),
      new org.apache.hadoop.fs.Path(ixDir(dir).toURI)).nonEmpty
    if (committedBeforeKill) {
      info("the kill came after the commit: the index must be complete")
      assertConsistent(dir, 1)
    } else {
      assert(dataDirs(dir).nonEmpty, "the orphan build directory vanished")
      assert(BloomIndexes.list(spark, TableRef.Path(dir)).isEmpty)
      val e = intercept[BloomIndexException](describe(spark, dir))
      assert(e.getMessage.contains("does not exist"), e.getMessage)
      assertCorrect(dir)
      spark.sql(s"CREATE BLOOM INDEX ix ON parquet.`$dir` (id, s)").collect()
      assertConsistent(dir, 1)
      info(s"killed mid-CREATE (exit $code); orphan ignored, CREATE then committed version 1")
    }
    assert(assertCorrect(dir) > 0)
    spark.sql(refreshSql(dir)).collect()
    assertConsistent(dir, 2)
    assertCorrect(dir)
  }

  test(
    "a driver killed with SIGKILL in the middle of REFRESH leaves the previous version in force, and REFRESH then " +
      "succeeds") {
    val dir = newTable("killrefresh")
    assertConsistent(dir, 1)
    val (code, out) = killMidBuild("refresh", dir, 2)
    assert(code == 137, s"exit code $code is not SIGKILL's:\n${out.takeRight(2000)}")
    val committed = IndexStore.versions(org.apache.hadoop.fs.FileSystem.getLocal(spark.sessionState.newHadoopConf()),
      new org.apache.hadoop.fs.Path(ixDir(dir).toURI)).headOption.getOrElse(0L)
    val v = if (committed == 2) { info("the kill came after the commit: version 2 must be complete"); 2L }
    else {
      assert(committed == 1 && !out.contains("BUILT"))
      info(s"killed mid-REFRESH (exit $code); version 1 still in force")
      1L
    }
    assertConsistent(dir, v)
    assert(assertCorrect(dir) > 0, "the previous version is not used")
    spark.sql(refreshSql(dir)).collect()
    assertConsistent(dir, v + 1)
    assert(assertCorrect(dir) > 0)
  }
}

package sparkbloom.bench

import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

import sparkbloom.index.sliced.SegmentWriter

/**
 * Times a build task's segment writing alone: `slots` filters of `blocks` 32-byte blocks each, one column, added to
 * a [[SegmentWriter]] and written block-major on close (local disk, a fresh directory per run).
 *
 *   dev/sbt "harness/runMain sparkbloom.bench.SegmentWriteSpeed [slots=2048] [blocks=512] [reps=5]"
 *
 * The defaults are one full segment (2,048 slots of 16 KiB filters: 32 MiB), what OPTIMIZE writes for a large
 * table's row groups.
 */
object SegmentWriteSpeed {
  def main(args: Array[String]): Unit = {
    val opts = Harness.options(args)
    val slots = opts.getOrElse("slots", "2048").toInt
    val blocks = opts.getOrElse("blocks", "512").toInt
    val reps = opts.getOrElse("reps", "5").toInt
    val rnd = new scala.util.Random(1)
    val filters = Array.fill(slots) { val b = new Array[Byte](32 * blocks); rnd.nextBytes(b); b }
    val conf = new Configuration()
    val ms = (0 to reps).map { _ =>
      val dir = Files.createTempDirectory("sparkbloom-segwrite")
      val fs = new Path(dir.toUri).getFileSystem(conf)
      val t0 = System.nanoTime()
      val w = new SegmentWriter(fs, new Path(dir.toUri), "d", 0)
      filters.foreach(f => w.add("c", 0, f))
      val segments = w.close()
      val t = (System.nanoTime() - t0) / 1e6
      require(segments.map(_.count).sum == slots, s"wrote ${segments.map(_.count)}")
      t
    }.drop(1) // the first run warms up
    println(f"segment write: $slots slots x $blocks blocks: runs ${ms.map(m => f"$m%.0f").mkString(", ")} ms; " +
      f"median ${ms.sorted.apply(ms.size / 2)}%.0f ms")
  }
}

package sparkbloom.bench

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.types.{DataType, LongType, StringType}
import org.apache.spark.unsafe.types.UTF8String

import sparkbloom.index.WriteIndexer
import sparkbloom.index.sliced.Summaries
import sparkbloom.parquet.{ChunkHasher, Footers}
import sparkbloom.sbbf.{Kernel, Sbbf}

/**
 * The steps of one write task's indexing, timed apart in one thread: `rows` rows of a bigint and a UUID string
 * hashed as a write task does, their distinct values counted, each column's row-group filter built and its
 * segment's summary built (sizes as `WriteSpeed`'s appends of 125,000 rows per file get: 8,192 and 3,072 blocks),
 * and with `file=` a Parquet file's footer read back both ways.
 *
 *   dev/sbt "harness/runMain sparkbloom.bench.TaskIndexSpeed [rows=125000] [reps=30] [file=part-....parquet]"
 */
object TaskIndexSpeed {
  def main(args: Array[String]): Unit = {
    val opts = Harness.options(args)
    val rows = opts.getOrElse("rows", "125000").toInt
    val reps = opts.getOrElse("reps", "30").toInt
    val leafBlocks = opts.getOrElse("leafBlocks", "8192").toInt
    val summaryBlocks = opts.getOrElse("summaryBlocks", "3072").toInt
    val file = opts.get("file") // a Parquet file to read the footer of, as a write task does after closing it
    val hconf = new Configuration()
    val proj = UnsafeProjection.create(Array[DataType](LongType, StringType))
    val data: Array[InternalRow] = Array.tabulate(rows) { i =>
      proj(InternalRow(i.toLong, UTF8String.fromString(java.util.UUID.randomUUID().toString))).copy()
    }
    val steps = scala.collection.mutable.LinkedHashMap[String, Seq[Double]]().withDefaultValue(Nil)
    def time[T](name: String)(f: => T): T = {
      val t0 = System.nanoTime(); val r = f; steps(name) :+= (System.nanoTime() - t0) / 1e6; r
    }
    for (rep <- 0 until reps) {
      val cols = Seq(new WriteIndexer.ColumnHashes(0, LongType), new WriteIndexer.ColumnHashes(1, StringType))
      time("hash rows") { var i = 0; while (i < rows) { cols(0).add(data(i)); cols(1).add(data(i)); i += 1 } }
      val ndv = time("distinct") { cols.map(c => ChunkHasher.distinct(c.hashes, c.n)) }
      time("row-group filters") {
        cols.zip(ndv).foreach { case (c, n) =>
          val f = Sbbf.empty(leafBlocks * 32, Kernel.scalar); f.insertAll(c.hashes, 0, n); f.toBytes
        }
      }
      time("summaries") {
        cols.zip(ndv).foreach { case (c, n) =>
          val f = Sbbf.empty(summaryBlocks * 32, Kernel.scalar)
          var i = 0; while (i < n) { f.insert(Summaries.rehash(c.hashes(i))); i += 1 }
          f.toBytes
        }
      }
      file.foreach { f =>
        val path = new Path(f)
        time("footer (parquet-java)")(Footers.read(hconf, path))
        time("footer (tail read)")(Footers.read(hconf, path, path.getFileSystem(hconf).getFileStatus(path).getLen))
      }
      if (rep == reps / 3) steps.clear() // the first third warms up
    }
    steps.foreach { case (k, v) => println(f"$k%-20s median ${v.sorted.apply(v.size / 2)}%6.2f ms") }
  }
}

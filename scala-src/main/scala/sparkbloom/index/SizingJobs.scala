package sparkbloom.index

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession

import sparkbloom.index.sliced.Layout
import sparkbloom.parquet.{FooterInfo, Footers}

/** The Spark side of [[FppBudget]]: the table's value counts before a build, the filters' figures after it. */
object SizingJobs {

  /**
   * N of the table budget, per column: Σ over row groups of the non-null values (rows − nulls from the
   * footer statistics, the rows when a chunk has no null count). Every row group's distinct count is at most
   * its non-null count, so Σ p_i ≤ ε holds whatever the data; for unique keys N is exact. Files already in
   * `carried` (unchanged since the previous version) are counted from its entries, the rest from their
   * footers, read in one Spark job. An unreadable file counts nothing here; the build reports it.
   */
  /** Adds one file's non-null value counts of `columns` (rows − nulls, the rows without a null count) to `out`. */
  def addValueCounts(footer: FooterInfo, columns: Array[String], out: Array[Long]): Unit =
    for (rg <- footer.rowGroups.indices; (c, i) <- columns.zipWithIndex) {
      val rows = footer.rowGroups(rg).numRows
      out(i) += footer.chunk(rg, c).flatMap(_.nullCount).map(n => math.max(0L, rows - n)).getOrElse(rows)
    }

  /** The part of N counted from the carried entries of the previous version (see [[valuesUpperBound]]). */
  def carriedCounts(columns: Seq[String], carried: Option[(Layout, Set[String])]): Map[String, Long] =
    columns.map { name =>
      name -> carried.map { case (l, keep) =>
        val c = l.column(name)
        l.paths.indices.filter(f => keep.contains(l.paths(f))).iterator.flatMap(f =>
          l.firstRg(f) until l.firstRg(f + 1)).map { rg =>
          c.map(c => if (c.nonNull(rg) >= 0) c.nonNull(rg) else l.rgRows(rg)).getOrElse(l.rgRows(rg))
        }.sum
      }.getOrElse(0L)
    }.toMap

  def valuesUpperBound(spark: SparkSession, files: Seq[DataFile], columns: Seq[String],
                       carried: Option[(Layout, Set[String])], resolve: Seq[IndexedColumn] = Nil): Map[String, Long] = {
    if (columns.isEmpty) return Map.empty
    val fromIndex = carriedCounts(columns, carried)
    if (files.isEmpty) return fromIndex
    val sc = spark.sparkContext
    val conf = new SerializableConf(spark.sessionState.newHadoopConf())
    val cols = columns.toArray
    sc.setJobDescription(s"sparkbloom: count values in ${files.size} footers")
    val counts = try {
      sc.parallelize(files, math.max(1, math.min(files.size, sc.defaultParallelism * 4)))
        .map { f =>
          val out = new Array[Long](cols.length)
          try {
            val footer = Footers.read(conf.value, new Path(f.path))
            // The build job that follows reads this footer from here when it runs in the same JVM.
            if (footer.fileLength == f.size) Footers.remember(f.path, f.size, f.mtime, footer.metadata)
            addValueCounts(footer.resolving(resolve.map(_.fileColumn)), cols, out)
          } catch { case NonFatal(_) => }
          out
        }
        .fold(new Array[Long](cols.length)) { (a, b) => a.indices.foreach(i => a(i) += b(i)); a }
    } finally sc.setJobDescription(null)
    cols.zipWithIndex.map { case (c, i) => c -> (fromIndex(c) + counts(i)) }.toMap
  }
}

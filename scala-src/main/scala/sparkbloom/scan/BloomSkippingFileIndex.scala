package sparkbloom.scan

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.execution.datasources.{FileIndex, PartitionDirectory}
import org.apache.spark.sql.types.StructType
import org.slf4j.LoggerFactory

import org.apache.spark.sql.SparkSession

import sparkbloom.index.IndexVersion
import sparkbloom.index.sliced.{Probers, SlicedProbe}
import sparkbloom.optimizer.BloomPredicate

/**
 * Wraps the relation's real [[FileIndex]]: lists what it lists, then drops files whose every row group
 * cannot match according to the bloom indexes, and records which row groups of the kept files may match
 * (in [[RowGroupSelection]], read by [[BloomParquetFileFormat]]). A file not in an index, or whose size or
 * modification time differ from the indexed ones, is kept whole. Everything else is forwarded.
 *
 * Each index answers for all its row groups at once ([[SlicedProbe]]: one run per segment and value), then
 * each listed file is looked up by path.
 */
class BloomSkippingFileIndex(
    val session: SparkSession,
    val delegate: FileIndex,
    val indexes: Seq[(IndexVersion, BloomPredicate)],
    val selection: RowGroupSelection,
    val tableName: String,
    val int96Probes: Boolean = true) extends FileIndex {

  private val log = LoggerFactory.getLogger(getClass)
  @volatile var lastSkipping: Option[ScanSkipping] = None

  override def rootPaths: Seq[Path] = delegate.rootPaths
  override def inputFiles: Array[String] = delegate.inputFiles
  override def refresh(): Unit = delegate.refresh()
  override def sizeInBytes: Long = delegate.sizeInBytes
  override def partitionSchema: StructType = delegate.partitionSchema
  override def metadataOpsTimeNs: Option[Long] = delegate.metadataOpsTimeNs

  def predicateSql: String = indexes.map(_._2.sql).distinct.mkString(" AND ")
  def indexNames: String = indexes.map(_._1.meta.name).distinct.mkString(", ")

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val listed = delegate.listFiles(partitionFilters, dataFilters)
    try prune(listed) catch {
      case NonFatal(e) =>
        log.warn(s"sparkbloom: reading every file of $tableName after an error while pruning: $e")
        listed
    }
  }

  private def prune(listed: Seq[PartitionDirectory]): Seq[PartitionDirectory] = {
    val t0 = System.nanoTime()
    val counters = new Probers.Counters
    val answers = indexes.map { case (v, p) =>
      v -> new SlicedProbe(v.layout, Probers.forVersion(session, v, counters), int96Probes).mightMatch(p)
    }
    var filesTotal, filesKept, rgTotal, rgKept, notCovered = 0L
    val ranges = Map.newBuilder[String, Array[Long]]
    // Per listed file: which indexes cover it (file number in each, -1: not covered). Reused arrays: this
    // loop runs once per listed file, so it allocates nothing for a file that is skipped whole.
    val vs = answers.map(_._1).toArray
    val layouts = vs.map(_.layout)
    val bitsOf = answers.map(_._2).toArray
    val fileNo = new Array[Int](vs.length)
    val out = listed.map { dir =>
      val kept = dir.files.filter { f =>
        filesTotal += 1
        val path = f.getPath.toString
        var first = -1; var i = 0
        while (i < vs.length) {
          fileNo(i) = vs(i).coveredFile(path, f.getLen, f.getModificationTime)
          if (first < 0 && fileNo(i) >= 0) first = i
          i += 1
        }
        if (first < 0) { notCovered += 1; filesKept += 1; true }
        else {
          val l0 = layouts(first); val f0 = fileNo(first)
          val from = l0.firstRg(f0); val until = l0.firstRg(f0 + 1)
          // A row group may match only if every index covering the file says it may.
          var keepCount = 0
          var keep: Array[Boolean] = null
          var rg = from
          while (rg < until) {
            var may = true; var k = first
            while (may && k < vs.length) {
              if (fileNo(k) >= 0) may = (if (k == first) bitsOf(k).get(rg) else otherSays(layouts(k), fileNo(k), bitsOf(k), rg - from, l0.rgOrdinal(rg)))
              k += 1
            }
            if (may) { keepCount += 1; if (keep == null) keep = new Array[Boolean](until - from); keep(rg - from) = true }
            rg += 1
          }
          rgTotal += until - from; rgKept += keepCount
          if (keepCount == 0 && until > from) false
          else {
            filesKept += 1
            if (keepCount < until - from) {
              val r = new Array[Long](2 * keepCount); var w = 0
              for (j <- 0 until until - from if keep(j)) { r(w) = l0.rgStart(from + j); r(w + 1) = l0.rgEnd(from + j); w += 2 }
              ranges += path -> r
            }
            true
          }
        }
      }
      PartitionDirectory(dir.values, kept)
    }.filter(_.files.nonEmpty)
    selection.add(ranges.result())
    val s = ScanSkipping(indexes.map(i => s"${i._1.meta.name} on ${i._1.meta.table}").distinct.mkString(", "), tableName,
      predicateSql, filesTotal, filesKept, rgTotal + notCovered, rgKept + notCovered, notCovered,
      indexBytesRead = counters.bytesRead, probeTimeNs = System.nanoTime() - t0, distributedProbe = counters.distributed)
    lastSkipping = Some(s)
    SkippingReport.record(s)
    indexes.map(_._1.dir.toString).distinct.foreach(d => SkippingReport.recordUsage(d, s))
    log.info(s"sparkbloom: $tableName [$predicateSql]: files $filesKept of $filesTotal, row groups (indexed) $rgKept of $rgTotal, " +
      s"not covered $notCovered, index bytes read ${counters.bytesRead}")
    out
  }

  /** Another index's answer for the row group of ordinal `ordinal`, normally at the same position in the file. */
  private def otherSays(l: sparkbloom.index.sliced.Layout, f: Int, bits: java.util.BitSet, pos: Int, ordinal: Int): Boolean = {
    val from = l.firstRg(f); val until = l.firstRg(f + 1)
    if (from + pos < until && l.rgOrdinal(from + pos) == ordinal) bits.get(from + pos)
    else (from until until).find(r => l.rgOrdinal(r) == ordinal).forall(bits.get)
  }

  override def toString: String = s"BloomSkippingFileIndex(indexes=[$indexNames], predicate=[$predicateSql], delegate=$delegate)"
  override def equals(o: Any): Boolean = o match {
    case b: BloomSkippingFileIndex => (b eq this) || (b.delegate == delegate && b.predicateSql == predicateSql && b.indexNames == indexNames)
    case _ => false
  }
  override def hashCode(): Int = delegate.hashCode() * 31 + predicateSql.hashCode
}

/** Row-group byte ranges that may match, per file path; shared by the file index and the file format. */
final class RowGroupSelection(val enabled: Boolean) extends Serializable {
  @volatile private var ranges: Map[String, Array[Long]] = Map.empty
  def add(more: Map[String, Array[Long]]): Unit = synchronized { if (enabled) ranges = ranges ++ more }
  /** [start, end) pairs, flattened, of the row groups to read; None = read the whole file. */
  def get(path: String): Option[Array[Long]] = ranges.get(path)
}

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
    val out = listed.map { dir =>
      val kept = dir.files.filter { f =>
        filesTotal += 1
        val path = f.getPath.toString
        val covered = answers.flatMap { case (v, bits) => v.covers(path, f.getLen, f.getModificationTime).map(i => (v.layout, i, bits)) }
        if (covered.isEmpty) { notCovered += 1; filesKept += 1; true }
        else {
          // A row group may match only if every index covering the file says it may.
          val (l0, f0, _) = covered.head
          val rgs = l0.firstRg(f0) until l0.firstRg(f0 + 1)
          val keep = rgs.filter(rg => covered.forall { case (l, fi, bits) =>
            (l.firstRg(fi) until l.firstRg(fi + 1)).find(r => l.rgOrdinal(r) == l0.rgOrdinal(rg)).forall(bits.get) })
          rgTotal += rgs.size; rgKept += keep.size
          if (keep.isEmpty && rgs.nonEmpty) false
          else {
            filesKept += 1
            if (keep.size < rgs.size) ranges += path -> keep.flatMap(r => Array(l0.rgStart(r), l0.rgEnd(r))).toArray
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
    log.info(s"sparkbloom: $tableName [$predicateSql]: files $filesKept of $filesTotal, row groups (indexed) $rgKept of $rgTotal, " +
      s"not covered $notCovered, index bytes read ${counters.bytesRead}")
    out
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

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
 * A source whose files a bloom index prunes at planning time: Spark's file index for V1 Parquet
 * ([[BloomSkippingFileIndex]]), and the Delta and Iceberg wrappers of `sparkbloom.lakehouse`. The metrics
 * node, EXPLAIN and `sparkbloom.skipping(df)` find the decision through it.
 */
trait PrunedSource {
  def pruner: IndexPruner
}

/**
 * Wraps the relation's real [[FileIndex]]: lists what it lists, then drops files whose every row group
 * cannot match according to the bloom indexes, and records which row groups of the kept files may match
 * (in [[RowGroupSelection]], read by [[BloomParquetFileFormat]]). A file not in an index, or whose size or
 * modification time differ from the indexed ones, is kept whole. Everything else is forwarded.
 */
class BloomSkippingFileIndex(
    val session: SparkSession,
    val delegate: FileIndex,
    val indexes: Seq[(IndexVersion, BloomPredicate)],
    val selection: RowGroupSelection,
    val tableName: String,
    val int96Probes: Boolean = true) extends sparkbloom.shims.FileIndexShims with PrunedSource {

  private val log = LoggerFactory.getLogger(getClass)
  val pruner = new IndexPruner(session, indexes, selection, tableName, int96Probes)
  def lastSkipping: Option[ScanSkipping] = pruner.lastSkipping

  override def rootPaths: Seq[Path] = delegate.rootPaths
  override def inputFiles: Array[String] = delegate.inputFiles
  override def refresh(): Unit = delegate.refresh()
  override def sizeInBytes: Long = delegate.sizeInBytes
  override def partitionSchema: StructType = delegate.partitionSchema
  override def metadataOpsTimeNs: Option[Long] = delegate.metadataOpsTimeNs

  def predicateSql: String = pruner.predicateSql
  def indexNames: String = pruner.indexNames

  override def listFiles(partitionFilters: Seq[Expression], dataFilters: Seq[Expression]): Seq[PartitionDirectory] = {
    val listed = delegate.listFiles(partitionFilters, dataFilters)
    try prune(listed) catch {
      case NonFatal(e) =>
        log.warn(s"sparkbloom: reading every file of $tableName after an error while pruning: $e")
        listed
    }
  }

  private def prune(listed: Seq[PartitionDirectory]): Seq[PartitionDirectory] = {
    val dirs = listed.toArray
    val dirFiles = dirs.map(_.files.toArray)
    val statuses = {
      val a = new Array[org.apache.hadoop.fs.FileStatus](dirFiles.iterator.map(_.length).sum)
      var n = 0
      for (files <- dirFiles) { var j = 0; while (j < files.length) { a(n) = files(j).fileStatus; n += 1; j += 1 } }
      a
    }
    val keptPos = pruner.keep(statuses)
    val b = Seq.newBuilder[PartitionDirectory]
    var offset = 0
    for (d <- dirs.indices) {
      val files = dirFiles(d)
      val kept = Seq.newBuilder[org.apache.spark.sql.execution.datasources.FileStatusWithMetadata]
      var p = keptPos.nextSetBit(offset)
      while (p >= 0 && p < offset + files.length) { kept += files(p - offset); p = keptPos.nextSetBit(p + 1) }
      val k = kept.result()
      if (k.nonEmpty) b += PartitionDirectory(dirs(d).values, k)
      offset += files.length
    }
    b.result()
  }

  override def toString: String = s"BloomSkippingFileIndex(indexes=[$indexNames], predicate=[$predicateSql], delegate=$delegate)"
  override def equals(o: Any): Boolean = o match {
    case b: BloomSkippingFileIndex => (b eq this) || (b.delegate == delegate && b.predicateSql == predicateSql && b.indexNames == indexNames)
    case _ => false
  }
  override def hashCode(): Int = delegate.hashCode() * 31 + predicateSql.hashCode
}

/**
 * The planning-time decision of bloom indexes over a listing of files, whatever lists them (Spark's file
 * index, a Delta snapshot, an Iceberg scan): which files may match, and which row groups of the kept files
 * (recorded in [[RowGroupSelection]]). A file not in an index, or whose size or modification time differ from
 * the indexed ones, is kept whole.
 *
 * Each index answers for all its row groups at once ([[SlicedProbe]]: one run per segment and value), then
 * each listed file is looked up by path.
 */
final class IndexPruner(
    val session: SparkSession,
    val indexes: Seq[(IndexVersion, BloomPredicate)],
    val selection: RowGroupSelection,
    val tableName: String,
    val int96Probes: Boolean = true) {

  private val log = LoggerFactory.getLogger(getClass)
  @volatile var lastSkipping: Option[ScanSkipping] = None

  def predicateSql: String = indexes.map(_._2.sql).distinct.mkString(" AND ")
  def indexNames: String = indexes.map(_._1.meta.name).distinct.mkString(", ")

  /** The positions in `statuses` of the files to read; records the decision (metrics, report, selection). */
  def keep(statuses: Array[org.apache.hadoop.fs.FileStatus]): java.util.BitSet = {
    val t0 = System.nanoTime()
    val counters = new Probers.Counters
    val answers = indexes.map { case (v, p) =>
      v -> new SlicedProbe(v.layout, Probers.forVersion(session, v, counters), int96Probes).mightMatch(p)
    }
    var filesTotal, filesKept, rgTotal, rgKept, notCovered = 0L
    val ranges = Map.newBuilder[String, Array[Long]]
    val vs = answers.map(_._1).toArray
    val layouts = vs.map(_.layout)
    val bitsOf = answers.map(_._2).toArray
    val matched = vs.map(v => FileMatcher.matchListing(v, statuses))
    val keptPos = new java.util.BitSet(statuses.length)
    val uncoveredPos = Array.newBuilder[Int]
    filesTotal = statuses.length

    /** Decides listed file `pos`, covered by index `first` as its file `f0` (other indexes: `fileNo`). */
    def decide(pos: Int, first: Int, fileNo: Int => Int): Unit = {
      val l0 = layouts(first); val f0 = fileNo(first)
      val from = l0.firstRg(f0); val until = l0.firstRg(f0 + 1)
      // A row group may match only if every index covering the file says it may.
      var keepCount = 0
      var keep: Array[Boolean] = null
      var rg = from
      while (rg < until) {
        var may = true; var k = first
        while (may && k < vs.length) {
          val fk = fileNo(k)
          if (fk >= 0) may = (if (k == first) bitsOf(k).get(rg) else otherSays(layouts(k), fk, bitsOf(k), rg - from, l0.rgOrdinal(rg)))
          k += 1
        }
        if (may) { keepCount += 1; if (keep == null) keep = new Array[Boolean](until - from); keep(rg - from) = true }
        rg += 1
      }
      rgKept += keepCount
      if (keepCount > 0 || until == from) {
        keptPos.set(pos)
        if (keepCount < until - from) {
          val r = new Array[Long](2 * keepCount); var w = 0
          for (j <- 0 until until - from if keep(j)) { r(w) = l0.rgStart(from + j); r(w + 1) = l0.rgEnd(from + j); w += 2 }
          ranges += statuses(pos).getPath.toString -> r
        }
      }
    }

    if (vs.length == 1) {
      // One index (the usual case): work in proportion to the row groups that may match, not to the table.
      // Files not covered are read; a covered file is read only if one of its row groups may match.
      val m = FileMatcher.summary(vs(0), statuses, matched(0))
      notCovered = m.notCovered.length
      m.notCovered.foreach { p => keptPos.set(p); uncoveredPos += p }
      rgTotal = m.coveredRowGroups
      val l = layouts(0); val bits = bitsOf(0)
      var rg = bits.nextSetBit(0)
      while (rg >= 0) {
        val f = m.fileOfRowGroup(rg)
        val pos = m.posOfFile(f)
        if (pos >= 0) decide(pos, 0, _ => f)
        rg = bits.nextSetBit(l.firstRg(f + 1)) // the file's row groups were all decided
      }
      // Covered files without row groups (empty files) are kept, as the general loop does.
      m.emptyCovered.foreach(p => keptPos.set(p))
    } else {
      val fileNo = new Array[Int](vs.length)
      var pos = 0
      while (pos < statuses.length) {
        var first = -1; var i = 0
        while (i < vs.length) { fileNo(i) = matched(i)(pos); if (first < 0 && fileNo(i) >= 0) first = i; i += 1 }
        if (first < 0) { notCovered += 1; keptPos.set(pos); uncoveredPos += pos }
        else { rgTotal += layouts(first).firstRg(fileNo(first) + 1) - layouts(first).firstRg(fileNo(first)); decide(pos, first, fileNo) }
        pos += 1
      }
    }
    filesKept = keptPos.cardinality()
    selection.add(ranges.result())
    selection.addNotCovered(uncoveredPos.result().map(p => statuses(p).getPath.toString))
    val s = ScanSkipping(indexes.map(i => s"${i._1.meta.name} on ${i._1.meta.table}").distinct.mkString(", "), tableName,
      predicateSql, filesTotal, filesKept, rgTotal + notCovered, rgKept + notCovered, notCovered,
      indexBytesRead = counters.bytesRead, probeTimeNs = System.nanoTime() - t0, distributedProbe = counters.distributed)
    lastSkipping = Some(s)
    SkippingReport.record(s)
    indexes.map(_._1.dir.toString).distinct.foreach(d => SkippingReport.recordUsage(d, s))
    log.info(s"sparkbloom: $tableName [$predicateSql]: files $filesKept of $filesTotal, row groups (indexed) $rgKept of $rgTotal, " +
      s"not covered $notCovered, index bytes read ${counters.bytesRead}")
    keptPos
  }

  /** Another index's answer for the row group of ordinal `ordinal`, normally at the same position in the file. */
  private def otherSays(l: sparkbloom.index.sliced.Layout, f: Int, bits: java.util.BitSet, pos: Int, ordinal: Int): Boolean = {
    val from = l.firstRg(f); val until = l.firstRg(f + 1)
    if (from + pos < until && l.rgOrdinal(from + pos) == ordinal) bits.get(from + pos)
    else (from until until).find(r => l.rgOrdinal(r) == ordinal).forall(bits.get)
  }

}

/**
 * Which file of an index version each listed file is (-1: not in it, or changed since: size or modification
 * time differ). A lookup per listed file by path; the answer for a listing is remembered in [[IndexCache]]
 * (bounded by `spark.sparkbloom.cache.maxBytes`) and reused when the next query lists the very same
 * `FileStatus` objects (Spark's file index and its `FileStatusCache` hand out the same objects until the
 * table is refreshed): checked object by object, so a listing with any file added, removed, replaced or
 * reordered is matched again. Only identity is trusted, never a hash.
 */
object FileMatcher {
  private final class Matched(val statuses: Array[org.apache.hadoop.fs.FileStatus], val fileNos: Array[Int]) {
    @volatile var summary: Summary = null
  }

  /**
   * A listing matched to one index version, for pruning in proportion to the candidates: listed position of
   * each file of the version (-1: not listed), the listed files it does not cover, and row group → file.
   */
  final class Summary(val posOfFile: Array[Int], val notCovered: Array[Int], val emptyCovered: Array[Int],
                      val coveredRowGroups: Long, firstRg: Array[Int]) {
    def fileOfRowGroup(rg: Int): Int = {
      val i = java.util.Arrays.binarySearch(firstRg, rg)
      if (i >= 0) { var f = i; while (f + 1 < firstRg.length && firstRg(f + 1) == rg) f += 1; f } else -i - 2
    }
  }

  def summary(v: IndexVersion, statuses: Array[org.apache.hadoop.fs.FileStatus], fileNos: Array[Int]): Summary = {
    val cached = sparkbloom.index.sliced.IndexCache.get[Matched](key(v)).filter(_.fileNos eq fileNos)
    cached.flatMap(m => Option(m.summary)).getOrElse {
      val l = v.layout
      val posOfFile = Array.fill(l.numFiles)(-1)
      val notCovered = Array.newBuilder[Int]; val empty = Array.newBuilder[Int]
      var rgs = 0L
      var i = 0
      while (i < fileNos.length) {
        val f = fileNos(i)
        if (f < 0) notCovered += i
        else {
          posOfFile(f) = i
          val n = l.firstRg(f + 1) - l.firstRg(f)
          rgs += n
          if (n == 0) empty += i
        }
        i += 1
      }
      val s = new Summary(posOfFile, notCovered.result(), empty.result(), rgs, l.firstRg)
      cached.foreach(_.summary = s)
      s
    }
  }

  // One remembered listing per index version (the newest replaces it), so a listing Spark has dropped is not
  // kept alive here for long.
  private def key(v: IndexVersion): String =
    s"${v.dir}@${v.meta.version}@${v.meta.dataDir}#listing"

  def matchListing(v: IndexVersion, statuses: Array[org.apache.hadoop.fs.FileStatus]): Array[Int] = {
    val k = key(v)
    sparkbloom.index.sliced.IndexCache.get[Matched](k).filter(m => sameObjects(m.statuses, statuses)) match {
      case Some(m) => m.fileNos
      case None =>
        val out = new Array[Int](statuses.length)
        var i = 0
        while (i < statuses.length) {
          val st = statuses(i)
          out(i) = v.coveredFile(st.getPath.toString, st.getLen, st.getModificationTime)
          i += 1
        }
        sparkbloom.index.sliced.IndexCache.put(k, new Matched(statuses, out), 16L * statuses.length + 4L * v.layout.numFiles + 64)
        out
    }
  }

  private def sameObjects(a: Array[org.apache.hadoop.fs.FileStatus], b: Array[org.apache.hadoop.fs.FileStatus]): Boolean = {
    if (a.length != b.length) return false
    var i = 0
    while (i < a.length) { if (a(i) ne b(i)) return false; i += 1 }
    true
  }
}

/** Row-group byte ranges that may match, per file path; shared by the file index and the file format. */
final class RowGroupSelection(val enabled: Boolean) extends Serializable {
  @volatile private var ranges: Map[String, Array[Long]] = Map.empty
  @volatile private var uncovered: Set[String] = Set.empty
  @volatile private var decided = false
  def add(more: Map[String, Array[Long]]): Unit = synchronized { if (enabled) ranges = ranges ++ more }
  /** [start, end) pairs, flattened, of the row groups to read; None = read the whole file. */
  def get(path: String): Option[Array[Long]] = ranges.get(path)
  /** Records the listed files no index covers (an index decided every other listed file). */
  def addNotCovered(paths: Iterable[String]): Unit = synchronized { decided = true; uncovered = uncovered ++ paths }
  /** Whether an index decided this file at planning time (false: no index, or the file is new or changed). */
  def decidedByIndex(path: String): Boolean = decided && !uncovered.contains(path)
}

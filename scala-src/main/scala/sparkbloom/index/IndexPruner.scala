package sparkbloom.index

import org.apache.spark.sql.SparkSession
import org.slf4j.LoggerFactory

import sparkbloom.index.sliced.{Layout, Probers, SlicedProbe}
import sparkbloom.predicate.BloomPredicate

/**
 * A source whose files a bloom index prunes at planning time (a file index, a V2 table or scan of a table
 * format). The metrics node, EXPLAIN and `sparkbloom.skipping(df)` find the decision through it.
 */
trait PrunedSource {
  def pruner: IndexPruner
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
    val int96Probes: Boolean = true,
    // what EXPLAIN shows instead of the predicate (run-time keys), and how many keys the predicate holds
    val shown: Option[String] = None,
    val keysProbed: Long = 0L) {

  private val log = LoggerFactory.getLogger(getClass)
  @volatile var lastSkipping: Option[ScanSkipping] = None

  def predicateSql: String = shown.getOrElse(indexes.map(_._2.sql).distinct.mkString(" AND "))
  def indexNames: String = indexes.map(_._1.meta.name).distinct.mkString(", ")

  /** The positions in `statuses` of the files to read; records the decision (metrics, report, selection). */
  def keep(statuses: Array[org.apache.hadoop.fs.FileStatus]): java.util.BitSet = {
    val t0 = System.nanoTime()
    val counters = new Probers.Counters
    val answers = indexes.map { case (v, p) =>
      v -> Probers.sliced(session, v, counters, int96Probes).mightMatch(p)
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
          if (fk >= 0) may =
            (if (k == first) bitsOf(k).get(rg) else otherSays(layouts(k), fk, bitsOf(k), rg - from, l0.rgOrdinal(rg)))
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
          for (j <- 0 until until - from if keep(j)) {
            r(w) = l0.rgStart(from + j); r(w + 1) = l0.rgEnd(from + j); w += 2
          }
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
        else {
          rgTotal += layouts(first).firstRg(fileNo(first) + 1) - layouts(first).firstRg(fileNo(first));
          decide(pos, first, fileNo)
        }
        pos += 1
      }
    }
    filesKept = keptPos.cardinality()
    selection.add(ranges.result())
    selection.addNotCovered(uncoveredPos.result().map(p => statuses(p).getPath.toString))
    val s = ScanSkipping(
      indexes.map(i => s"${i._1.meta.name} on ${i._1.meta.table}").distinct.mkString(", "), tableName,
      predicateSql, filesTotal, filesKept, rgTotal + notCovered, rgKept + notCovered, notCovered,
      indexBytesRead = counters.bytesRead, probeTimeNs = System.nanoTime() - t0,
      distributedProbe = counters.distributed, keysProbed = keysProbed)
    lastSkipping = Some(s)
    SkippingLog.record(s)
    indexes.map(_._1.dir.toString).distinct.foreach(d => SkippingLog.recordUsage(d, s))
    if (notCovered > 0) indexes.map(_._1).groupBy(_.dir.toString).values.foreach(v =>
      SkippingLog.recordUncovered(session, v.head, s))
    log.info(
      s"sparkbloom: $tableName [$predicateSql]: files $filesKept of $filesTotal, row groups (indexed) $rgKept of " +
        s"$rgTotal, " +
        s"not covered $notCovered, index bytes read ${counters.bytesRead}")
    keptPos
  }

  /** Another index's answer for the row group of ordinal `ordinal`, normally at the same position in the file. */
  private def otherSays(l: Layout, f: Int, bits: java.util.BitSet, pos: Int, ordinal: Int): Boolean = {
    val from = l.firstRg(f); val until = l.firstRg(f + 1)
    if (from + pos < until && l.rgOrdinal(from + pos) == ordinal) bits.get(from + pos)
    else (from until until).find(r => l.rgOrdinal(r) == ordinal).forall(bits.get)
  }

}

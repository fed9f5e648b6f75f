package sparkbloom.index.sliced

import sparkbloom.hash.ColumnEncoding

/**
 * The row-group metadata of one index version, as flat arrays (no object per row group: 10^6 row groups
 * must fit a driver). Row groups are numbered 0 until R in file order; file f owns [firstRg(f), firstRg(f+1)).
 *
 * Filters live in [[Segment]]s; a row group's filter for column c is slot `slot(rg)` of segment
 * `segment(rg)` of that column, or nowhere (`segment(rg) == -1`).
 */
final class Layout(
    val paths: PathStore,
    val sizes: Array[Long],
    val mtimes: Array[Long],
    val firstRg: Array[Int], // length F + 1
    val rgOrdinal: Array[Int], // the row group's ordinal in its file
    val rgStart: Array[Long], // byte range [start, end) of the row group in its file (see Footers)
    val rgEnd: Array[Long],
    val rgRows: Array[Long],
    val columns: Array[ColumnSlice],
    val segments: Array[Segment],
    val summaries: Summaries = Summaries.none,
    // reads the per-row-group statistics if they were not yet, and says whether they were damaged
    val statsDamage: () => Option[String] = () => None,
    val format: Int = 2) { // the layout.bin format it was read from (1: sparkbloom 0.1)

  /** One line for DESCRIBE: the levels, and how to get the second one where it is missing. */
  def describeLevels: String = {
    val summarised = segments.indices.count(s => summaries.summaryOf(s) >= 0)
    val levels = s"${segments.length} segments, $summarised of them under ${summaries.segments.length} summary " +
      s"segments (layout format $format)"
    if (segments.nonEmpty && summarised == 0 && format < 2)
      s"$levels; written by sparkbloom 0.1: REFRESH ... FULL adds segment summaries and the compact layout"
    else if (summarised < segments.length)
      s"$levels; segments of filters harvested from the files, or of an explicit fpp, have no summary"
    else levels
  }

  def numFiles: Int = paths.length
  def numRowGroups: Int = rgStart.length
  def column(name: String): Option[ColumnSlice] = columns.find(_.name == name)

  /** Path → file number (planning looks listed files up). */
  def fileIndex: PathStore = paths

  /** Heap held by this layout, roughly (for the cache's budget). */
  def approximateBytes: Long = paths.approximateBytes + 16L * numFiles + 28L * numRowGroups +
    columns.length * 17L * numRowGroups + 8L * segments.iterator.map(_.count.toLong).sum +
    12L * summaries.of.length

  /** For each segment, the distinct encoding ids (of its column) of the row groups in its slots. */
  lazy val segmentEncodings: Array[Array[Int]] = segments.indices.map { s =>
    columns.find(_.name == segments(s).column).map { col =>
      val slots = slotToRg(s)
      val seen = new java.util.BitSet()
      var j = 0
      while (j < slots.length) {
        val rg = slots(j); if (rg >= 0 && col.encoding(rg) >= 0) seen.set(col.encoding(rg)); j += 1
      }
      seen.stream().toArray
    }.getOrElse(Array.empty[Int])
  }.toArray

  /** For each segment, the row group held in each slot. */
  lazy val slotToRg: Array[Array[Int]] = {
    val out = segments.map { s =>
      val a = new Array[Int](s.count); java.util.Arrays.fill(a, -1); a
    }
    for (c <- columns) {
      val seg = c.segment; val slot = c.slot
      var rg = 0
      while (rg < numRowGroups) { if (seg(rg) >= 0) out(seg(rg))(slot(rg)) = rg; rg += 1 }
    }
    out
  }
}

object Layout {
  /** No files: every file of the table is then "not covered" and read. */
  def empty(columns: Seq[String]): Layout = new Layout(PathStore(Array.empty), Array.empty, Array.empty, Array(0),
    Array.empty,
    Array.empty, Array.empty, Array.empty,
    columns.map(c =>
      new ColumnSlice(c, Array.empty, Array.empty, Array.empty,
        Array.empty, Array.empty, Array.empty, Array.empty, Array.empty, Array.empty)).toArray, Array.empty)
}

/**
 * One indexed column over all row groups. `flags`: bit 0 = the chunk has nulls, bit 1 = it has no non-null
 * value (only nulls, or the column is absent from the file: never matches a value). `encoding(rg) == -1`:
 * no usable filter (unknown encoding): always might match.
 */
final class ColumnSlice(
    val name: String,
    val encodings: Array[ColumnEncoding],
    val encoding: Array[Int],
    val flags: Array[Byte],
    val segment: Array[Int],
    val slot: Array[Int],
    statsOf: () => ColumnSlice.Stats) {
  def this(name: String, encodings: Array[ColumnEncoding], encoding: Array[Int], flags: Array[Byte],
           segment: Array[Int],
           slot: Array[Int], nonNull: Array[Long], ndv: Array[Long], fpp: Array[Float], source: Array[Byte]) =
    this(name, encodings, encoding, flags, segment, slot,
      { val s = ColumnSlice.Stats(nonNull, ndv, fpp, source); () => s })

  // For builds, REFRESH and DESCRIBE, not for planning: a layout loaded for planning reads them on first use.
  private lazy val stats = statsOf()
  def nonNull: Array[Long] = stats.nonNull
  def ndv: Array[Long] = stats.ndv
  def fpp: Array[Float] = stats.fpp
  def source: Array[Byte] = stats.source

  def hasNull(rg: Int): Boolean = (flags(rg) & ColumnSlice.HasNull) != 0

  /** Row groups that may hold a value but have no usable filter (no segment or unknown encoding): always read. */
  lazy val unfiltered: java.util.BitSet = {
    val b = new java.util.BitSet(flags.length)
    var rg = 0
    while (rg < flags.length) { if (!onlyNulls(rg) && (segment(rg) < 0 || encoding(rg) < 0)) b.set(rg); rg += 1 }
    b
  }
  def onlyNulls(rg: Int): Boolean = (flags(rg) & ColumnSlice.OnlyNulls) != 0
}

object ColumnSlice {
  final case class Stats(nonNull: Array[Long], ndv: Array[Long], fpp: Array[Float], source: Array[Byte])
  val HasNull: Byte = 1
  val OnlyNulls: Byte = 2
  /** Where a filter came from, as stored in `source`. */
  val Sources: IndexedSeq[String] = IndexedSeq("absent", "scan", "harvest", "unsupported-encoding", "damaged")
  def sourceId(s: String): Byte = { val i = Sources.indexOf(s); (if (i < 0) Sources.size - 1 else i).toByte }
}

/**
 * The level above the row groups' filters: a summary filter per segment, over the hashes of every value its
 * row groups hold, so that a probe reads a segment's run only when its summary says the value may be there.
 * The summaries of a column are stored as segments themselves (`segments`: slot j of a summary segment is
 * the summary of one row-group segment), block-sliced like the row groups' filters, so checking every
 * segment of a column costs one run per summary segment.
 *
 * A summary is an SBBF over [[Summaries.rehash]] of each value's hash, not the hash itself: the row group's
 * filter picks its block from the hash's upper half and its bits from the lower half, so the summary must see
 * independent bits, or its false positives would be the same values' and the two levels would not multiply.
 *
 * Per row-group segment s: `of(s)` the summary segment holding its summary (-1: none, e.g. filters
 * harvested from the files, whose values were never read: the segment is always probed), `slot(s)` its slot
 * there, `fpp(s)` the summary's false-positive probability measured from its bits (for the budget model).
 */
final class Summaries(val segments: Array[Segment], val of: Array[Int], val slot: Array[Int], val fpp: Array[Float]) {
  def isEmpty: Boolean = segments.isEmpty
  /** The summary segment of row-group segment `s`, or -1. */
  def summaryOf(s: Int): Int = if (s < of.length) of(s) else -1
  /** For each summary segment, the row-group segment in each slot (-1: none in this layout). */
  lazy val slotToSegment: Array[Array[Int]] = {
    val out = segments.map(t => Array.fill(t.count)(-1))
    var s = 0
    while (s < of.length) { if (of(s) >= 0) out(of(s))(slot(s)) = s; s += 1 }
    out
  }
}

object Summaries {
  val none: Summaries = new Summaries(Array.empty, Array.empty, Array.empty, Array.empty)

  /** The hash a summary holds for a value whose SBBF hash is `h` (a bijection: Stafford's mix13 finaliser). */
  def rehash(h: Long): Long = {
    var z = h ^ 0x2545f4914f6cdd1dL
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL
    z ^ (z >>> 31)
  }
}

/**
 * `count` filters of `blocks` blocks of one column, stored block-major in `file` (relative to the index
 * directory): run b (block b of every filter, slot order, 32 bytes each) at offset b·(32·count + 4),
 * followed by the CRC32 of the run (4 bytes, little endian). A lookup of one value reads one run.
 */
final case class Segment(file: String, column: String, blocks: Int, count: Int) {
  def runBytes: Int = 32 * count
  def runStride: Long = runBytes.toLong + 4
  def runOffset(block: Int): Long = block * runStride
  def fileLength: Long = blocks * runStride
}

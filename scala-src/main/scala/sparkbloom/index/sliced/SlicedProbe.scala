package sparkbloom.index.sliced

import java.util.BitSet

import scala.collection.mutable

import sparkbloom.encoding.ValueHasher
import sparkbloom.predicate.BloomPredicate
import sparkbloom.predicate.BloomPredicate._
import sparkbloom.sbbf.{Kernel, RunProbe}

/**
 * Evaluates a [[BloomPredicate]] over every row group of a [[Layout]] at once: the result has bit rg set when
 * row group rg might match. A value's hash selects one block per segment, so an `=` reads one run per
 * segment and an IN of k values at most k; each run is tested against the hash's mask in one pass
 * ([[RunProbe]]). Unsure means "might match": no filter, an unusable encoding, a value that cannot be
 * encoded, a run that cannot be read or fails its CRC.
 */
final class SlicedProbe(layout: Layout, prober: SlicedProbe.Prober, int96Probes: Boolean = true,
                        summaryRuns: SlicedProbe.RunFetcher = SlicedProbe.NoRuns) {
  private val all = { val b = new BitSet(layout.numRowGroups); b.set(0, layout.numRowGroups); b }

  def mightMatch(p: BloomPredicate): BitSet = p match {
    case Unknown => all.clone().asInstanceOf[BitSet]
    case Nothing => new BitSet(layout.numRowGroups)
    case IsNull(c) =>
      layout.column(c).map(col => bits(rg => col.hasNull(rg))).getOrElse(all.clone().asInstanceOf[BitSet])
    case in: In => layout.column(in.column).map(values(in, _)).getOrElse(all.clone().asInstanceOf[BitSet])
    case And(l, r) => val b = mightMatch(l); b.and(mightMatch(r)); b
    case Or(l, r) => val b = mightMatch(l); b.or(mightMatch(r)); b
  }

  /**
   * The requests the segments' summaries let through: each segment probed only with the hashes its summary
   * may hold, and not at all when it holds none. A segment without a summary, or whose summary run cannot be
   * read, is probed with every hash.
   */
  private def descend(requests: Seq[SlicedProbe.Request]): Seq[SlicedProbe.Request] = {
    val sums = layout.summaries
    val (direct, summarised) = requests.partition(r => sums.summaryOf(r.segmentIndex) < 0)
    if (summarised.isEmpty) return direct
    // Per segment (by request), the hashes its summary may hold.
    val position = new java.util.HashMap[Int, Int]() // segment index → request position in `summarised`
    summarised.iterator.zipWithIndex.foreach { case (r, i) => position.put(r.segmentIndex, i) }
    val keep = Array.fill(summarised.size)(new mutable.ArrayBuilder.ofLong)
    val count = new Array[Int](summarised.size)
    for ((t, rs) <- summarised.groupBy(r => sums.summaryOf(r.segmentIndex))) {
      val seg = sums.segments(t)
      // Segments of one column share their hash array unless their encodings differ (see `values`).
      val shared = rs.forall(_.hashes eq rs.head.hashes)
      val hs = if (shared) rs.head.hashes else SlicedProbe.distinct(rs.iterator.flatMap(_.hashes.iterator).toArray)
      val rehashed = hs.map(Summaries.rehash)
      val blocks = rehashed.map(h => Kernel.blockIndex(h, seg.blocks))
      val runs = summaryRuns(seg, SlicedProbe.distinct(blocks.map(_.toLong)).map(_.toInt).toSeq)
      val slots = sums.slotToSegment(t)
      val m = new Array[Long]((seg.count + 63) >>> 6)
      def add(s: Int, h: Long): Unit = {
        val at = if (s < 0) -1 else position.getOrDefault(s, -1)
        if (at >= 0) { keep(at) += h; count(at) += 1 }
      }
      var i = 0
      while (i < hs.length) {
        runs.get(blocks(i)).flatten match {
          case Some(run) =>
            java.util.Arrays.fill(m, 0L)
            RunProbe.default.probeRun(run, 0, seg.count, rehashed(i), m)
            var w = 0
            while (w < m.length) {
              var word = m(w)
              while (word != 0) {
                val j = (w << 6) + java.lang.Long.numberOfTrailingZeros(word)
                if (j < seg.count) add(slots(j), hs(i))
                word &= word - 1
              }
              w += 1
            }
          case None => rs.foreach(r => add(r.segmentIndex, hs(i))) // unreadable summary: probe them all
        }
        i += 1
      }
    }
    val sharedAll = summarised.forall(_.hashes eq summarised.head.hashes)
    direct ++ summarised.indices.iterator.filter(count(_) > 0).map { i =>
      val r = summarised(i)
      val found = keep(i).result() // distinct: each hash is probed once per summary segment
      if (sharedAll) r.copy(hashes = found)
      else {
        // a hash another segment of the same summary segment brought is kept only if this segment probes it
        val own = new mutable.LongMap[Unit](r.hashes.length); r.hashes.foreach(own.update(_, ()))
        r.copy(hashes = found.filter(own.contains))
      }
    }.filter(_.hashes.nonEmpty)
  }

  private def bits(f: Int => Boolean): BitSet = {
    val b = new BitSet(layout.numRowGroups)
    var rg = 0
    while (rg < layout.numRowGroups) { if (f(rg)) b.set(rg); rg += 1 }
    b
  }

  private def values(in: In, c: ColumnSlice): BitSet = {
    // Hashes of the whole list in each encoding the column has; null: some value cannot be encoded exactly.
    val hashes: Array[Array[Long]] = c.encodings.map { e =>
      if (!int96Probes && e.physical == "INT96") null
      else {
        val parts = in.values.map(v => ValueHasher.hashes(v, in.dataType, e))
        if (parts.exists(_ == null)) null else SlicedProbe.distinct(parts.flatten.toArray)
      }
    }
    // Row groups decided without their filter: only nulls (never), no usable filter or hash (always).
    val allHashed = hashes.forall(_ != null)
    val out = if (allHashed) c.unfiltered.clone().asInstanceOf[BitSet]
    else bits { rg =>
      !c.onlyNulls(rg) && (c.segment(rg) < 0 || c.encoding(rg) < 0 || hashes(c.encoding(rg)) == null)
    }
    // Every hash of every encoding found in a segment (normally one): probing with more hashes than a slot's own
    // encoding needs can only add "maybe"s, never lose one. Segments with the same encodings share one array.
    val byEncodings = mutable.HashMap[Seq[Int], Array[Long]]()
    val all = layout.segments.indices.filter(s => layout.segments(s).column == c.name).flatMap { s =>
      val hs = byEncodings.getOrElseUpdate(layout.segmentEncodings(s).toSeq,
        SlicedProbe.distinct(
          layout.segmentEncodings(s).iterator.filter(e => hashes(e) != null).flatMap(e => hashes(e)).toArray))
      if (hs.isEmpty) None else Some(SlicedProbe.Request(s, layout.segments(s), hs))
    }
    val requests = if (layout.summaries.isEmpty) all else descend(all)
    val results = if (requests.isEmpty) Map.empty[Int, Option[Array[Long]]] else prober.probe(requests)
    for (r <- requests) {
      val slots = layout.slotToRg(r.segmentIndex)
      def decide(j: Int): Unit = {
        val rg = slots(j)
        if (rg >= 0 && !c.onlyNulls(rg) && c.encoding(rg) >= 0 && hashes(c.encoding(rg)) != null) out.set(rg)
      }
      results.getOrElse(r.segmentIndex, None) match {
        case Some(m) => // only the slots whose bit is set
          var w = 0
          while (w < m.length) {
            var word = m(w)
            while (word != 0) {
              val j = (w << 6) + java.lang.Long.numberOfTrailingZeros(word)
              if (j < r.segment.count) decide(j)
              word &= word - 1
            }
            w += 1
          }
        case None => var j = 0; while (j < r.segment.count) { decide(j); j += 1 } // unreadable: all might match
      }
    }
    out
  }
}

object SlicedProbe {
  /** The distinct values of `a`, sorted (no boxing: long IN lists and run-time key sets are large). */
  def distinct(a: Array[Long]): Array[Long] = {
    if (a.length < 2) return a.clone()
    val s = a.clone(); java.util.Arrays.sort(s)
    var w = 1; var i = 1
    while (i < s.length) { if (s(i) != s(w - 1)) { s(w) = s(i); w += 1 }; i += 1 }
    if (w == s.length) s else java.util.Arrays.copyOf(s, w)
  }

  /** Reads the given runs of a segment (None: unreadable or failing its CRC). */
  type RunFetcher = (Segment, Seq[Int]) => Map[Int, Option[Array[Byte]]]
  /** No runs: every summary then says "maybe" (a probe without summaries). */
  val NoRuns: RunFetcher = (_, blocks) => blocks.map(_ -> Option.empty[Array[Byte]]).toMap

  /** Probe segment `segmentIndex` with `hashes`. */
  final case class Request(segmentIndex: Int, segment: Segment, hashes: Array[Long])

  /**
   * Answers requests with one bitmap per segment (bit j: slot j might hold one of the hashes), or None when
   * the segment cannot be read or is damaged (all its slots might match). Implemented on the driver through
   * [[IndexCache]], or as a Spark job when the runs would not fit the cache.
   */
  trait Prober { def probe(requests: Seq[Request]): Map[Int, Option[Array[Long]]] }

  /** The probe of one segment from its runs: groups hashes by block, one run per block. */
  def probeRuns(seg: Segment, hashes: Array[Long], fetch: Seq[Int] => Map[Int, Option[Array[Byte]]])
      : Option[Array[Long]] = {
    val byBlock = hashes.groupBy(h => Kernel.blockIndex(h, seg.blocks))
    val runs = fetch(byBlock.keys.toSeq.sorted)
    val matched = new Array[Long]((seg.count + 63) >>> 6)
    var ok = true
    for ((b, bh) <- byBlock) runs.get(b).flatten match {
      case Some(run) => bh.foreach(h => RunProbe.default.probeRun(run, 0, seg.count, h, matched))
      case None => ok = false
    }
    if (ok) Some(matched) else None
  }
}

package sparkbloom.index.sliced

import scala.collection.mutable

import sparkbloom.hash.ColumnEncoding

/**
 * Puts a version's [[Layout]] together on the driver: the row groups of unchanged files carried from the
 * previous version (their filters stay in the previous version's segments, which the new layout references),
 * plus the entries and segments the build tasks reported for new files.
 */
object LayoutAssembler {

  def assemble(columns: Seq[String], carried: Option[(Layout, Set[String])], entries: Seq[EntryMeta],
               newSegments: Seq[Segment], newSummaries: Seq[SummaryLink] = Nil): Layout = {
    val prev = carried.map(_._1)
    val keepPrev: Array[Int] = carried.map { case (l, keep) =>
      l.paths.indices.filter(i => keep.contains(l.paths(i))).toArray
    }
      .getOrElse(Array.empty)
    val byFile = entries.groupBy(_.path)
    // (path, previous file number or -1), in path order
    val carriedPaths = keepPrev.map(i => prev.get.paths(i)).toSet
    val files = (keepPrev.map(i => prev.get.paths(i) -> i) ++ byFile.keys.filterNot(carriedPaths.contains).map(_ -> -1))
      .sortBy(_._1)

    val paths = files.map(_._1)
    val sizes = new Array[Long](files.length); val mtimes = new Array[Long](files.length)
    val firstRg = new Array[Int](files.length + 1)
    val rgSrc = mutable.ArrayBuffer[(Int, Int)]() // (previous rg, -1) or (-1, index into newRgs)
    val newRgs = mutable.ArrayBuffer[Seq[EntryMeta]]() // the entries of one new row group
    for (((path, prevFile), f) <- files.zipWithIndex) {
      firstRg(f) = rgSrc.size
      if (prevFile >= 0) {
        val l = prev.get
        sizes(f) = l.sizes(prevFile); mtimes(f) = l.mtimes(prevFile)
        (l.firstRg(prevFile) until l.firstRg(prevFile + 1)).foreach(rg => rgSrc += (rg -> -1))
      } else {
        val es = byFile(path)
        sizes(f) = es.head.size; mtimes(f) = es.head.mtime
        es.groupBy(_.rowGroup).toSeq.sortBy(_._1).foreach { case (_, rgEntries) =>
          rgSrc += (-1 -> newRgs.size); newRgs += rgEntries
        }
      }
    }
    firstRg(files.length) = rgSrc.size
    val r = rgSrc.size
    def perRg[T: scala.reflect.ClassTag](fromPrev: Int => T, fromNew: Seq[EntryMeta] => T): Array[T] =
      rgSrc.iterator.map { case (p, n) => if (p >= 0) fromPrev(p) else fromNew(newRgs(n)) }.toArray
    val ordinal = perRg(p => prev.get.rgOrdinal(p), _.head.rowGroup)
    val start = perRg(p => prev.get.rgStart(p), _.head.start)
    val end = perRg(p => prev.get.rgEnd(p), _.head.end)
    val rows = perRg(p => prev.get.rgRows(p), _.head.rows)

    // Segments: the previous ones still holding a carried filter, then the new ones.
    val segments = mutable.ArrayBuffer[Segment]()
    val prevSegment = mutable.Map[Int, Int]()
    val newSegment = newSegments.map(s => s.file -> s).toMap
    val newSegmentIndex = mutable.Map[String, Int]()

    val cols = columns.map { name =>
      val prevCol = prev.flatMap(_.column(name))
      val encodings = mutable.LinkedHashMap[ColumnEncoding, Int]()
      def encodingId(e: ColumnEncoding): Int = if (e == null) -1 else encodings.getOrElseUpdate(e, encodings.size)
      val encoding = new Array[Int](r); val flags = new Array[Byte](r); val segment = Array.fill(r)(-1)
      val slot = Array.fill(r)(-1); val nonNull = new Array[Long](r); val ndv = new Array[Long](r)
      val fpp = new Array[Float](r); val source = new Array[Byte](r)
      for (i <- 0 until r) rgSrc(i) match {
        case (p, _) if p >= 0 =>
          prevCol match {
            case Some(c) =>
              encoding(i) = if (c.encoding(p) < 0) -1 else encodingId(c.encodings(c.encoding(p)))
              flags(i) = c.flags(p); nonNull(i) = c.nonNull(p); ndv(i) = c.ndv(p); fpp(i) = c.fpp(p);
              source(i) = c.source(p)
              if (c.segment(p) >= 0) {
                segment(i) = prevSegment.getOrElseUpdate(c.segment(p), {
                    segments += prev.get.segments(c.segment(p)); segments.size - 1
                  })
                slot(i) = c.slot(p)
              }
            case None => encoding(i) = -1; fpp(i) = 1f // not indexed then: always read
          }
        case (_, n) => newRgs(n).find(_.column == name) match {
            case Some(e) =>
              encoding(i) = if (e.physical == null) -1
              else encodingId(ColumnEncoding(e.physical, Option(e.logical).getOrElse(""), e.typeLength, e.rebase))
              flags(i) =
                ((if (e.hasNull) ColumnSlice.HasNull else 0) |
                  (if (e.nonNull == 0) ColumnSlice.OnlyNulls else 0)).toByte
              nonNull(i) = e.nonNull; ndv(i) = e.ndv; fpp(i) = e.fpp; source(i) = ColumnSlice.sourceId(e.source)
              if (e.segment != null) {
                segment(i) =
                  newSegmentIndex.getOrElseUpdate(e.segment, { segments += newSegment(e.segment); segments.size - 1 })
                slot(i) = e.slot
              }
            case None => encoding(i) = -1; fpp(i) = 1f
          }
      }
      new ColumnSlice(name, encodings.keys.toArray, encoding, flags, segment, slot, nonNull, ndv, fpp, source)
    }
    new Layout(PathStore(paths), sizes, mtimes, firstRg, ordinal, start, end, rows, cols.toArray, segments.toArray,
      summariesOf(segments.toSeq, prev.map(p => p -> prevSegment.toMap), newSummaries))
  }

  /**
   * The summaries of `segments` (see [[Summaries]]): a carried segment keeps its summary from the previous
   * layout (a summary of more row groups than the segment still holds only says "maybe" more often), a new one
   * gets the summary its build task wrote, if any.
   */
  private def summariesOf(segments: Seq[Segment], prev: Option[(Layout, Map[Int, Int])],
                          links: Seq[SummaryLink]): Summaries = {
    val byLeaf = links.map(l => l.segment -> l).toMap
    val prevOf: Map[Int, Int] = prev.map(_._2.map(_.swap)).getOrElse(Map.empty) // new index → previous index
    val sums = mutable.ArrayBuffer[Segment](); val sumIndex = mutable.Map[String, Int]()
    def indexOf(t: Segment): Int = sumIndex.getOrElseUpdate(t.file, { sums += t; sums.size - 1 })
    val of = Array.fill(segments.size)(-1); val slot = Array.fill(segments.size)(-1)
    val fpp = Array.fill(segments.size)(1f)
    for (s <- segments.indices) {
      val fromPrev = prevOf.get(s).flatMap { p =>
        val ps = prev.get._1.summaries
        val t = ps.summaryOf(p)
        if (t < 0) None else Some((ps.segments(t), ps.slot(p), ps.fpp(p)))
      }
      fromPrev.orElse(byLeaf.get(segments(s).file).map(l => (l.summary, l.slot, l.fpp))).foreach {
        case (t, j, f) => of(s) = indexOf(t); slot(s) = j; fpp(s) = f
      }
    }
    if (sums.isEmpty) Summaries.none else new Summaries(sums.toArray, of, slot, fpp)
  }

  /** The same layout without some columns (their segments are no longer referenced). */
  def dropColumns(l: Layout, drop: Set[String]): Layout = {
    val cols = l.columns.filterNot(c => drop.contains(c.name))
    val kept = l.segments.indices.filterNot(s => drop.contains(l.segments(s).column))
    val remap = kept.zipWithIndex.toMap
    val remapped = cols.map { c =>
      new ColumnSlice(c.name, c.encodings, c.encoding, c.flags, c.segment.map(s => if (s < 0) -1 else remap(s)), c.slot,
        c.nonNull, c.ndv, c.fpp, c.source)
    }
    val sums = l.summaries
    val keptSums = sums.segments.indices.filterNot(t => drop.contains(sums.segments(t).column))
    val remapSum = keptSums.zipWithIndex.toMap
    val summaries = if (keptSums.isEmpty) Summaries.none
    else new Summaries(keptSums.map(sums.segments).toArray,
      kept.map(s => if (sums.summaryOf(s) < 0) -1 else remapSum(sums.summaryOf(s))).toArray,
      kept.map(s => if (s < sums.slot.length) sums.slot(s) else -1).toArray,
      kept.map(s => if (s < sums.fpp.length) sums.fpp(s) else 1f).toArray)
    new Layout(l.paths, l.sizes, l.mtimes, l.firstRg, l.rgOrdinal, l.rgStart, l.rgEnd, l.rgRows, remapped,
      kept.map(l.segments).toArray, summaries)
  }
}

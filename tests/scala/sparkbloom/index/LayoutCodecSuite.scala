package sparkbloom.index

import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.index.sliced._

/**
 * layout.bin: format 2 (compact, core and statistics apart) gives back every field of a layout, summaries
 * included; format 1 (sparkbloom 0.1) still reads; planning reads the core only; any damage is an error.
 */
class LayoutCodecSuite extends AnyFunSuite {
  private val uuid = "3f2b9c1e-8d4a-4f0e-9a7b-1c2d3e4f5a6b"
  private val paths: Seq[String] = (0 until 300).map(i =>
    f"s3a://bucket/warehouse/db/events/part-$i%05d-$uuid-c000.snappy.parquet") ++
    Seq("s3a://bucket/warehouse/db/events/date=2026-11-26/part-00000-x.parquet",
      "s3a://bucket/warehouse/db/events/city=\u00e9t\u00e9/part-00001-\u65e5\u672c.parquet",
      "s3a://bucket/warehouse/db/events/a", "s3a://bucket/warehouse/db/events/ab")

  /** Two columns; file i has i % 3 row groups (some none); column "s" has no filter every 7th row group. */
  private def layout(withSummaries: Boolean): Layout = {
    val entries = for {
      (p, i) <- paths.zipWithIndex; rg <- 0 until i % 3; c <- Seq("id", "s")
      if !(c == "s" && (i + rg) % 7 == 0)
    } yield EntryMeta(p, 1000L + i * 17, 1700000000000L + i * 1000 - (i % 5) * 7, rg, 4L + rg * 300,
      4L + rg * 300 + 299,
      100L + rg, c, if (c == "id") "INT64" else "BYTE_ARRAY", if (c == "id") "" else "STRING", 0, rebase = i % 11 == 0,
      hasNull = rg == 1, nonNull = if (rg == 1) 0 else 99, ndv = 50 + i, source = if (i % 4 == 0) "harvest" else "scan",
      fpp = 0.001f * (1 + i % 9), segment = s"v1/p${i % 4}-$c.seg", slot = i / 4 * 2 + rg)
    val segments = for (t <- 0 until 4; c <- Seq("id", "s")) yield Segment(s"v1/p$t-$c.seg", c, 4, 200)
    val summaries = if (!withSummaries) Nil
    else segments.zipWithIndex.filter(_._2 != 3).map { case (s, k) =>
      SummaryLink(s.file, Segment(s"v1/summary-${s.column}.sum", s.column, 2, 8), k / 2, 0.01f * (k + 1))
    }
    LayoutAssembler.assemble(Seq("id", "s"), None, entries, segments, summaries)
  }

  private def assertSame(a: Layout, b: Layout): Unit = {
    assert(a.paths.toSeq == b.paths.toSeq)
    assert(a.sizes.toSeq == b.sizes.toSeq && a.mtimes.toSeq == b.mtimes.toSeq && a.firstRg.toSeq == b.firstRg.toSeq)
    assert(a.rgOrdinal.toSeq == b.rgOrdinal.toSeq && a.rgStart.toSeq == b.rgStart.toSeq)
    assert(a.rgEnd.toSeq == b.rgEnd.toSeq && a.rgRows.toSeq == b.rgRows.toSeq)
    assert(a.columns.length == b.columns.length)
    for ((x, y) <- a.columns.zip(b.columns)) {
      assert(x.name == y.name && x.encodings.toSeq == y.encodings.toSeq && x.encoding.toSeq == y.encoding.toSeq)
      assert(x.flags.toSeq == y.flags.toSeq && x.segment.toSeq == y.segment.toSeq && x.slot.toSeq == y.slot.toSeq)
      assert(x.nonNull.toSeq == y.nonNull.toSeq && x.ndv.toSeq == y.ndv.toSeq && x.fpp.toSeq == y.fpp.toSeq)
      assert(x.source.toSeq == y.source.toSeq)
    }
    assert(a.segments.toSeq == b.segments.toSeq)
    assert(a.summaries.segments.toSeq == b.summaries.segments.toSeq)
    for (s <- a.segments.indices) {
      assert(a.summaries.summaryOf(s) == b.summaries.summaryOf(s))
      if (a.summaries.summaryOf(s) >= 0)
        assert(a.summaries.slot(s) == b.summaries.slot(s) && a.summaries.fpp(s) == b.summaries.fpp(s))
    }
    a.paths.indices.foreach(i => assert(b.fileIndex.get(a.paths(i)) == i))
    assert(b.fileIndex.get(paths.head + "x") == -1)
  }

  test("format 2 gives back every field, summaries included, and finds every path") {
    for (withSummaries <- Seq(true, false)) {
      val l = layout(withSummaries)
      assert(l.numRowGroups > 250 && l.summaries.isEmpty != withSummaries)
      assertSame(l, LayoutCodec.decode(LayoutCodec.encode(l)))
    }
    val empty = Layout.empty(Seq("c"))
    assertSame(empty, LayoutCodec.decode(LayoutCodec.encode(empty)))
  }

  test("format 1, as sparkbloom 0.1 wrote it, still reads") {
    val l = layout(withSummaries = false)
    assertSame(l, LayoutCodec.decode(LayoutCodec.encodeV1(l)))
  }

  test("format 2 stores a Spark-named path in a few bytes: the layout is several times smaller than format 1") {
    val l = layout(withSummaries = false)
    val (v1, v2) = (LayoutCodec.encodeV1(l).length, LayoutCodec.encode(l).length)
    assert(v2 * 4 < v1, s"format 2: $v2 bytes, format 1: $v1")
  }

  test("planning reads the trailer and the core; the statistics only when first used") {
    val bytes = LayoutCodec.encode(layout(withSummaries = true))
    val reads = scala.collection.mutable.Buffer[(Long, Int)]()
    val l = LayoutCodec.load(bytes.length,
      (off, n) => {
        reads += (off -> n); java.util.Arrays.copyOfRange(bytes, off.toInt, off.toInt + n)
      })
    val core = java.nio.ByteBuffer.wrap(bytes, bytes.length - LayoutCodec.TrailerBytes, 4).getInt
    assert(reads.toSeq == Seq((bytes.length - 12L, 12), (0L, core)), reads)
    assert(l.fileIndex.get(paths(7)) >= 0 && l.columns(0).segment.nonEmpty) // file 7 has a row group
    assert(l.columns(1).ndv.nonEmpty)
    assert(reads.size == 3 && reads(2)._1 == core && reads(2)._1 + reads(2)._2 == bytes.length - 12L, reads)
    assert(l.statsDamage().isEmpty)
  }

  test("a flipped bit anywhere in the file is an error naming the damage, never a different layout") {
    val bytes = LayoutCodec.encode(layout(withSummaries = true))
    val step = math.max(1, bytes.length / 400)
    for (at <- (0 until bytes.length by step) ++ (bytes.length - 12 until bytes.length)) {
      val b = bytes.clone(); b(at) = (b(at) ^ 0x04).toByte
      val e = intercept[java.io.IOException](LayoutCodec.decode(b))
      assert(e.getMessage.contains("damaged index layout") || e.getMessage.contains("statistics are damaged"),
        s"byte $at: ${e.getMessage}")
    }
    for (keep <- Seq(0, 5, 11, bytes.length / 2, bytes.length - 1))
      intercept[java.io.IOException](LayoutCodec.decode(java.util.Arrays.copyOf(bytes, keep)))
  }
}

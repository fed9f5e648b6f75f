package sparkbloom.index.sliced

import java.io.{ByteArrayOutputStream, DataOutputStream}
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.util.zip.CRC32

import sparkbloom.hash.ColumnEncoding

/**
 * `layout.bin`: a [[Layout]]. Two formats are read; the second is written.
 *
 * '''Format 2''' is compact and read in part. Integers are unsigned LEB128 varints (`v`), signed ones zigzag
 * varints (`z`), and most arrays are stored as differences from the previous element, so a row group costs a
 * few bytes. File paths are stored once, relative to the prefix they all share (the table root), each as the
 * bytes it shares with the previous path at its start and at its end plus the bytes in between: Spark names a
 * write's files `part-<n>-<job uuid>-c000...`, so a path costs its few changing bytes.
 *
 * The file has two parts, each with its CRC32: the ''core'', everything planning needs, and the ''stats'',
 * the per-row-group figures only builds, REFRESH and DESCRIBE use (non-null and distinct counts, FPP,
 * source). Planning reads the trailer and the core; the stats are read on first use.
 * {{{
 *   core:    "SBLX" 2:int  prefix:str
 *            F:v  (shared-start:v shared-end:v middle:str)*F  size:v[F]  mtime:z-delta[F]  rowGroups:v[F]
 *            R:v  ordinal:v[R]  start:v[R]  length:v[R]  rows:v[R]
 *            C:v  per column: name:str E:v (physical:str logical:str typeLength:v rebase:byte)*E
 *                 encoding+1:v[R]  flags:byte[R]  segment+1:z-delta[R]  slot:z-delta[R]
 *            S:v  (file:str column:str blocks:v count:v)*S
 *            T:v  (file:str column:str blocks:v count:v)*T   per segment: summary+1:v slot:v fpp:float
 *            crc32:int
 *   stats:   per column: nonNull+1:v[R] ndv+1:v[R] fpp:float[R] source:byte[R]   crc32:int
 *   trailer: coreLength:int statsLength:int "SBL2"
 * }}}
 * (`str` is a varint length and UTF-8 bytes; `float` and `int` big-endian.)
 *
 * '''Format 1''' (sparkbloom 0.1): fixed-width big-endian arrays, absolute paths, one CRC32 at the end:
 * {{{
 *   "SBLX" 1:int
 *   F:int  (path:str)*F  size:long[F]  mtime:long[F]  firstRg:int[F+1]
 *   R:int  ordinal:int[R]  start:long[R]  end:long[R]  rows:long[R]
 *   C:int  per column: name:str  E:int (physical:str logical:str typeLength:int rebase:byte)*E
 *          encoding:int[R] flags:byte[R] segment:int[R] slot:int[R] nonNull:long[R] ndv:long[R]
 *          fpp:float[R] source:byte[R]
 *   S:int  (file:str column:str blocks:int count:int)*S
 *   crc32:int
 * }}}
 * A file that fails a CRC or the structure checks is reported as damage, and the version is then not used
 * (every file is read).
 */
object LayoutCodec {
  private val Magic = 0x53424c58 // "SBLX"
  private val TrailerMagic = 0x53424c32 // "SBL2"
  val Version = 2
  val TrailerBytes = 12

  private def fail(msg: String) = throw new java.io.IOException(s"damaged index layout: $msg")

  // ---- writing (format 2) ----

  private final class Out(initial: Int) {
    val bytes = new ByteArrayOutputStream(initial)
    val data = new DataOutputStream(bytes)
    def v(x: Long): Unit = {
      var n = x
      while ((n & ~0x7fL) != 0) { data.writeByte(((n & 0x7f) | 0x80).toInt); n >>>= 7 }
      data.writeByte(n.toInt)
    }
    def z(x: Long): Unit = v((x << 1) ^ (x >> 63))
    def bytesOf(b: Array[Byte], from: Int, n: Int): Unit = { v(n); data.write(b, from, n) }
    def str(s: String): Unit = { val b = s.getBytes(UTF_8); bytesOf(b, 0, b.length) }
    def withCrc(): Array[Byte] = {
      data.flush()
      val crc = new CRC32(); crc.update(bytes.toByteArray)
      data.writeInt(crc.getValue.toInt); data.flush()
      bytes.toByteArray
    }
  }

  def encode(l: Layout): Array[Byte] = {
    val r = l.numRowGroups
    val core = new Out(64 + r * 16 + l.numFiles * 24)
    core.data.writeInt(Magic); core.data.writeInt(Version)
    val prefix = l.paths.prefix
    core.str(prefix)
    core.v(l.numFiles)
    var prev = Array.emptyByteArray
    for (i <- 0 until l.numFiles) {
      val p = l.paths(i).substring(prefix.length).getBytes(UTF_8)
      var start = 0
      val most = math.min(p.length, prev.length)
      while (start < most && p(start) == prev(start)) start += 1
      var end = 0
      while (end < most - start && p(p.length - 1 - end) == prev(prev.length - 1 - end)) end += 1
      core.v(start); core.v(end); core.bytesOf(p, start, p.length - start - end)
      prev = p
    }
    l.sizes.foreach(core.v(_))
    var last = 0L
    l.mtimes.foreach { m => core.z(m - last); last = m }
    for (f <- 0 until l.numFiles) core.v(l.firstRg(f + 1) - l.firstRg(f))
    core.v(r)
    l.rgOrdinal.foreach(core.v(_))
    l.rgStart.foreach(core.v(_))
    for (i <- 0 until r) core.v(l.rgEnd(i) - l.rgStart(i))
    l.rgRows.foreach(core.v(_))
    core.v(l.columns.length)
    for (c <- l.columns) {
      core.str(c.name)
      core.v(c.encodings.length)
      c.encodings.foreach { e =>
        core.str(e.physical); core.str(e.logical); core.v(e.typeLength); core.data.writeByte(if (e.rebase) 1 else 0)
      }
      c.encoding.foreach(e => core.v(e + 1L))
      core.data.write(c.flags)
      var ps = 0L; c.segment.foreach { s => core.z(s + 1L - ps); ps = s + 1L }
      var pj = 0L; c.slot.foreach { j => core.z(j - pj); pj = j }
    }
    def segments(ss: Array[Segment]): Unit = {
      core.v(ss.length)
      ss.foreach { s => core.str(s.file); core.str(s.column); core.v(s.blocks); core.v(s.count) }
    }
    segments(l.segments)
    val sums = l.summaries
    segments(sums.segments)
    if (sums.segments.nonEmpty) for (s <- l.segments.indices) {
      core.v(sums.summaryOf(s) + 1L); core.v(math.max(0, if (s < sums.slot.length) sums.slot(s) else 0))
      core.data.writeFloat(if (s < sums.fpp.length) sums.fpp(s) else 1f)
    }
    val coreBytes = core.withCrc()

    val stats = new Out(64 + r * 10 * l.columns.length)
    for (c <- l.columns) {
      c.nonNull.foreach(n => stats.v(n + 1L)); c.ndv.foreach(n => stats.v(n + 1L))
      c.fpp.foreach(stats.data.writeFloat); stats.data.write(c.source)
    }
    val statsBytes = stats.withCrc()
    val out = ByteBuffer.allocate(coreBytes.length + statsBytes.length + TrailerBytes)
    out.put(coreBytes).put(statsBytes).putInt(coreBytes.length).putInt(statsBytes.length).putInt(TrailerMagic)
    out.array()
  }

  // ---- reading ----

  /**
   * Reads a layout file of `length` bytes through `read(offset, n)`: of format 2 the trailer and the core
   * (the stats are read again through `read` on first use), of format 1 the whole file.
   * @throws java.io.IOException naming what is wrong when the bytes are not a valid layout.
   */
  def load(length: Long, read: (Long, Int) => Array[Byte]): Layout = {
    if (length < 12) fail(s"$length bytes")
    val trailer = ByteBuffer.wrap(read(length - TrailerBytes, TrailerBytes))
    val coreLength = trailer.getInt; val statsLength = trailer.getInt
    if (trailer.getInt == TrailerMagic) {
      if (coreLength < 12 || statsLength < 4 || coreLength.toLong + statsLength + TrailerBytes != length)
        fail(s"its trailer says $coreLength + $statsLength bytes, the file has $length")
      decodeCore(read(0, coreLength), () => read(coreLength.toLong, statsLength))
    } else {
      if (length > Int.MaxValue) fail(s"$length bytes")
      decodeV1(read(0, length.toInt), reload = Some(() => read(0, length.toInt)))
    }
  }

  /** A whole layout file (either format), every part read now. */
  def decode(bytes: Array[Byte]): Layout = {
    val l = load(bytes.length.toLong, (off, n) => java.util.Arrays.copyOfRange(bytes, off.toInt, off.toInt + n))
    l.statsDamage().foreach(m => fail(m)) // the stats read now: damage there is an error here
    l
  }

  private def checked(bytes: Array[Byte]): ByteBuffer = {
    if (bytes.length < 4) fail(s"${bytes.length} bytes")
    val crc = new CRC32(); crc.update(bytes, 0, bytes.length - 4)
    if (crc.getValue.toInt != ByteBuffer.wrap(bytes, bytes.length - 4, 4).getInt) fail("CRC mismatch")
    ByteBuffer.wrap(bytes, 0, bytes.length - 4)
  }

  private final class In(val in: ByteBuffer) {
    def v(): Long = {
      var result = 0L; var shift = 0; var b = 0
      do {
        if (shift > 63) fail("varint too long")
        b = in.get(); result |= (b & 0x7fL) << shift; shift += 7
      } while ((b & 0x80) != 0)
      result
    }
    def z(): Long = { val x = v(); (x >>> 1) ^ -(x & 1) }
    def int(): Int = { val x = v(); if (x < 0 || x > Int.MaxValue) fail(s"value $x"); x.toInt }
    def count(): Int = { val n = int(); if (n > in.remaining()) fail(s"count $n"); n }
    def bytes(): Array[Byte] = { val b = new Array[Byte](count()); in.get(b); b }
    def str(): String = new String(bytes(), UTF_8)
  }

  private def decodeCore(bytes: Array[Byte], stats: () => Array[Byte]): Layout = {
    val in = new In(checked(bytes))
    try {
      if (in.in.getInt != Magic) fail("bad magic")
      val version = in.in.getInt
      if (version != Version) fail(s"layout version $version is not supported (this sparkbloom reads 1 and $Version)")
      val prefix = in.str()
      val f = in.count()
      // The remainders after the prefix, rebuilt from what each shares with the previous one.
      val offsets = new Array[Int](f + 1)
      var buf = new Array[Byte](math.max(64, f * 8))
      var used = 0
      var i = 0
      while (i < f) {
        val start = in.int(); val end = in.int(); val mid = in.count()
        val prevFrom = if (i == 0) 0 else offsets(i - 1); val prevLen = used - prevFrom
        if (start + end > prevLen) fail(s"path $i shares more than the previous one has")
        val n = start + mid + end
        if (used + n > buf.length) buf = java.util.Arrays.copyOf(buf, math.max(used + n, buf.length * 2))
        System.arraycopy(buf, prevFrom, buf, used, start)
        in.in.get(buf, used + start, mid)
        System.arraycopy(buf, prevFrom + prevLen - end, buf, used + start + mid, end)
        offsets(i) = used
        used += n
        i += 1
      }
      offsets(f) = used
      val paths = PathStore.fromRemainders(prefix, buf, offsets)
      val sizes = Array.fill(f)(in.v())
      var last = 0L
      val mtimes = Array.fill(f) { last += in.z(); last }
      val firstRg = new Array[Int](f + 1)
      i = 0
      while (i < f) { firstRg(i + 1) = firstRg(i) + in.int(); i += 1 }
      val r = in.int()
      if (firstRg(f) != r) fail("row groups do not match the files")
      val ordinal = Array.fill(r)(in.int())
      val start = Array.fill(r)(in.v())
      val end = Array.tabulate(r)(k => start(k) + in.v())
      val rows = Array.fill(r)(in.v())
      val numColumns = in.count()
      val cores = Array.fill(numColumns) {
        val name = in.str()
        val encodings = Array.fill(in.count())(ColumnEncoding(in.str(), in.str(), in.int(), in.in.get != 0))
        val encoding = Array.fill(r)(in.int() - 1)
        val flags = new Array[Byte](r); in.in.get(flags)
        var ps = 0L
        val segment = Array.fill(r) { ps += in.z(); (ps - 1).toInt }
        var pj = 0L
        val slot = Array.fill(r) { pj += in.z(); pj.toInt }
        (name, encodings, encoding, flags, segment, slot)
      }
      def segmentsOf(): Array[Segment] = Array.fill(in.count())(Segment(in.str(), in.str(), in.int(), in.int()))
      val segments = segmentsOf()
      val summarySegments = segmentsOf()
      val summaries = if (summarySegments.isEmpty) Summaries.none
      else {
        val of = new Array[Int](segments.length); val slot = new Array[Int](segments.length)
        val fpp = new Array[Float](segments.length)
        for (s <- segments.indices) {
          of(s) = in.int() - 1; slot(s) = in.int(); fpp(s) = in.in.getFloat
          if (of(s) >= summarySegments.length || (of(s) >= 0 && slot(s) >= summarySegments(of(s)).count))
            fail(s"the summary of segment $s points nowhere")
        }
        new Summaries(summarySegments, of, slot, fpp)
      }
      if (in.in.hasRemaining) fail(s"${in.in.remaining()} trailing bytes")
      // The stats, read and checked on first use (all columns at once). Damaged stats never fail anything:
      // they read as unknown (FPP 1: always read, no counts) and the damage is reported (Layout.statsDamage).
      val damage = new java.util.concurrent.atomic.AtomicReference[String]()
      lazy val allStats: Array[ColumnSlice.Stats] = try readStats()
      catch {
        case e: Exception =>
          damage.set(s"the index layout's statistics are damaged (${e.getMessage}): DESCRIBE shows them as " +
            "unknown; REFRESH ... FULL rewrites them")
          Array.fill(numColumns)(ColumnSlice.Stats(Array.fill(r)(-1L), Array.fill(r)(-1L), Array.fill(r)(1f),
            Array.fill(r)(ColumnSlice.sourceId("damaged"))))
      }
      def readStats(): Array[ColumnSlice.Stats] = {
        val s = new In(checked(stats()))
        try {
          val out = Array.fill(numColumns) {
            val nonNull = Array.fill(r)(s.v() - 1); val ndv = Array.fill(r)(s.v() - 1)
            val fpp = new Array[Float](r); s.in.asFloatBuffer().get(fpp); s.in.position(s.in.position() + 4 * r)
            val source = new Array[Byte](r); s.in.get(source)
            ColumnSlice.Stats(nonNull, ndv, fpp, source)
          }
          if (s.in.hasRemaining) fail(s"${s.in.remaining()} trailing bytes in the stats")
          out
        } catch {
          case e: java.nio.BufferUnderflowException => fail(s"truncated stats ($e)")
        }
      }
      val columns = cores.zipWithIndex.map { case ((name, encodings, encoding, flags, segment, slot), c) =>
        new ColumnSlice(name, encodings, encoding, flags, segment, slot, () => allStats(c))
      }
      validate(columns, segments, r)
      new Layout(paths, sizes, mtimes, firstRg, ordinal, start, end, rows, columns, segments, summaries,
        () => { columns.headOption.foreach(_.nonNull); Option(damage.get()) })
    } catch {
      case e: java.nio.BufferUnderflowException => fail(s"truncated ($e)")
      case e: IllegalArgumentException => fail(e.toString)
      case e: NegativeArraySizeException => fail(e.toString)
      case e: IndexOutOfBoundsException => fail(e.toString)
    }
  }

  private def validate(columns: Array[ColumnSlice], segments: Array[Segment], r: Int): Unit =
    for (c <- columns) {
      var rg = 0
      while (rg < r) {
        val s = c.segment(rg)
        if (s < -1 || s >= segments.length ||
          (s >= 0 && (c.slot(rg) < 0 || c.slot(rg) >= segments(s).count || segments(s).column != c.name)) ||
          c.encoding(rg) < -1 || c.encoding(rg) >= c.encodings.length)
          fail(s"entry $rg of column ${c.name} points nowhere")
        rg += 1
      }
    }

  /**
   * Format 1. `reload`: when given, the per-row-group figures only builds and DESCRIBE use (non-null and
   * distinct counts, FPP, source: 21 bytes per row group and column) are skipped, and read again from
   * `reload()` (the same immutable file) on first use, so a layout held for planning is that much smaller.
   */
  private def decodeV1(bytes: Array[Byte], reload: Option[() => Array[Byte]]): Layout = {
    val in = checked(bytes)
    try {
      if (in.getInt != Magic) fail("bad magic")
      val v = in.getInt
      if (v != 1) fail(s"layout version $v is not supported (this sparkbloom reads 1 and $Version)")
      def count(): Int = { val n = in.getInt; if (n < 0 || n > in.remaining()) fail(s"count $n"); n }
      def str(): String = { val n = count(); val b = new Array[Byte](n); in.get(b); new String(b, UTF_8) }
      def longs(n: Int): Array[Long] = {
        val a = new Array[Long](n); in.asLongBuffer().get(a); in.position(in.position() + 8 * n); a
      }
      def ints(n: Int): Array[Int] = {
        val a = new Array[Int](n); in.asIntBuffer().get(a); in.position(in.position() + 4 * n); a
      }
      def floats(n: Int): Array[Float] = {
        val a = new Array[Float](n); in.asFloatBuffer().get(a); in.position(in.position() + 4 * n); a
      }
      def bytesOf(n: Int): Array[Byte] = { val a = new Array[Byte](n); in.get(a); a }
      val f = count()
      val paths = PathStore.fromUtf8(Array.fill(f) { val n = count(); val b = new Array[Byte](n); in.get(b); b })
      val (sizes, mtimes, firstRg) = (longs(f), longs(f), ints(f + 1))
      val r = count()
      val (ordinal, start, end, rows) = (ints(r), longs(r), longs(r), longs(r))
      if (firstRg(0) != 0 || firstRg(f) != r) fail("row groups do not match the files")
      val numColumns = count()
      val columns = Array.tabulate(numColumns) { c =>
        val name = str()
        val encodings = Array.fill(count())(ColumnEncoding(str(), str(), in.getInt, in.get != 0))
        val (encoding, flags, segment, slot) = (ints(r), bytesOf(r), ints(r), ints(r))
        reload match {
          case None =>
            new ColumnSlice(name, encodings, encoding, flags, segment, slot, longs(r), longs(r), floats(r), bytesOf(r))
          case Some(again) =>
            if (in.remaining() < 21L * r) fail("truncated")
            in.position(in.position() + 21 * r)
            new ColumnSlice(name, encodings, encoding, flags, segment, slot,
              () => {
                val full = decodeV1(again(), None)
                require(full.numRowGroups == r && full.columns.length == numColumns, "index layout changed on disk")
                val fc = full.columns(c)
                ColumnSlice.Stats(fc.nonNull, fc.ndv, fc.fpp, fc.source)
              })
        }
      }
      val segments = Array.fill(count())(Segment(str(), str(), in.getInt, in.getInt))
      if (in.hasRemaining) fail(s"${in.remaining()} trailing bytes")
      validate(columns, segments, r)
      new Layout(paths, sizes, mtimes, firstRg, ordinal, start, end, rows, columns, segments, format = 1)
    } catch {
      case e: java.nio.BufferUnderflowException => fail(s"truncated ($e)")
      case e: IllegalArgumentException => fail(e.toString)
    }
  }

  /** Format 1's bytes of a layout (for tests of reading indexes written by sparkbloom 0.1). */
  def encodeV1(l: Layout): Array[Byte] = {
    val bytes = new ByteArrayOutputStream(64 + l.numRowGroups * 80 + l.paths.map(_.length + 4).sum)
    val out = new DataOutputStream(bytes)
    def str(s: String): Unit = { val b = s.getBytes(UTF_8); out.writeInt(b.length); out.write(b) }
    def longs(a: Array[Long]): Unit = a.foreach(out.writeLong)
    def ints(a: Array[Int]): Unit = a.foreach(out.writeInt)
    out.writeInt(Magic); out.writeInt(1)
    out.writeInt(l.numFiles); l.paths.foreach(str); longs(l.sizes); longs(l.mtimes); ints(l.firstRg)
    out.writeInt(l.numRowGroups); ints(l.rgOrdinal); longs(l.rgStart); longs(l.rgEnd); longs(l.rgRows)
    out.writeInt(l.columns.length)
    for (c <- l.columns) {
      str(c.name)
      out.writeInt(c.encodings.length)
      c.encodings.foreach { e =>
        str(e.physical); str(e.logical); out.writeInt(e.typeLength); out.writeByte(if (e.rebase) 1 else 0)
      }
      ints(c.encoding); out.write(c.flags); ints(c.segment); ints(c.slot); longs(c.nonNull); longs(c.ndv)
      c.fpp.foreach(out.writeFloat); out.write(c.source)
    }
    out.writeInt(l.segments.length)
    l.segments.foreach { s => str(s.file); str(s.column); out.writeInt(s.blocks); out.writeInt(s.count) }
    out.flush()
    val crc = new CRC32(); crc.update(bytes.toByteArray)
    out.writeInt(crc.getValue.toInt)
    out.flush()
    bytes.toByteArray
  }
}

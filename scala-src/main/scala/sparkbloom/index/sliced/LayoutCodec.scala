package sparkbloom.index.sliced

import java.io.{ByteArrayOutputStream, DataOutputStream}
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.util.zip.CRC32

import sparkbloom.hash.ColumnEncoding

/**
 * `layout.bin`: a [[Layout]] as big-endian arrays, each read back with one bulk copy, and a trailing CRC32 of
 * everything before it. A file that fails the CRC or the structure checks is reported as damage, and the
 * version is then not used (every file is read).
 * {{{
 *   "SBLX" version:int
 *   F:int  (path:str)*F  size:long[F]  mtime:long[F]  firstRg:int[F+1]
 *   R:int  ordinal:int[R]  start:long[R]  end:long[R]  rows:long[R]
 *   C:int  per column: name:str  E:int (physical:str logical:str typeLength:int rebase:byte)*E
 *          encoding:int[R] flags:byte[R] segment:int[R] slot:int[R] nonNull:long[R] ndv:long[R]
 *          fpp:float[R] source:byte[R]
 *   S:int  (file:str column:str blocks:int count:int)*S
 *   crc32:int
 * }}}
 */
object LayoutCodec {
  private val Magic = 0x53424c58 // "SBLX"
  val Version = 1

  def encode(l: Layout): Array[Byte] = {
    val bytes = new ByteArrayOutputStream(64 + l.numRowGroups * 80 + l.paths.map(_.length + 4).sum)
    val out = new DataOutputStream(bytes)
    def str(s: String): Unit = { val b = s.getBytes(UTF_8); out.writeInt(b.length); out.write(b) }
    def longs(a: Array[Long]): Unit = a.foreach(out.writeLong)
    def ints(a: Array[Int]): Unit = a.foreach(out.writeInt)
    out.writeInt(Magic); out.writeInt(Version)
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

  /**
   * @throws java.io.IOException naming what is wrong when the bytes are not a valid layout.
   *
   * `reload`: when given, the per-row-group figures only builds and DESCRIBE use (non-null and distinct
   * counts, FPP, source: 21 bytes per row group and column) are skipped, and read again from `reload()` (the
   * same immutable file) on first use, so a layout held for planning is that much smaller.
   */
  def decode(bytes: Array[Byte], reload: Option[() => Array[Byte]] = None): Layout = {
    def fail(msg: String) = throw new java.io.IOException(s"damaged index layout: $msg")
    if (bytes.length < 12) fail(s"${bytes.length} bytes")
    val crc = new CRC32(); crc.update(bytes, 0, bytes.length - 4)
    if (crc.getValue.toInt != ByteBuffer.wrap(bytes, bytes.length - 4, 4).getInt) fail("CRC mismatch")
    val in = ByteBuffer.wrap(bytes, 0, bytes.length - 4)
    try {
      if (in.getInt != Magic) fail("bad magic")
      val v = in.getInt; if (v != Version) fail(s"layout version $v is not supported (this sparkbloom reads $Version)")
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
                val full = decode(again())
                require(full.numRowGroups == r && full.columns.length == numColumns, "index layout changed on disk")
                val fc = full.columns(c)
                ColumnSlice.Stats(fc.nonNull, fc.ndv, fc.fpp, fc.source)
              })
        }
      }
      val segments = Array.fill(count())(Segment(str(), str(), in.getInt, in.getInt))
      if (in.hasRemaining) fail(s"${in.remaining()} trailing bytes")
      for (c <- columns; rg <- 0 until r) {
        val s = c.segment(rg)
        if (s >= segments.length ||
          (s >= 0 && (c.slot(rg) < 0 || c.slot(rg) >= segments(s).count || segments(s).column != c.name)) ||
          c.encoding(rg) >= c.encodings.length) fail(s"entry $rg of column ${c.name} points nowhere")
      }
      new Layout(paths, sizes, mtimes, firstRg, ordinal, start, end, rows, columns, segments)
    } catch {
      case e: java.nio.BufferUnderflowException => fail(s"truncated ($e)")
      case e: IllegalArgumentException => fail(e.toString)
    }
  }
}

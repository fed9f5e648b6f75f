package sparkbloom.index.sliced

import java.nio.charset.StandardCharsets.UTF_8

/**
 * The file paths of a layout, compact: the prefix every path shares (the table root) once, then every
 * path's remainder as UTF-8 in one byte array (no String object per file: at 10^6 files that is the
 * difference between ~40 and ~110 MB of driver heap). A path is made into a String only when asked for.
 *
 * [[get]] looks a path up without allocating: open addressing over a hash of the remainder's characters,
 * 4 bytes per slot; a candidate is always confirmed by comparing every character, never by the hash alone.
 */
final class PathStore private (val prefix: String, bytes: Array[Byte], offsets: Array[Int], ascii: Array[Boolean])
  extends IndexedSeq[String] {
  override def length: Int = offsets.length - 1
  override def apply(i: Int): String = prefix + new String(bytes, offsets(i), offsets(i + 1) - offsets(i), UTF_8)

  private val mask = Integer.highestOneBit(math.max(4, length * 2 + 1) - 1) * 2 - 1
  private val slots: Array[Int] = {
    val t = Array.fill(mask + 1)(-1)
    var i = 0
    while (i < length) {
      var s = PathStore.spread(storedHash(i)) & mask
      while (t(s) >= 0) s = (s + 1) & mask
      t(s) = i
      i += 1
    }
    t
  }

  private def storedHash(i: Int): Int =
    if (ascii(i)) {
      var h = 0; var k = offsets(i); while (k < offsets(i + 1)) { h = 31 * h + (bytes(k) & 0xff); k += 1 }; h
    } else PathStore.hashFrom(apply(i), prefix.length)

  private def matches(i: Int, path: String): Boolean = {
    val from = offsets(i); val n = offsets(i + 1) - from
    if (ascii(i)) {
      if (path.length - prefix.length != n) return false
      var k = 0
      while (k < n) { if (path.charAt(prefix.length + k) != (bytes(from + k) & 0xff)) return false; k += 1 }
      true
    } else apply(i) == path
  }

  /** The index of `path`, or -1. */
  def get(path: String): Int = {
    if (!path.startsWith(prefix)) return -1
    var s = PathStore.spread(PathStore.hashFrom(path, prefix.length)) & mask
    while (slots(s) >= 0) {
      if (matches(slots(s), path)) return slots(s)
      s = (s + 1) & mask
    }
    -1
  }

  def approximateBytes: Long = 64L + 2L * prefix.length + bytes.length + 4L * offsets.length + ascii.length +
    4L * slots.length
}

object PathStore {
  private def spread(h: Int): Int = { val x = h * 0x9e3779b9; x ^ (x >>> 16) }

  private def hashFrom(s: String, from: Int): Int = {
    var h = 0; var k = from; while (k < s.length) { h = 31 * h + s.charAt(k); k += 1 }; h
  }

  def apply(paths: Array[String]): PathStore = fromUtf8(paths.map(_.getBytes(UTF_8)))

  /** Path i is `prefix` + the UTF-8 bytes [offsets(i), offsets(i + 1)) of `bytes` (as layout.bin stores them). */
  def fromRemainders(prefix: String, bytes: Array[Byte], offsets: Array[Int]): PathStore = {
    val n = offsets.length - 1
    val ascii = new Array[Boolean](n)
    var i = 0
    while (i < n) {
      var a = true; var k = offsets(i)
      while (a && k < offsets(i + 1)) { a = bytes(k) >= 0; k += 1 }
      ascii(i) = a
      i += 1
    }
    new PathStore(prefix, if (bytes.length == offsets(n)) bytes else java.util.Arrays.copyOf(bytes, offsets(n)),
      offsets,
      ascii)
  }

  /** From each path's UTF-8 bytes (as stored in layout.bin), sorted or not. */
  def fromUtf8(paths: Array[Array[Byte]]): PathStore = {
    // The common prefix, cut back to a whole character (never inside a multi-byte UTF-8 sequence).
    var common = if (paths.isEmpty) 0 else paths.map(_.length).min
    var i = 1
    while (i < paths.length && common > 0) {
      var k = 0
      val a = paths(0); val b = paths(i)
      while (k < common && a(k) == b(k)) k += 1
      common = k
      i += 1
    }
    while (common > 0 && common < paths(0).length && (paths(0)(common) & 0xc0) == 0x80) common -= 1
    val prefix = if (paths.isEmpty) "" else new String(paths(0), 0, common, UTF_8)
    val offsets = new Array[Int](paths.length + 1)
    var total = 0L
    i = 0
    while (i < paths.length) { offsets(i) = total.toInt; total += paths(i).length - common; i += 1 }
    require(total < Int.MaxValue, s"$total bytes of paths")
    offsets(paths.length) = total.toInt
    val bytes = new Array[Byte](total.toInt)
    val ascii = new Array[Boolean](paths.length)
    i = 0
    while (i < paths.length) {
      val p = paths(i)
      System.arraycopy(p, common, bytes, offsets(i), p.length - common)
      var a = true; var k = common
      while (a && k < p.length) { a = p(k) >= 0; k += 1 }
      ascii(i) = a
      i += 1
    }
    new PathStore(prefix, bytes, offsets, ascii)
  }
}

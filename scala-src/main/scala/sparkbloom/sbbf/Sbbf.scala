package sparkbloom.sbbf

import java.nio.{ByteBuffer, ByteOrder}

/**
 * A Parquet Split Block Bloom Filter (parquet-format `BloomFilter.md`).
 *
 * {{{
 *   filter  = z blocks of 256 bits          block = 8 little-endian 32-bit words
 *   insert(h): block i = ((h >>> 32) * z) >>> 32;  word j |= 1 << ((low32(h) * SALT[j]) >>> 27)
 *   check(h):  all eight of those bits set
 * }}}
 *
 * `h` is xxHash64 (seed 0) of the value's Parquet plain encoding (see `sparkbloom.hash`). The bitset is
 * byte-identical to parquet-java's `BlockSplitBloomFilter`, arrow-rs, Arrow C++ and DuckDB for the same
 * values and size. `z` may be any positive block count (writers use powers of two; readers accept any).
 */
final class Sbbf private (val words: Array[Int], kernel: Kernel) {
  require(words.length > 0 && words.length % Sbbf.WordsPerBlock == 0,
    s"bitset of ${words.length} words is not whole blocks")

  val numBlocks: Int = words.length / Sbbf.WordsPerBlock
  def numBytes: Int = words.length * 4
  def kernelName: String = kernel.name

  def insert(hash: Long): Unit = kernel.insert(words, numBlocks, hash)
  def mightContain(hash: Long): Boolean = kernel.check(words, numBlocks, hash)

  def insertAll(hashes: Array[Long]): Unit = kernel.insertAll(words, numBlocks, hashes, 0, hashes.length)
  def insertAll(hashes: Array[Long], from: Int, until: Int): Unit =
    kernel.insertAll(words, numBlocks, hashes, from, until)

  /** `out(i) = mightContain(hashes(i))`; the probes run without early exit. */
  def mightContainAll(hashes: Array[Long], out: Array[Boolean]): Unit = {
    require(out.length >= hashes.length)
    kernel.checkAll(words, numBlocks, hashes, 0, hashes.length, out)
  }
  def mightContainAll(hashes: Array[Long]): Array[Boolean] = {
    val o = new Array[Boolean](hashes.length); mightContainAll(hashes, o); o
  }

  /** True when at least one of `hashes` may be present (an IN list). */
  def mightContainAny(hashes: Array[Long]): Boolean = kernel.checkAny(words, numBlocks, hashes)

  /** Number of set bits. */
  def cardinalityOfBits: Long = {
    var s = 0L; var i = 0; while (i < words.length) { s += Integer.bitCount(words(i)); i += 1 }; s
  }

  /**
   * The probability that a random absent hash passes, computed from this bitset as it is: the mean over
   * blocks of the product over words of (set bits / 32). Exact for a uniform hash, whatever was inserted.
   */
  def observedFpp: Double = Sbbf.observedFpp(words, 1)

  /** Bitwise OR of another filter of the same size into this one (the union of the two sets). */
  def unionInPlace(other: Sbbf): this.type = {
    require(other.numBlocks == numBlocks, s"cannot union filters of ${numBlocks} and ${other.numBlocks} blocks")
    var i = 0; while (i < words.length) { words(i) |= other.words(i); i += 1 }
    this
  }

  /**
   * Halves the filter: block i of the result is block 2i OR block 2i+1. Because the block index is
   * `((h >>> 32) * z) >>> 32`, a hash that selected block b in z blocks selects b/2 in z/2 blocks, so the
   * result holds every value this filter holds. Needs an even block count.
   */
  def fold(): Sbbf = {
    require(numBlocks % 2 == 0 && numBlocks >= 2, s"cannot fold a filter of $numBlocks blocks")
    val out = new Array[Int](words.length / 2)
    var b = 0
    while (b < numBlocks / 2) {
      var w = 0
      while (w < 8) { out(b * 8 + w) = words(b * 16 + w) | words(b * 16 + 8 + w); w += 1 }
      b += 1
    }
    new Sbbf(out, kernel)
  }

  /**
   * Folds repeatedly while the folded filter's observed FPP stays at or below `targetFpp` and it remains
   * at least `minBytes` (arrow-rs's `fold_to_target_fpp`, with the FPP measured from the bits rather than
   * estimated). Returns this filter when no fold fits.
   */
  def foldToTargetFpp(targetFpp: Double, minBytes: Int = Sbbf.MinBytes): Sbbf = {
    var cur = this
    var continue = true
    while (continue && cur.numBlocks % 2 == 0 && cur.numBytes / 2 >= minBytes) {
      if (Sbbf.observedFpp(cur.words, 2) <= targetFpp) cur = cur.fold() else continue = false
    }
    cur
  }

  def copy(): Sbbf = new Sbbf(words.clone(), kernel)
  def withKernel(k: Kernel): Sbbf = new Sbbf(words, k)

  /** The bitset as Parquet stores it: little-endian 32-bit words. */
  def toBytes: Array[Byte] = {
    val bb = ByteBuffer.allocate(numBytes).order(ByteOrder.LITTLE_ENDIAN)
    bb.asIntBuffer().put(words)
    bb.array()
  }

  override def equals(o: Any): Boolean = o match {
    case s: Sbbf => java.util.Arrays.equals(words, s.words)
    case _ => false
  }
  override def hashCode(): Int = java.util.Arrays.hashCode(words)
  override def toString: String = s"Sbbf($numBytes bytes, ${cardinalityOfBits} bits set, ${kernel.name})"
}

object Sbbf {
  final val WordsPerBlock = 8
  final val BytesPerBlock = 32
  /** Bounds of a bitset, as in parquet-java and arrow-rs. */
  final val MinBytes = 32
  final val MaxBytes = 128 * 1024 * 1024

  def empty(numBytes: Int, kernel: Kernel = Kernel.default): Sbbf = {
    require(numBytes >= BytesPerBlock && numBytes % BytesPerBlock == 0,
      s"a bloom filter bitset must be a positive multiple of $BytesPerBlock bytes, got $numBytes")
    new Sbbf(new Array[Int](numBytes / 4), kernel)
  }

  /** An empty filter sized for `ndv` distinct values at false-positive probability `fpp`. */
  def forNdv(ndv: Long, fpp: Double, kernel: Kernel = Kernel.default): Sbbf = empty(Sizing.numBytes(ndv, fpp), kernel)

  def wrap(words: Array[Int], kernel: Kernel = Kernel.default): Sbbf = new Sbbf(words, kernel)

  /** Reads a raw little-endian bitset (any positive multiple of 32 bytes). */
  def fromBytes(bytes: Array[Byte], offset: Int, length: Int, kernel: Kernel = Kernel.default): Sbbf = {
    if (length <= 0 || length % BytesPerBlock != 0)
      throw new InvalidBloomFilterException(s"bitset length $length is not a positive multiple of $BytesPerBlock bytes")
    if (offset < 0 || offset.toLong + length > bytes.length)
      throw new InvalidBloomFilterException(
        s"bitset of $length bytes at offset $offset runs past the ${bytes.length} bytes available")
    val words = new Array[Int](length / 4)
    ByteBuffer.wrap(bytes, offset, length).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(words)
    new Sbbf(words, kernel)
  }
  def fromBytes(bytes: Array[Byte]): Sbbf = fromBytes(bytes, 0, bytes.length)

  /** Mean over (groups of `fold` adjacent) blocks of the product over words of (set bits / 32). */
  private[sbbf] def observedFpp(words: Array[Int], fold: Int): Double = {
    val blocks = words.length / 8 / fold
    var sum = 0.0
    var b = 0
    if (fold == 1) { // every build computes this per filter: the same products in the same order, unrolled
      while (b < blocks) {
        val o = b * 8
        sum += Integer.bitCount(words(o)) / 32.0 *
          (Integer.bitCount(words(o + 1)) / 32.0) *
          (Integer.bitCount(words(o + 2)) / 32.0) *
          (Integer.bitCount(words(o + 3)) / 32.0) *
          (Integer.bitCount(words(o + 4)) / 32.0) *
          (Integer.bitCount(words(o + 5)) / 32.0) *
          (Integer.bitCount(words(o + 6)) / 32.0) *
          (Integer.bitCount(words(o + 7)) / 32.0)
        b += 1
      }
      return sum / blocks
    }
    while (b < blocks) {
      var p = 1.0; var w = 0
      while (w < 8) {
        var bits = 0; var f = 0
        while (f < fold) { bits |= words((b * fold + f) * 8 + w); f += 1 }
        p *= Integer.bitCount(bits) / 32.0
        w += 1
      }
      sum += p
      b += 1
    }
    sum / blocks
  }
}

/** A stored bloom filter that cannot be used: wrong algorithm, hash, compression, size or length. */
class InvalidBloomFilterException(msg: String) extends RuntimeException(msg)

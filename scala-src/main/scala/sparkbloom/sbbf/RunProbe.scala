package sparkbloom.sbbf

import java.nio.{ByteBuffer, ByteOrder}

/**
 * One value against many filters at once, for block-sliced storage. Filters with the same
 * block count B are stored block-major: block b of each of the group's M filters is one contiguous *run*,
 *
 * {{{
 *   run(b) = block b of filter 0 | block b of filter 1 | ... | block b of filter M-1     (M x 32 bytes)
 *   block  = 8 little-endian 32-bit words, exactly as in the SBBF bitset
 * }}}
 *
 * A value's block index `b = ((h >>> 32) * B) >>> 32` ([[Kernel.blockIndex]]) and its 8-word mask depend
 * only on the hash and B, so one lookup is one contiguous read of `run(b)` and one mask tested against
 * M consecutive blocks: [[RunProbe.probeRun]]. Bit j of the result equals `mightContain(hash)` of filter j.
 *
 * Two implementations give bit-identical results: [[ScalarRunProbe]] and [[VectorRunProbe]] (JDK Vector
 * API). [[RunProbe.default]] picks the vector one when it loads, 256-bit int vectors are the platform's
 * preferred size (a smaller one would emulate them slowly) and it agrees with the scalar one on a self-test;
 * `-Dsparkbloom.simd=false` forces the scalar one, as for [[Kernel]].
 */
trait RunProbe {
  def name: String

  /**
   * For j in [0, m): sets bit j of the bitmap `out` (`out(j >>> 6) |= 1L << j`) when block j of the run,
   * bytes `[offset + 32j, offset + 32j + 32)` of `run`, has every bit of `hash`'s mask. Bits are only
   * set, never cleared, so calling it for each value of an IN list leaves the OR of their results.
   * `out` needs `RunProbe.bitmapWords(m)` words; bits at or past m are not touched.
   */
  def probeRun(run: Array[Byte], offset: Int, m: Int, hash: Long, out: Array[Long]): Unit
}

object RunProbe {
  /** Longs of a bitmap with one bit per block of an m-block run. */
  def bitmapWords(m: Int): Int = (m + 63) >>> 6

  lazy val scalar: RunProbe = ScalarRunProbe
  lazy val vector: Option[RunProbe] =
    try {
      if (!java.lang.Boolean.parseBoolean(System.getProperty("sparkbloom.simd", "true"))) None
      else {
        val p = Class.forName("sparkbloom.sbbf.VectorRunProbe$").getField("MODULE$").get(null).asInstanceOf[RunProbe]
        if (SelfTest.agrees(p)) Some(p) else None
      }
    } catch { case _: Throwable => None } // no jdk.incubator.vector, small vectors, big-endian: scalar path

  lazy val default: RunProbe = vector.getOrElse(scalar)

  /**
   * Writes run `block` of `filters` (all of the same block count) at `dest(destOffset)`: the layout the
   * probe reads, here as its reference (tests and benchmarks slice with it).
   */
  def sliceRun(filters: IndexedSeq[Sbbf], block: Int, dest: Array[Byte], destOffset: Int): Unit = {
    var j = 0
    while (j < filters.length) {
      val w = filters(j).words
      require(block < filters(j).numBlocks, s"filter $j has ${filters(j).numBlocks} blocks, not ${block + 1}")
      var k = 0
      while (k < 8) {
        val v = w(block * 8 + k); val p = destOffset + j * 32 + k * 4
        dest(p) = v.toByte; dest(p + 1) = (v >>> 8).toByte; dest(p + 2) = (v >>> 16).toByte;
        dest(p + 3) = (v >>> 24).toByte
        k += 1
      }
      j += 1
    }
  }

  /** Checked once per call, so that neither implementation reads past the run or writes past `out`. */
  private[sbbf] def checkArgs(run: Array[Byte], offset: Int, m: Int, out: Array[Long]): Unit = {
    if (m < 0 || offset < 0 || offset + 32L * m > run.length)
      throw new IndexOutOfBoundsException(s"a run of $m blocks at offset $offset does not fit in ${run.length} bytes")
    if (out.length < bitmapWords(m))
      throw new IndexOutOfBoundsException(s"a bitmap of ${out.length} longs cannot hold $m blocks")
  }

  /** Run once before the vector probe is trusted: random, full and empty blocks, odd M and offsets. */
  private object SelfTest {
    def agrees(p: RunProbe): Boolean = {
      val rnd = new java.util.SplittableRandom(42)
      val run = new Array[Byte](5 + 32 * 203)
      rnd.nextBytes(run)
      java.util.Arrays.fill(run, 5 + 32 * 10, 5 + 32 * 12, -1.toByte)
      java.util.Arrays.fill(run, 5 + 32 * 12, 5 + 32 * 13, 0.toByte)
      (0 until 300).forall { i =>
        val h = rnd.nextLong(); val m = 1 + i % 200; val off = 5 + 32 * (i % 3)
        val a = new Array[Long](bitmapWords(m)); val b = new Array[Long](bitmapWords(m))
        ScalarRunProbe.probeRun(run, off, m, h, a); p.probeRun(run, off, m, h, b)
        java.util.Arrays.equals(a, b)
      }
    }
  }
}

/**
 * A block is read as four little-endian longs, each holding two words of the mask, so a block costs four
 * loads, four and-nots and an OR: no branch and no shift by a variable amount in the loop (on x86 those go
 * through CL, 2-3 micro-ops each). Reading one byte per word instead (the byte holding its mask bit) took
 * 1.2-1.9x as long in JMH. The `ByteBuffer` view states the byte order; it is made once per call and the
 * JIT removes it (`-prof gc`: 0 B/op).
 */
object ScalarRunProbe extends RunProbe {
  def name = "scalar"

  def probeRun(run: Array[Byte], offset: Int, m: Int, hash: Long, out: Array[Long]): Unit = {
    RunProbe.checkArgs(run, offset, m, out)
    val x = hash.toInt
    val s = Kernel.Salt
    def word(k: Int): Long = (1L << ((x * s(k)) >>> 27)) & 0xffffffffL
    // Little-endian: the long at byte 8i of a block is word 2i in its low half and word 2i+1 in its high half.
    val m0 = word(0) | (word(1) << 32); val m1 = word(2) | (word(3) << 32)
    val m2 = word(4) | (word(5) << 32); val m3 = word(6) | (word(7) << 32)
    val bb = ByteBuffer.wrap(run).order(ByteOrder.LITTLE_ENDIAN)
    var j = 0
    while (j < m) {
      val end = math.min(m, j + 64)
      var acc = 0L
      while (j < end) {
        val p = offset + (j << 5)
        // The bits of the mask the block lacks: none means the block passes.
        val missing =
          (m0 & ~bb.getLong(p)) | (m1 & ~bb.getLong(p + 8)) | (m2 & ~bb.getLong(p + 16)) | (m3 & ~bb.getLong(p + 24))
        // Block j's bit enters at the top and moves down one place per block (constant shifts only);
        // (missing - 1) & ~missing has its top bit set exactly when missing == 0.
        acc = (acc >>> 1) | ((missing - 1) & ~missing & Long.MinValue)
        j += 1
      }
      out((j - 1) >>> 6) |= acc >>> ((64 - (j & 63)) & 63) // a last, partial word is not yet at bit 0
    }
  }
}

package sparkbloom.sbbf

/**
 * The hot loops of the filter: insert and check of 64-bit hashes into an array of 32-bit words laid out
 * as Parquet SBBF blocks (8 words = 256 bits per block). Two implementations give bit-identical results:
 * [[ScalarKernel]] and [[VectorKernel]] (JDK Vector API). [[Kernel.default]] picks the vector one when
 * `jdk.incubator.vector` is present and 256-bit int vectors are accelerated, else the scalar one.
 * Set `-Dsparkbloom.simd=false` to force the scalar path.
 */
trait Kernel {
  def name: String
  def insert(words: Array[Int], numBlocks: Int, hash: Long): Unit
  def check(words: Array[Int], numBlocks: Int, hash: Long): Boolean
  def insertAll(words: Array[Int], numBlocks: Int, hashes: Array[Long], from: Int, until: Int): Unit
  /** Writes `out(i) = check(hashes(i))` for i in [from, until); no early exit, so probes overlap. */
  def checkAll(words: Array[Int], numBlocks: Int, hashes: Array[Long], from: Int, until: Int, out: Array[Boolean]): Unit
  /** True if any of `hashes` may be in the filter. */
  def checkAny(words: Array[Int], numBlocks: Int, hashes: Array[Long]): Boolean
}

object Kernel {
  /** The salts of the Parquet spec, one per word of a block. */
  val Salt: Array[Int] = Array(0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b,
    0x9efc4947, 0x5c6bfb31)

  /** Block index for a hash: `((h >>> 32) * z) >>> 32` (Ross's multiply-shift, from the spec). */
  @inline def blockIndex(hash: Long, numBlocks: Int): Int = (((hash >>> 32) * numBlocks.toLong) >>> 32).toInt

  lazy val scalar: Kernel = ScalarKernel
  lazy val vector: Option[Kernel] =
    try {
      if (!java.lang.Boolean.parseBoolean(System.getProperty("sparkbloom.simd", "true"))) None
      else {
        val k: Kernel =
          Class.forName("sparkbloom.sbbf.VectorKernel$").getField("MODULE$").get(null).asInstanceOf[Kernel]
        if (VectorKernelProbe.usable(k)) Some(k) else None
      }
    } catch { case _: Throwable => None } // module not present (no --add-modules): scalar path

  lazy val default: Kernel = vector.getOrElse(scalar)
}

/** Self-test run once before the vector kernel is trusted: it must agree with the scalar kernel. */
private object VectorKernelProbe {
  def usable(k: Kernel): Boolean = {
    val rnd = new java.util.SplittableRandom(42)
    val a = new Array[Int](64 * 8); val b = new Array[Int](64 * 8)
    val hs = Array.fill(500)(rnd.nextLong())
    ScalarKernel.insertAll(a, 64, hs, 0, 250); k.insertAll(b, 64, hs, 0, 250)
    val ra = new Array[Boolean](500); val rb = new Array[Boolean](500)
    ScalarKernel.checkAll(a, 64, hs, 0, 500, ra); k.checkAll(b, 64, hs, 0, 500, rb)
    java.util.Arrays.equals(a, b) && java.util.Arrays.equals(ra, rb)
  }
}

object ScalarKernel extends Kernel {
  private[this] final val S0 = 0x47b6137b; private[this] final val S1 = 0x44974d91
  private[this] final val S2 = 0x8824ad5b; private[this] final val S3 = 0xa2b7289d
  private[this] final val S4 = 0x705495c7; private[this] final val S5 = 0x2df1424b
  private[this] final val S6 = 0x9efc4947; private[this] final val S7 = 0x5c6bfb31

  def name = "scalar"

  @inline def insert(words: Array[Int], numBlocks: Int, hash: Long): Unit = {
    val base = Kernel.blockIndex(hash, numBlocks) << 3
    val x = hash.toInt
    words(base) |= 1 << ((x * S0) >>> 27)
    words(base + 1) |= 1 << ((x * S1) >>> 27)
    words(base + 2) |= 1 << ((x * S2) >>> 27)
    words(base + 3) |= 1 << ((x * S3) >>> 27)
    words(base + 4) |= 1 << ((x * S4) >>> 27)
    words(base + 5) |= 1 << ((x * S5) >>> 27)
    words(base + 6) |= 1 << ((x * S6) >>> 27)
    words(base + 7) |= 1 << ((x * S7) >>> 27)
  }

  @inline def check(words: Array[Int], numBlocks: Int, hash: Long): Boolean = {
    val base = Kernel.blockIndex(hash, numBlocks) << 3
    val x = hash.toInt
    // Bitwise & (not &&) over all eight words: branch-free, so consecutive probes overlap in the pipeline.
    // A word passes when its bit is set: (w >>> bit) & 1.
    ((words(base) >>> ((x * S0) >>> 27)) &
      (words(base + 1) >>> ((x * S1) >>> 27)) &
      (words(base + 2) >>> ((x * S2) >>> 27)) &
      (words(base + 3) >>> ((x * S3) >>> 27)) &
      (words(base + 4) >>> ((x * S4) >>> 27)) &
      (words(base + 5) >>> ((x * S5) >>> 27)) &
      (words(base + 6) >>> ((x * S6) >>> 27)) &
      (words(base + 7) >>> ((x * S7) >>> 27)) & 1) != 0
  }

  def insertAll(words: Array[Int], numBlocks: Int, hashes: Array[Long], from: Int, until: Int): Unit = {
    var i = from
    while (i < until) { insert(words, numBlocks, hashes(i)); i += 1 }
  }

  def checkAll(words: Array[Int], numBlocks: Int, hashes: Array[Long], from: Int, until: Int, out: Array[Boolean])
      : Unit = {
    var i = from
    while (i < until) { out(i) = check(words, numBlocks, hashes(i)); i += 1 }
  }

  def checkAny(words: Array[Int], numBlocks: Int, hashes: Array[Long]): Boolean = {
    var i = 0; var any = false
    while (i < hashes.length && !any) { any = check(words, numBlocks, hashes(i)); i += 1 }
    any
  }
}

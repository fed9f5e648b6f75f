package sparkbloom.sbbf

/**
 * How big a filter must be: every filter size sparkbloom computes comes from here. Two models, both from the
 * literature the Parquet spec cites:
 *
 *  - the classic bound used by parquet-java and arrow-rs to size a filter (spec table reproduced exactly):
 *    {{{ m = -k * n / ln(1 - f^(1/k)),  k = 8,  bytes = nextPowerOfTwo(m / 8), clamped to [32 B, 128 MiB] }}}
 *    [[numBytes]]: what Parquet writers allocate, given by `sbbf_num_bytes` so filters sparkbloom helps write
 *    match theirs byte for byte.
 *  - Putze et al.'s model of a blocked filter, which is what an SBBF really is: the number of values in a
 *    block is Poisson(n / blocks), and a block holding i values answers a false "yes" with probability
 *    (1 - (31/32)^i)^8. Used to estimate the FPP of a filter of a given size holding n values, and to size the
 *    index's own filters ([[indexBytes]]): the fewest blocks that meet the FPP, on a coarse grid rather than
 *    a power of two (the spec allows any block count), for at most 1.25x the exact size instead of 2x.
 */
object Sizing {
  final val K = 8

  /** Bits the classic formula asks for (before rounding). */
  def bitsFor(ndv: Long, fpp: Double): Double = {
    checkFpp(fpp)
    require(ndv >= 0, s"ndv must be >= 0, got $ndv")
    -K * ndv.toDouble / math.log(1 - math.pow(fpp, 1.0 / K))
  }

  /** Bitset size in bytes for `ndv` distinct values at `fpp`: the spec/arrow-rs table. */
  def numBytes(ndv: Long, fpp: Double): Int = {
    // As arrow-rs: whole bits, whole bytes, clamp, then the next power of two.
    val bits = bitsFor(ndv, fpp)
    if (!(bits < Sbbf.MaxBytes.toDouble * 8)) Sbbf.MaxBytes // also NaN-safe
    else {
      val b = math.max(bits.toLong / 8, Sbbf.MinBytes.toLong)
      (java.lang.Long.highestOneBit(b - 1) << 1).toInt
    }
  }

  /** Estimated FPP of an SBBF of `numBytes` holding `n` distinct values (Putze's Poisson sum). */
  def fpp(numBytes: Long, n: Long): Double = {
    require(numBytes >= Sbbf.BytesPerBlock, s"numBytes must be >= 32, got $numBytes")
    if (n <= 0) return 0.0
    val lambda = n.toDouble / (numBytes / Sbbf.BytesPerBlock).toDouble
    // Sum the Poisson terms around the mean until they vanish; terms computed in log space.
    val lo = math.max(0, (lambda - 12 * math.sqrt(lambda) - 20).toInt)
    val hi = (lambda + 12 * math.sqrt(lambda) + 40).toInt
    var sum = 0.0
    var i = lo
    while (i <= hi) {
      val logP = -lambda + i * math.log(lambda) - logFactorial(i)
      sum += math.exp(logP) * math.pow(1 - math.pow(31.0 / 32.0, i), K)
      i += 1
    }
    math.min(1.0, sum)
  }

  /** Bits per value a bitset needs for `fpp` under the Putze model (the spec's bits-per-value table). */
  def bitsPerValue(target: Double): Double = {
    checkFpp(target)
    // fpp(bytes, n) depends only on n / blocks: bisect on the load lambda = values per block.
    var lo = 1e-6; var hi = 256.0
    def f(lambda: Double): Double = fpp(32L * 1000000, (lambda * 1000000).toLong)
    var it = 0
    while (it < 100) { val mid = (lo + hi) / 2; if (f(mid) > target) hi = mid else lo = mid; it += 1 }
    256.0 / lo
  }

  private[this] def logFactorial(i: Int): Double = {
    if (i < 2) 0.0
    else if (i < 64) { var s = 0.0; var j = 2; while (j <= i) { s += math.log(j); j += 1 }; s }
    else {
      val x = i.toDouble;
      x * math.log(x) - x + 0.5 * math.log(2 * math.Pi * x) +
        1 /
        (12 * x) -
        1 /
        (360 * x * x * x)
    }
  }

  def checkFpp(fpp: Double): Unit =
    if (!(fpp > 0 && fpp < 1)) throw new IllegalArgumentException(s"fpp must be in (0, 1), got $fpp")

  // ---------------------------------------------------------------------------------------------
  // The index's own filters

  /**
   * Filter size for a chunk of `ndv` distinct values in a bloom index: the smallest block count whose FPP under
   * Putze's model meets `fpp`, rounded up to the grid {4, 5, 6, 7}·2^k ([[roundUpToGrid]]). The grid keeps a
   * column's filters in at most four block counts per doubling of size, so a table's filters fall into few
   * block-sliced groups (a probe reads one run per group and build task), for at most 1.25× the bytes of the
   * exact size (the rounding only lowers the FPP: the budget holds).
   */
  def indexBytes(ndv: Long, fpp: Double): Int = {
    if (ndv <= 0) return Sbbf.MinBytes
    val blocks = math.max(1L, math.ceil(ndv * indexBitsPerValue(fpp) / 256.0).toLong)
    math.min(roundUpToGrid(blocks) * 32, Sbbf.MaxBytes.toLong).toInt
  }

  /** The smallest m·2^k ≥ blocks with m in 4..7 (blocks below 8 are on the grid already). */
  def roundUpToGrid(blocks: Long): Long = {
    if (blocks < 8) return blocks
    val shift = 63 - java.lang.Long.numberOfLeadingZeros(blocks) - 2 // keep the top three bits
    val mantissa = (blocks + (1L << shift) - 1) >>> shift // 4..8
    mantissa << shift
  }

  // Every row group has an FPP of its own, so bits per value come from a grid of StepsPerDecade FPPs per
  // decade, each computed once: an FPP between two grid points gets the bits of the smaller one (never
  // fewer bits than it needs; under 2% more bits, ~0.05 bits per value at fpp 1e-4).
  private val StepsPerDecade = 64
  private val Decades = 12
  private val fppGrid = Array.fill(StepsPerDecade * Decades + 1)(Double.NaN)

  /** [[bitsPerValue]] of the nearest grid FPP at or below `fpp` (cached). */
  def indexBitsPerValue(fpp: Double): Double = {
    checkFpp(fpp)
    val j = math.ceil(-math.log10(fpp) * StepsPerDecade - 1e-9).toInt
    if (j >= fppGrid.length) bitsPerValue(fpp)
    else {
      val cached = fppGrid(j)
      if (!cached.isNaN) cached
      else { val b = bitsPerValue(math.pow(10, -j.toDouble / StepsPerDecade)); fppGrid(j) = b; b }
    }
  }
}

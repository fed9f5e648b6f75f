package sparkbloom.sbbf

import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.hash.PlainHash

/** Filters sized for 1% answer "maybe" for absent values no more often than the estimate allows. */
class FalsePositiveRateSuite extends AnyFunSuite {

  /** Inserts INT64 values 0 until n, probes n distinct absent INT64 values above them; returns the rate. */
  private def measuredFpp(numBytes: Int, n: Int, probes: Int): Double = {
    val f = Sbbf.empty(numBytes)
    f.insertAll(Array.tabulate(n)(i => PlainHash.int64(i.toLong)))
    val rnd = new java.util.SplittableRandom(20260101L)
    val absent = Array.fill(probes)(PlainHash.int64(n.toLong + (rnd.nextLong() >>> 1) % (Long.MaxValue - n)))
    f.mightContainAll(absent).count(identity).toDouble / probes
  }

  test("a filter sized by numBytes for 1% stays within 1.2x of its Putze estimate") {
    for (ndv <- Seq(1000, 10000, 100000)) {
      val numBytes = Sizing.numBytes(ndv, 0.01)
      val estimate = Sizing.fpp(numBytes, ndv)
      val measured = measuredFpp(numBytes, ndv, 2000000)
      assert(measured <= 1.2 * estimate, s"ndv $ndv, $numBytes bytes: measured $measured, estimate $estimate")
      assert(measured >= estimate / 1.2,
        s"the estimate is not just an upper bound: measured $measured, estimate $estimate")
    }
  }

  test("a filter loaded to exactly 1% by the estimate measures within 1.2x of 1%") {
    val numBytes = 1 << 17
    // The largest n whose estimate is at most 1%.
    val n = Iterator.iterate(numBytes * 8 / 11)(_ + 50).takeWhile(Sizing.fpp(numBytes, _) <= 0.01).toSeq.last
    assert(Sizing.fpp(numBytes, n) > 0.009)
    val measured = measuredFpp(numBytes, n, 4000000)
    assert(measured <= 1.2 * 0.01, s"n $n: measured $measured")
    assert(measured >= 0.01 / 1.2, s"n $n: measured $measured")
  }

  test("the bits-per-value of the spec table gives the table's FPP when measured") {
    val numBytes = 1 << 18
    for ((bitsPerValue, fpp) <- Seq(6.0 -> 0.1, 10.5 -> 0.01, 16.9 -> 0.001)) {
      val n = (numBytes * 8 / bitsPerValue).toInt
      val measured = measuredFpp(numBytes, n, 3000000)
      assert(measured <= 1.2 * fpp && measured >= fpp / 1.2, s"$bitsPerValue bits per value: measured $measured")
    }
  }
}

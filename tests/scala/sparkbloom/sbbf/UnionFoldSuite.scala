package sparkbloom.sbbf

import org.scalatest.funsuite.AnyFunSuite

/** Union of two filters and folding a filter to a smaller size. */
class UnionFoldSuite extends AnyFunSuite {

  private def randomHashes(seed: Long, n: Int): Array[Long] = {
    val rnd = new java.util.SplittableRandom(seed); Array.fill(n)(rnd.nextLong())
  }
  private def filterOf(numBytes: Int, hashes: Array[Long]): Sbbf = {
    val f = Sbbf.empty(numBytes); f.insertAll(hashes); f
  }

  test("the union of two filters is the filter of the union of their values") {
    val a = randomHashes(1, 3000); val b = randomHashes(2, 5000)
    val union = filterOf(16384, a).unionInPlace(filterOf(16384, b))
    assert(union == filterOf(16384, a ++ b))
    assert(union.mightContainAll(a ++ b).forall(identity))
  }

  test("union is commutative and idempotent") {
    val a = filterOf(1024, randomHashes(3, 100)); val b = filterOf(1024, randomHashes(4, 100))
    assert(a.copy().unionInPlace(b) == b.copy().unionInPlace(a))
    assert(a.copy().unionInPlace(a) == a)
  }

  test("filters of different sizes cannot be united") {
    val e = intercept[IllegalArgumentException](Sbbf.empty(64).unionInPlace(Sbbf.empty(128)))
    assert(e.getMessage.contains("cannot union"))
  }

  test("a folded filter is exactly the filter built at half the size from the same values") {
    val hs = randomHashes(5, 4000)
    for (numBytes <- Seq(64, 1024, 65536))
      assert(filterOf(numBytes, hs).fold() == filterOf(numBytes / 2, hs), s"$numBytes")
    // Also for even block counts that are not powers of two.
    assert(filterOf(6 * 32, hs).fold() == filterOf(3 * 32, hs))
  }

  test("a folded filter keeps every inserted value") {
    val hs = randomHashes(6, 10000)
    var f = filterOf(1 << 20, hs)
    while (f.numBlocks > 1) { f = f.fold(); assert(f.mightContainAll(hs).forall(identity), s"${f.numBytes} bytes") }
  }

  test("folding does not change the filter it was called on") {
    val f = filterOf(1024, randomHashes(7, 50)); val before = f.copy()
    f.fold()
    assert(f == before)
  }

  test("a filter of one block or an odd number of blocks cannot be folded") {
    intercept[IllegalArgumentException](Sbbf.empty(32).fold())
    intercept[IllegalArgumentException](Sbbf.empty(96).fold())
  }

  test("foldToTargetFpp shrinks an oversized filter while its observed FPP stays under the target") {
    val hs = randomHashes(8, 10000)
    val big = filterOf(1 << 20, hs)
    for (target <- Seq(0.05, 0.01, 0.001)) {
      val folded = big.foldToTargetFpp(target)
      assert(folded.numBytes < big.numBytes, s"target $target")
      assert(folded.observedFpp <= target, s"target $target: ${folded.observedFpp}")
      assert(folded.mightContainAll(hs).forall(identity))
      if (folded.numBlocks % 2 == 0) assert(folded.fold().observedFpp > target, "one more fold would break the target")
    }
  }

  test("foldToTargetFpp ends near the size the sizing formula asks for") {
    val hs = randomHashes(9, 10000)
    val folded = filterOf(1 << 22, hs).foldToTargetFpp(0.01)
    val sized = Sizing.numBytes(10000, 0.01)
    assert(folded.numBytes >= sized / 2 && folded.numBytes <= sized * 2, s"${folded.numBytes} vs $sized")
  }

  test("foldToTargetFpp respects minBytes and leaves a full filter alone") {
    val sparse = filterOf(4096, randomHashes(10, 3))
    assert(sparse.foldToTargetFpp(0.5).numBytes == 32)
    assert(sparse.foldToTargetFpp(0.5, minBytes = 512).numBytes == 512)
    val full = filterOf(1024, randomHashes(11, 5000))
    assert(full.foldToTargetFpp(0.01) eq full)
  }

  test("observedFpp of a filter equals the fraction of random hashes it accepts") {
    val f = filterOf(65536, randomHashes(12, 20000))
    val probes = randomHashes(13, 1000000)
    val measured = f.mightContainAll(probes).count(identity).toDouble / probes.length
    assert(math.abs(measured - f.observedFpp) < 0.1 * f.observedFpp + 1e-4, s"$measured vs ${f.observedFpp}")
  }
}

package sparkbloom.sbbf

import java.util.SplittableRandom

import org.scalatest.funsuite.AnyFunSuite

/**
 * The spec of the run probe is the per-filter check: bit j of a probe of run b must be
 * `mightContain(hash)` of filter j, for both implementations, whatever M, offset or block contents.
 */
class RunProbeSuite extends AnyFunSuite {

  private lazy val vector: RunProbe =
    RunProbe.vector.getOrElse(fail("tests run with jdk.incubator.vector: RunProbe.vector must exist"))
  private def probes = Seq(RunProbe.scalar, vector)

  private def allOnes(j: Int) = j % 17 == 5
  private def allZeros(j: Int) = j % 17 == 11

  /**
   * M filters of B blocks holding random values, some all ones and some all zeros, and 4 values per
   * filter: `inserted(4j until 4j + 4)` are in filter j (unless it is all zeros).
   */
  private def filters(rnd: SplittableRandom, m: Int, blocks: Int): (IndexedSeq[Sbbf], Array[Long]) = {
    val inserted = Array.fill(m * 4)(rnd.nextLong())
    val fs = (0 until m).map { j =>
      if (allOnes(j)) Sbbf.wrap(Array.fill(blocks * 8)(-1), Kernel.scalar)
      else if (allZeros(j)) Sbbf.empty(blocks * 32, Kernel.scalar)
      else {
        val f = Sbbf.empty(blocks * 32, Kernel.scalar)
        f.insertAll(Array.fill(blocks * 12)(rnd.nextLong())) // ~ 21 bits per value: many hits and many misses
        f.insertAll(inserted.slice(j * 4, j * 4 + 4))
        f
      }
    }
    (fs, inserted)
  }

  /** All B runs, block-major, in one array starting at `offset` and followed by junk. */
  private def sliced(fs: IndexedSeq[Sbbf], offset: Int, rnd: SplittableRandom): Array[Byte] = {
    val blocks = fs.head.numBlocks; val runBytes = fs.length * 32
    val all = new Array[Byte](offset + blocks * runBytes + 40)
    rnd.nextBytes(all) // junk before and after the runs must not matter
    (0 until blocks).foreach(b => RunProbe.sliceRun(fs, b, all, offset + b * runBytes))
    all
  }

  private def bit(bitmap: Array[Long], j: Int): Boolean = ((bitmap(j >>> 6) >>> j) & 1) != 0

  test("the vector run probe is available when tests run with --add-modules jdk.incubator.vector") {
    assert(vector.name == "vector")
    assert(RunProbe.default eq vector)
    assert(RunProbe.scalar.name == "scalar")
  }

  test("sliceRun lays block b of filter j at bytes 32j of run b, as little-endian words of the bitset") {
    val (fs, _) = filters(new SplittableRandom(1), 3, 4)
    val run = new Array[Byte](3 * 32)
    RunProbe.sliceRun(fs, 2, run, 0)
    for (j <- 0 until 3) assert(run.slice(j * 32, j * 32 + 32).sameElements(fs(j).toBytes.slice(2 * 32, 3 * 32)))
  }

  test("bit j of a probe equals mightContain of filter j, for both probes, many M, B and offsets") {
    val rnd = new SplittableRandom(2)
    for ((m, blocks, offset) <- Seq((1, 1, 0), (1, 7, 3), (63, 4, 0), (64, 16, 32), (65, 3, 1), (100, 5, 17),
        (129, 2, 64), (1000, 8, 5))) {
      val (fs, inserted) = filters(rnd, m, blocks)
      val all = sliced(fs, offset, rnd)
      val hashes = inserted ++ Array.fill(3000)(rnd.nextLong())
      var hits, misses = 0L
      for (h <- hashes) {
        val b = Kernel.blockIndex(h, blocks)
        val expected = fs.map(_.mightContain(h))
        for (p <- probes) {
          val out = new Array[Long](RunProbe.bitmapWords(m))
          p.probeRun(all, offset + b * m * 32, m, h, out)
          val got = (0 until m).map(bit(out, _))
          assert(got == expected, s"${p.name}: M=$m B=$blocks offset=$offset hash=$h")
        }
        hits += expected.count(identity); misses += expected.count(!_)
      }
      assert(hits > 0 && misses > 0, s"M=$m: the hashes exercise both answers")
    }
  }

  test("a value inserted into filter j always sets bit j") {
    val rnd = new SplittableRandom(3)
    val (fs, inserted) = filters(rnd, 200, 8)
    val all = sliced(fs, 0, rnd)
    for (p <- probes; j <- 0 until 200 if !allZeros(j); h <- inserted.slice(j * 4, j * 4 + 4)) {
      val out = new Array[Long](4)
      p.probeRun(all, Kernel.blockIndex(h, 8) * 200 * 32, 200, h, out)
      assert(bit(out, j), s"${p.name}: filter $j lost hash $h")
    }
  }

  test("all-ones blocks always pass and all-zeros blocks never do") {
    val rnd = new SplittableRandom(4)
    val ones = Array.fill[Byte](70 * 32)(-1); val zeros = new Array[Byte](70 * 32)
    for (p <- probes; _ <- 0 until 200) {
      val h = rnd.nextLong()
      val a = new Array[Long](2); p.probeRun(ones, 0, 70, h, a)
      assert(a(0) == -1L && a(1) == (1L << 6) - 1, p.name)
      val b = new Array[Long](2); p.probeRun(zeros, 0, 70, h, b)
      assert(b.forall(_ == 0L), p.name)
    }
  }

  test("probes only set bits: several hashes into one bitmap give the OR of their bitmaps (an IN list)") {
    val rnd = new SplittableRandom(5)
    val run = new Array[Byte](150 * 32); rnd.nextBytes(run)
    val hs = Array.fill(5)(rnd.nextLong())
    for (p <- probes) {
      val union = new Array[Long](3)
      hs.foreach(p.probeRun(run, 0, 150, _, union))
      val separate = hs.map { h =>
        val o = new Array[Long](3); p.probeRun(run, 0, 150, h, o); o
      }
      assert(union.toSeq == (0 until 3).map(w => separate.map(_(w)).reduce(_ | _)), p.name)
      val preset = Array(-1L, -1L, -1L)
      p.probeRun(run, 0, 150, hs(0), preset)
      assert(preset.forall(_ == -1L), s"${p.name}: a set bit was cleared")
    }
  }

  test("bits at or past M and blocks past the run are not touched") {
    val run = Array.fill[Byte](10 * 32)(-1)
    for (p <- probes) {
      val out = new Array[Long](2)
      p.probeRun(run, 32, 3, 12345L, out) // blocks 1..3 only; the rest of the run is all ones too
      assert(out.toSeq == Seq(7L, 0L), p.name)
      p.probeRun(run, 0, 0, 12345L, out)
      assert(out.toSeq == Seq(7L, 0L), s"${p.name}: M = 0 sets nothing")
    }
  }

  test("a run that does not fit the array or a bitmap too short is rejected before any read") {
    val run = new Array[Byte](4 * 32)
    for (p <- probes) {
      intercept[IndexOutOfBoundsException](p.probeRun(run, 1, 4, 0L, new Array[Long](1)))
      intercept[IndexOutOfBoundsException](p.probeRun(run, -32, 1, 0L, new Array[Long](1)))
      intercept[IndexOutOfBoundsException](p.probeRun(run, 0, -1, 0L, new Array[Long](1)))
      intercept[IndexOutOfBoundsException](p.probeRun(new Array[Byte](65 * 32), 0, 65, 0L, new Array[Long](1)))
    }
  }
}

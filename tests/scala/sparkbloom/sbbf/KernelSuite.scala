package sparkbloom.sbbf

import org.scalatest.funsuite.AnyFunSuite

/** The scalar and the Vector API kernels must give identical bits and answers. */
class KernelSuite extends AnyFunSuite {

  private lazy val vector: Kernel =
    Kernel.vector.getOrElse(fail("tests run with jdk.incubator.vector: Kernel.vector must exist"))

  test("the vector kernel is available when tests run with --add-modules jdk.incubator.vector") {
    assert(Kernel.vector.isDefined)
    assert(vector.name == "vector")
    assert(Kernel.default eq vector)
    assert(Kernel.scalar.name == "scalar")
  }

  test("single inserts give identical words for power-of-two and other block counts") {
    val rnd = new java.util.SplittableRandom(1)
    for (blocks <- Seq(1, 2, 3, 7, 64, 100, 1024, 4099)) {
      val a = new Array[Int](blocks * 8); val b = new Array[Int](blocks * 8)
      for (_ <- 0 until blocks * 4) {
        val h = rnd.nextLong()
        Kernel.scalar.insert(a, blocks, h); vector.insert(b, blocks, h)
      }
      assert(java.util.Arrays.equals(a, b), s"$blocks blocks")
    }
  }

  test("batch inserts over a sub-range touch only that range of hashes") {
    val rnd = new java.util.SplittableRandom(2)
    val hs = Array.fill(1000)(rnd.nextLong())
    for (k <- Seq(Kernel.scalar, vector)) {
      val batch = new Array[Int](128 * 8); val single = new Array[Int](128 * 8)
      k.insertAll(batch, 128, hs, 100, 300)
      (100 until 300).foreach(i => k.insert(single, 128, hs(i)))
      assert(java.util.Arrays.equals(batch, single), k.name)
    }
  }

  test("checks agree hash by hash between kernels and between single and batch calls") {
    val rnd = new java.util.SplittableRandom(3)
    for (blocks <- Seq(1, 5, 256, 1000)) {
      val words = new Array[Int](blocks * 8)
      val inserted = Array.fill(blocks * 20)(rnd.nextLong())
      Kernel.scalar.insertAll(words, blocks, inserted, 0, inserted.length)
      val probes = inserted ++ Array.fill(20000)(rnd.nextLong())
      val single = probes.map(Kernel.scalar.check(words, blocks, _))
      val singleV = probes.map(vector.check(words, blocks, _))
      val batchS = new Array[Boolean](probes.length);
      Kernel.scalar.checkAll(words, blocks, probes, 0, probes.length, batchS)
      val batchV = new Array[Boolean](probes.length); vector.checkAll(words, blocks, probes, 0, probes.length, batchV)
      assert(single.sameElements(singleV) && single.sameElements(batchS) && single.sameElements(batchV),
        s"$blocks blocks")
      assert(single.take(inserted.length).forall(identity), "no false negatives")
      assert(single.drop(inserted.length).exists(!_), "some random probes are absent")
    }
  }

  test("checkAll writes only the requested slots") {
    val words = new Array[Int](8 * 4)
    val hs = Array(1L, 2L, 3L, 4L, 5L)
    hs.foreach(Kernel.scalar.insert(words, 4, _))
    for (k <- Seq(Kernel.scalar, vector)) {
      val out = Array.fill(5)(false)
      k.checkAll(words, 4, hs, 1, 3, out)
      assert(out.toSeq == Seq(false, true, true, false, false), k.name)
    }
  }

  test("checkAny is true exactly when some hash passes") {
    val rnd = new java.util.SplittableRandom(4)
    val words = new Array[Int](64 * 8)
    val in = Array.fill(10)(rnd.nextLong()); Kernel.scalar.insertAll(words, 64, in, 0, in.length)
    val absent = Iterator.continually(rnd.nextLong()).filterNot(Kernel.scalar.check(words, 64, _)).take(50).toArray
    for (k <- Seq(Kernel.scalar, vector)) {
      assert(!k.checkAny(words, 64, absent), k.name)
      assert(!k.checkAny(words, 64, Array.emptyLongArray), k.name)
      assert(k.checkAny(words, 64, absent :+ in(3)), k.name)
      assert(k.checkAny(words, 64, in(7) +: absent), k.name)
    }
  }

  test("Sbbf built on either kernel is the same filter and answers the same") {
    val rnd = new java.util.SplittableRandom(5)
    val hs = Array.fill(5000)(rnd.nextLong())
    val s = Sbbf.empty(4096, Kernel.scalar); s.insertAll(hs)
    val v = Sbbf.empty(4096, vector); v.insertAll(hs)
    assert(s == v && s.toBytes.sameElements(v.toBytes))
    val probes = Array.fill(10000)(rnd.nextLong())
    assert(s.mightContainAll(probes).sameElements(v.mightContainAll(probes)))
    assert(s.withKernel(vector).mightContainAll(probes).sameElements(s.mightContainAll(probes)))
  }
}

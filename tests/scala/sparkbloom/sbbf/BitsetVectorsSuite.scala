package sparkbloom.sbbf

import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.TestSupport.{hex, toHex, utf8}
import sparkbloom.hash.PlainHash

/** Bitsets written by other implementations (vectors.md §3c, §3e', §3f), rebuilt from their values. */
class BitsetVectorsSuite extends AnyFunSuite {

  private def build(numBytes: Int, hashes: Seq[Long], kernel: Kernel = Kernel.default): Sbbf = {
    val f = Sbbf.empty(numBytes, kernel); hashes.foreach(f.insert); f
  }

  private def kernels: Seq[Kernel] = Seq(Kernel.scalar) ++ Kernel.vector

  test("the arrow-rs fixture bitset (parquet-mr/Spark, strings a0..a9, 32 bytes) is rebuilt exactly") {
    val expected = Array(200, 1, 80, 20, 64, 68, 8, 109, 6, 37, 4, 67, 144, 80, 96, 32,
      8, 132, 43, 33, 0, 5, 99, 65, 2, 0, 224, 44, 64, 78, 96, 4).map(_.toByte)
    for (k <- kernels) {
      val f = build(32, (0 until 10).map(i => PlainHash.bytes(utf8(s"a$i"))), k)
      assert(f.toBytes.sameElements(expected), k.name)
    }
  }

  test("the arrow-rs fixture bitset holds a0..a9 and none of a10..a19") {
    val expected = Array(200, 1, 80, 20, 64, 68, 8, 109, 6, 37, 4, 67, 144, 80, 96, 32,
      8, 132, 43, 33, 0, 5, 99, 65, 2, 0, 224, 44, 64, 78, 96, 4).map(_.toByte)
    val f = Sbbf.fromBytes(expected)
    for (i <- 0 until 10) assert(f.mightContain(PlainHash.bytes(utf8(s"a$i"))), s"a$i")
    for (i <- 10 until 20) assert(!f.mightContain(PlainHash.bytes(utf8(s"a$i"))), s"a$i")
  }

  test("DuckDB's single-value INT32 filters (multi_bloom_a/b/c) are rebuilt exactly") {
    val rows = Seq(1 -> "0400000000000004004000000400000000000004002000000000000200080000",
      2 -> "0000040000000008000080000100000000000080002000000000100000200000",
      3 -> "2000000000000008000080000002000080000000000040000000400000100000")
    for ((v, bits) <- rows; k <- kernels) {
      val f = build(32, Seq(PlainHash.int32(v)), k)
      assert(toHex(f.toBytes) == bits, s"value $v, ${k.name}")
      assert(f.cardinalityOfBits == 8, "one insert sets exactly one bit per word")
    }
  }

  test("DuckDB's 32-byte INT64 and string filters of 11 values are rebuilt exactly") {
    val ints = (0 to 100 by 10).map(v => PlainHash.int64(v.toLong))
    assert(toHex(build(32, ints).toBytes) == "9302e48010742515096182a2d64444031a0c85500082909908522ba8095201e0")
    val strings = (0 to 100 by 10).map(v => PlainHash.bytes(utf8(s"string_$v")))
    assert(toHex(build(32, strings).toBytes) == "314049318448056a10254e14007481b83040406914088a5a3000515403b800cb")
  }

  test("pyarrow's 64-byte INT32 and DOUBLE filters of 0, 2, .., 98 are rebuilt exactly") {
    val ints = (0 until 100 by 2).map(PlainHash.int32)
    assert(toHex(build(64, ints).toBytes) == "ec684c32732d2ef91a9cd5b36b28993d2d299987f4e8f65e18fbd436d02efd16" +
      "c9c5fd325d9c98efe0bd67ab305de95cb63615ec37f36b597e02eabdf29b8ced")
    val doubles = (0 until 100 by 2).map(v => PlainHash.double(v.toDouble))
    assert(toHex(build(64, doubles).toBytes) == "cc6fa468b03f83b6792b173d3f26e23efe165f36ee35a9b88dff120064e57ece" +
      "d974895f1af1a7b89019a3773a7e0ea47cd45fb3f7f338e0486e4b793cb7d530")
  }

  test("a bitset read back from bytes is the same filter") {
    val bytes = hex("9302e48010742515096182a2d64444031a0c85500082909908522ba8095201e0")
    val f = Sbbf.fromBytes(bytes)
    assert(f.toBytes.sameElements(bytes))
    assert(f.numBlocks == 1)
    for (v <- 0 to 100 by 10) assert(f.mightContain(PlainHash.int64(v.toLong)))
  }

  test("an empty filter contains nothing") {
    val f = Sbbf.empty(1024)
    assert((0 until 1000).forall(i => !f.mightContain(PlainHash.int32(i))))
    assert(f.observedFpp == 0.0)
  }

  test("the spec's block selection and word masks are followed bit by bit") {
    // h = 0x0000000180000001: upper half 1 selects block ((1 * 4) >>> 32) = 0 of 4; key 0x80000001.
    val h = 0x0000000180000001L
    val f = Sbbf.empty(128); f.insert(h)
    val key = 0x80000001
    val expectedWords = Kernel.Salt.map(s => 1 << ((key * s) >>> 27))
    assert(f.words.take(8).sameElements(expectedWords))
    assert(f.words.drop(8).forall(_ == 0))
    // upper half 0xC0000000 selects block 3 of 4.
    val g = Sbbf.empty(128); g.insert(0xc000000000000000L | (key.toLong & 0xffffffffL))
    assert(g.words.slice(24, 32).sameElements(expectedWords) && g.words.take(24).forall(_ == 0))
  }
}

package sparkbloom.hash

import java.nio.ByteBuffer

import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.TestSupport
import sparkbloom.TestSupport.u64

/** xxHash64 (seed 0) known answers from vectors.md §2, all through PlainHash.bytes. */
class XxHash64VectorsSuite extends AnyFunSuite {

  /**
   * The xxHash project's sanity buffer: byteGen starts at PRIME32 (2654435761) and is multiplied by
   * 11400714785074694797 per byte.
   */
  private def sanityBuffer(len: Int): Array[Byte] = {
    val out = new Array[Byte](len)
    var gen = 2654435761L
    var i = 0
    while (i < len) { out(i) = (gen >>> 56).toByte; gen *= 0x9e3779b185ebca8dL; i += 1 }
    out
  }

  test("the sanity buffer generator reproduces the 16 bytes printed in vectors.md") {
    assert(TestSupport.toHex(sanityBuffer(16)) == "0052929bb732a3242d00af950eecb893")
  }

  private val sanitySeed0 = Seq(0 -> "EF46DB3751D8E999", 1 -> "E934A84ADB052768", 4 -> "9136A0DCA57457EE",
    14 -> "8282DCC4994E35C8", 222 -> "B641AE8CB691C174")

  test("every seed-0 row of the xxHash sanity table is reproduced") {
    for ((len, expected) <- sanitySeed0)
      assert(PlainHash.bytes(sanityBuffer(len)) == u64(expected), s"len $len")
  }

  // vectors.md §2b: entry i hashes the i bytes 00 01 .. (i-1). Signed values as parquet-java stores them.
  private val loopingSeed0: Array[Long] = Array(-1205034819632174695L, -1642502924627794072L, 5216751715308240086L,
    -1889335612763511331L, -13835840860730338L, -2521325055659080948L, 4867868962443297827L, 1498682999415010002L,
    -8626056615231480947L, 7482827008138251355L, -617731006306969209L, 7289733825183505098L, 4776896707697368229L,
    1428059224718910376L, 6690813482653982021L, -6248474067697161171L, 4951407828574235127L, 6198050452789369270L,
    5776283192552877204L, -626480755095427154L, -6637184445929957204L, 8370873622748562952L, -1705978583731280501L,
    -7898818752540221055L, -2516210193198301541L, 8356900479849653862L, -4413748141896466000L, -6040072975510680789L,
    1451490609699316991L, -7948005844616396060L, 8567048088357095527L, -4375578310507393311L)

  test("the 32 looping-bytes hashes of parquet-java and Arrow C++ are reproduced") {
    for (len <- loopingSeed0.indices) {
      val input = Array.tabulate(len)(_.toByte)
      assert(PlainHash.bytes(input) == loopingSeed0(len), s"len $len")
    }
  }

  test("the signed and hex forms of the looping table agree (spot check of the transcription)") {
    assert(loopingSeed0(0) == u64("EF46DB3751D8E999"))
    assert(loopingSeed0(8) == u64("884A173614B81B8D"))
    assert(loopingSeed0(31) == u64("C346D2B59B4D8EE1"))
  }

  test("the empty input hashes to arrow-rs's 17241709254077376921") {
    assert(java.lang.Long.toUnsignedString(PlainHash.bytes(Array.emptyByteArray)) == "17241709254077376921")
  }

  test("hashing a slice, a heap buffer and a direct buffer gives the same hash as the bare bytes") {
    val all = Array.tabulate(64)(i => (i * 7 + 3).toByte)
    for (off <- Seq(0, 1, 5, 13); len <- Seq(0, 1, 7, 8, 31, 32, 33, 50) if off + len <= all.length) {
      val bare = all.slice(off, off + len)
      val expected = PlainHash.bytes(bare)
      assert(PlainHash.bytes(all, off, len) == expected, s"slice $off+$len")
      assert(PlainHash.bytes(ByteBuffer.wrap(all, off, len)) == expected, s"heap buffer $off+$len")
      val direct = ByteBuffer.allocateDirect(len); direct.put(bare); direct.flip()
      assert(PlainHash.bytes(direct) == expected, s"direct buffer $off+$len")
    }
  }
}

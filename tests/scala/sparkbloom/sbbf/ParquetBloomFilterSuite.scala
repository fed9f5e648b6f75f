package sparkbloom.sbbf

import java.io.ByteArrayOutputStream

import org.apache.parquet.format.Util
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.TestSupport.{fixtureBytes, toHex, utf8}
import sparkbloom.hash.PlainHash

/** The Parquet form of a filter: Thrift BloomFilterHeader + bitset (vectors.md §1, §3a, §3d). */
class ParquetBloomFilterSuite extends AnyFunSuite {

  private def headerBytes(numBytes: Int): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    Util.writeBloomFilterHeader(ParquetBloomFilter.header(numBytes), out)
    out.toByteArray
  }

  /** A valid header for `numBytes` with one of the three unions' member id replaced by `memberId`. */
  private def headerWithUnionMember(numBytes: Int, union: Int, memberId: Int): Array[Byte] = {
    val h = headerBytes(numBytes)
    val varintLength = h.length - 14 // 1 field byte + varint + 3 unions of 4 bytes + stop
    val at = 1 + varintLength + 4 * union + 1
    assert(h(at) == 0x1c, s"expected a struct field header at $at in ${toHex(h)}")
    h(at) = ((memberId << 4) | 0x0c).toByte
    h
  }

  private def filterOf(numBytes: Int, values: String*): Sbbf = {
    val f = Sbbf.empty(numBytes); values.foreach(v => f.insert(PlainHash.bytes(utf8(v)))); f
  }

  test("the header of a 32-byte filter is DuckDB's 15 bytes") {
    assert(toHex(headerBytes(32)) == "15401c1c00001c1c00001c1c000000")
    assert(toHex(ParquetBloomFilter.serialize(Sbbf.empty(32)).take(15)) == "15401c1c00001c1c00001c1c000000")
  }

  test("the header of a 64-byte filter is pyarrow's 16 bytes") {
    assert(toHex(headerBytes(64)) == "1580011c1c00001c1c00001c1c000000")
  }

  test("the header grows with the varint of numBytes: 15, 16, 17, 18 and 19 bytes") {
    val rows = Seq(32 -> 15, 2016 -> 16, 8160 -> 16, 8192 -> 17, 512 * 1024 -> 17, 1024 * 1024 -> 18,
      Sbbf.MaxBytes -> 19)
    for ((n, len) <- rows) assert(headerBytes(n).length == len, s"numBytes $n")
  }

  test("arrow-rs's header vector parses to 32 bytes in a 15-byte header, leaving the trailing byte unread") {
    val bytes = Array(21, 64, 28, 28, 0, 0, 28, 28, 0, 0, 28, 28, 0, 0, 0, 99).map(_.toByte)
    assert(ParquetBloomFilter.parseHeader(bytes, 0, bytes.length) == ParquetBloomFilter.Parsed(32, 15))
  }

  test("a header is found at an offset inside a larger buffer") {
    val serialized = ParquetBloomFilter.serialize(filterOf(64, "x", "y"))
    val buf = Array.fill[Byte](7)(9) ++ serialized ++ Array.fill[Byte](5)(9)
    assert(ParquetBloomFilter.parseHeader(buf, 7, serialized.length) == ParquetBloomFilter.Parsed(64, 16))
    val back = ParquetBloomFilter.deserialize(buf, 7, serialized.length, Some(serialized.length))
    assert(back == filterOf(64, "x", "y"))
  }

  test("bloom_filter.xxhash.bin is rebuilt byte for byte from hello, parquet, bloom, filter in 1024 bytes") {
    val expected = fixtureBytes("parquet-testing/bloom_filter.xxhash.bin")
    assert(expected.length == 1040)
    val rebuilt = ParquetBloomFilter.serialize(filterOf(1024, "hello", "parquet", "bloom", "filter"))
    assert(toHex(rebuilt) == toHex(expected))
  }

  test("bloom_filter.xxhash.bin reads back with its four strings present and others absent") {
    val f = ParquetBloomFilter.deserialize(fixtureBytes("parquet-testing/bloom_filter.xxhash.bin"))
    assert(f.numBytes == 1024)
    for (v <- Seq("hello", "parquet", "bloom", "filter")) assert(f.mightContain(PlainHash.bytes(utf8(v))), v)
    for (v <- Seq("Hello", "world", "not_exists", "")) assert(!f.mightContain(PlainHash.bytes(utf8(v))), v)
  }

  test("the deprecated murmur3 bloom_filter.bin is rejected") {
    val old = fixtureBytes("parquet-testing/bloom_filter.bin")
    val e = intercept[InvalidBloomFilterException](ParquetBloomFilter.deserialize(old))
    assert(e.getMessage.contains("unreadable bloom filter header"))
    intercept[InvalidBloomFilterException](ParquetBloomFilter.deserialize(old, 0, old.length, None))
  }

  test("an algorithm other than BLOCK is rejected") {
    val bad = headerWithUnionMember(32, union = 0, memberId = 2) ++ new Array[Byte](32)
    val e = intercept[InvalidBloomFilterException](ParquetBloomFilter.deserialize(bad, 0, bad.length, None))
    assert(e.getMessage.contains("algorithm"))
  }

  test("a hash other than XXHASH is rejected") {
    val bad = headerWithUnionMember(32, union = 1, memberId = 2) ++ new Array[Byte](32)
    val e = intercept[InvalidBloomFilterException](ParquetBloomFilter.deserialize(bad, 0, bad.length, None))
    assert(e.getMessage.contains("hash"))
  }

  test("a compression other than UNCOMPRESSED is rejected") {
    val bad = headerWithUnionMember(32, union = 2, memberId = 3) ++ new Array[Byte](32)
    val e = intercept[InvalidBloomFilterException](ParquetBloomFilter.deserialize(bad, 0, bad.length, None))
    assert(e.getMessage.contains("compression"))
  }

  test("the rewritten header of the union tests differs from a good one only in the member id") {
    val good = headerBytes(32); val bad = headerWithUnionMember(32, 1, 2)
    assert(good.indices.count(i => good(i) != bad(i)) == 1)
  }

  test("numBytes that are not a positive multiple of 32 are rejected") {
    for (n <- Seq(0, -32, 1, 31, 33, 100, 10000)) {
      val bad = headerBytes(n) ++ new Array[Byte](math.max(n, 0))
      val e = intercept[InvalidBloomFilterException](ParquetBloomFilter.deserialize(bad, 0, bad.length, None))
      assert(e.getMessage.contains("not a positive multiple of 32"), s"numBytes $n: ${e.getMessage}")
    }
  }

  test("numBytes over 128 MiB is rejected before anything is allocated") {
    val bad = headerBytes(Sbbf.MaxBytes + 32)
    val e = intercept[InvalidBloomFilterException](ParquetBloomFilter.parseHeader(bad, 0, bad.length))
    assert(e.getMessage.contains("maximum"))
  }

  test("a header whose size disagrees with the stored length is rejected, in either direction") {
    val good = ParquetBloomFilter.serialize(filterOf(64, "a"))
    assert(ParquetBloomFilter.deserialize(good, 0, good.length, Some(80)) == filterOf(64, "a"))
    for (stored <- Seq(79, 81, 16 + 32, 16 + 128)) {
      val e = intercept[InvalidBloomFilterException](ParquetBloomFilter.deserialize(good, 0, good.length, Some(stored)))
      assert(e.getMessage.contains("stored length"), e.getMessage)
    }
  }

  test("a bitset cut short is rejected when no stored length is known") {
    val good = ParquetBloomFilter.serialize(filterOf(1024, "a"))
    val e = intercept[InvalidBloomFilterException](ParquetBloomFilter.deserialize(good, 0, good.length - 1, None))
    assert(e.getMessage.contains("runs past"))
  }

  test("a truncated header is rejected") {
    val good = headerBytes(1024)
    for (len <- 0 until good.length)
      intercept[InvalidBloomFilterException](ParquetBloomFilter.parseHeader(good, 0, len))
  }

  test("block counts that are not powers of two are accepted and work") {
    for (blocks <- Seq(3, 5, 7, 100)) {
      val f = Sbbf.empty(blocks * 32)
      val hashes = (0 until 50).map(i => PlainHash.int32(i))
      hashes.foreach(f.insert)
      val back = ParquetBloomFilter.deserialize(ParquetBloomFilter.serialize(f))
      assert(back.numBlocks == blocks)
      assert(back == f)
      assert(hashes.forall(back.mightContain))
    }
  }

  test("serialize then deserialize is the identity for every power-of-two size up to 1 MiB") {
    val rnd = new java.util.SplittableRandom(3)
    for (shift <- 5 to 20) {
      val f = Sbbf.empty(1 << shift)
      (0 until 100).foreach(_ => f.insert(rnd.nextLong()))
      val bytes = ParquetBloomFilter.serialize(f)
      assert(ParquetBloomFilter.deserialize(bytes) == f, s"${1 << shift} bytes")
    }
  }

  test("random corruption of a serialized filter never escapes as anything but InvalidBloomFilterException") {
    val good = ParquetBloomFilter.serialize(filterOf(256, "a", "b", "c"))
    val rnd = new scala.util.Random(11)
    var rejected = 0
    for (_ <- 0 until 5000) {
      val bad = good.clone()
      val flips = 1 + rnd.nextInt(4)
      for (_ <- 0 until flips) bad(rnd.nextInt(18)) = rnd.nextInt(256).toByte
      val cut = if (rnd.nextBoolean()) bad.length else rnd.nextInt(bad.length + 1)
      val stored = if (rnd.nextBoolean()) Some(cut) else None
      try ParquetBloomFilter.deserialize(bad, 0, cut, stored)
      catch { case _: InvalidBloomFilterException => rejected += 1 }
    }
    assert(rejected > 1000, "most corruptions of the header must be caught")
  }

  test("random bytes never escape as anything but InvalidBloomFilterException") {
    val rnd = new scala.util.Random(12)
    for (_ <- 0 until 5000) {
      val bytes = Array.fill(rnd.nextInt(64))(rnd.nextInt(256).toByte)
      try ParquetBloomFilter.deserialize(bytes, 0, bytes.length, None)
      catch { case _: InvalidBloomFilterException => () }
    }
  }
}

package sparkbloom.bench

import java.io.ByteArrayOutputStream
import java.nio.{ByteBuffer, ByteOrder, IntBuffer}

import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter

import sparkbloom.sbbf.Sbbf

/**
 * Builds the filters the benchmarks measure and checks, before any measurement, that our two kernels
 * and parquet-java's `BlockSplitBloomFilter` agree bit for bit and answer for answer. A benchmark whose
 * implementations disagree throws from its setup instead of reporting a number.
 *
 * Up to [[IndependentFillMaxBytes]] each implementation fills its own filter and the three bitsets are
 * compared. Beyond it (the 128 MiB filter: 102 million inserts, about a minute per implementation on a
 * busy 2-core machine, in every fork) the vector kernel fills the bitset and the other two get copies;
 * what still proves them equal there is (a) [[emptyVerified]], which inserts 2^20 hashes into a 128 MiB
 * filter three ways and compares the bitsets, and (b) the three-way comparison of 3 x 2^20 answers.
 */
object Filters {

  /** The same filter three ways. */
  final case class Trio(scalar: Sbbf, vector: Sbbf, parquet: BlockSplitBloomFilter) {
    def ours(impl: String): Sbbf = if (impl == Workload.Scalar) scalar else vector
  }

  def parquetEmpty(numBytes: Int): BlockSplitBloomFilter = {
    val p = new BlockSplitBloomFilter(numBytes)
    Workload.check(p.getBitsetSize == numBytes, s"parquet-java sized a $numBytes-byte filter as ${p.getBitsetSize}")
    p
  }

  def emptyTrio(numBytes: Int): Trio =
    Trio(Sbbf.empty(numBytes, Workload.kernel(Workload.Scalar)), Sbbf.empty(numBytes, Workload.kernel(Workload.Vector)),
      parquetEmpty(numBytes))

  def insert(t: Trio, hashes: Array[Long], len: Int): Unit = {
    t.scalar.insertAll(hashes, 0, len)
    t.vector.insertAll(hashes, 0, len)
    var i = 0
    while (i < len) { t.parquet.insertHash(hashes(i)); i += 1 }
  }

  final val IndependentFillMaxBytes = 1 << 20

  /** Three filters of `numBytes` holding keys `[keyFrom, keyUntil)`, filled as the class doc says. */
  def filled(numBytes: Int, keyFrom: Long, keyUntil: Long): Trio =
    if (numBytes <= IndependentFillMaxBytes) filledIndependently(numBytes, keyFrom, keyUntil)
    else filledByVector(numBytes, keyFrom, keyUntil)

  /** Each implementation inserts every key into its own filter; the bitsets must be identical. */
  def filledIndependently(numBytes: Int, keyFrom: Long, keyUntil: Long): Trio = {
    val t = emptyTrio(numBytes)
    Workload.forEachChunk(keyFrom, keyUntil)((chunk, len) => insert(t, chunk, len))
    verifyBits(t)
    t
  }

  /** The vector kernel inserts every key; the scalar kernel and parquet-java get copies of its bitset. */
  def filledByVector(numBytes: Int, keyFrom: Long, keyUntil: Long): Trio = {
    val v = Sbbf.empty(numBytes, Workload.kernel(Workload.Vector))
    Workload.forEachChunk(keyFrom, keyUntil)((chunk, len) => v.insertAll(chunk, 0, len))
    Trio(Sbbf.wrap(v.words.clone(), Workload.kernel(Workload.Scalar)), v, new BlockSplitBloomFilter(v.toBytes))
  }

  /**
   * An empty filter of `numBytes` for `impl`, after checking that inserting `probe` three ways gives
   * identical bitsets (the filter returned is cleared again).
   */
  def emptyVerified(numBytes: Int, impl: String, probe: Array[Long]): Either[Sbbf, BlockSplitBloomFilter] = {
    val t = emptyTrio(numBytes)
    insert(t, probe, probe.length)
    verifyBits(t)
    if (impl == Workload.Parquet) Right(parquetEmpty(numBytes)) else Left(Sbbf.empty(numBytes, Workload.kernel(impl)))
  }

  def parquetBits(p: BlockSplitBloomFilter): Array[Byte] = {
    val out = new ByteArrayOutputStream(p.getBitsetSize)
    p.writeTo(out)
    out.toByteArray
  }

  /** Both of our kernels wrote the same words, and those words are parquet-java's bytes, little-endian. */
  def verifyBits(t: Trio): Unit = {
    Workload.check(java.util.Arrays.equals(t.scalar.words, t.vector.words),
      "scalar and vector kernels built different bitsets")
    val theirs: IntBuffer = ByteBuffer.wrap(parquetBits(t.parquet)).order(ByteOrder.LITTLE_ENDIAN).asIntBuffer()
    Workload.check(theirs.equals(IntBuffer.wrap(t.scalar.words)), "our bitset differs from parquet-java's")
  }

  /** All three answer every query alike (and, when `allPresent`, answer yes to all of them). */
  def verifyAnswers(t: Trio, queries: Array[Long], allPresent: Boolean = false): Unit = {
    val a = t.scalar.mightContainAll(queries)
    val b = t.vector.mightContainAll(queries)
    var i = 0
    while (i < queries.length) {
      val p = t.parquet.findHash(queries(i))
      Workload.check(a(i) == p && b(i) == p,
        s"answers differ for hash ${queries(i)}: scalar ${a(i)}, vector ${b(i)}, parquet $p")
      Workload.check(!allPresent || p, s"an inserted hash ${queries(i)} was not found")
      i += 1
    }
    Workload.check(t.scalar.mightContainAny(queries) == a.contains(true), "scalar checkAny disagrees with checkAll")
    Workload.check(t.vector.mightContainAny(queries) == a.contains(true), "vector checkAny disagrees with checkAll")
  }

  /** parquet-java's check loop, the same work as our `mightContainAll`. */
  def parquetCheckAll(p: BlockSplitBloomFilter, hashes: Array[Long], out: Array[Boolean]): Unit = {
    var i = 0
    while (i < hashes.length) { out(i) = p.findHash(hashes(i)); i += 1 }
  }

  def parquetInsertAll(p: BlockSplitBloomFilter, hashes: Array[Long]): Unit = {
    var i = 0
    while (i < hashes.length) { p.insertHash(hashes(i)); i += 1 }
  }

  def parquetContainsAny(p: BlockSplitBloomFilter, hashes: Array[Long]): Boolean = {
    var i = 0
    while (i < hashes.length) { if (p.findHash(hashes(i))) return true; i += 1 }
    false
  }
}

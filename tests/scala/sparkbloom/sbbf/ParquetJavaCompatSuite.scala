package sparkbloom.sbbf

import java.io.ByteArrayOutputStream

import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter
import org.apache.parquet.io.api.Binary
import org.scalatest.funsuite.AnyFunSuite

import sparkbloom.hash.PlainHash

/**
 * Byte-for-byte equality with parquet-java's BlockSplitBloomFilter (on the test classpath through Spark) for
 * random values of every physical type, at every power-of-two size from 32 B to 16 MiB, on both kernels.
 */
class ParquetJavaCompatSuite extends AnyFunSuite {

  private val sizes: Seq[Int] = (5 to 24).map(1 << _)
  private def kernels: Seq[Kernel] = Seq(Kernel.scalar) ++ Kernel.vector

  /** One physical type: draws a random value and hashes it both ways (parquet-java's and ours). */
  private trait PhysicalType {
    def name: String
    def draw(rnd: java.util.Random): Any
    def theirs(bf: BlockSplitBloomFilter, v: Any): Long
    def ours(v: Any): Long
  }

  private val types: Seq[PhysicalType] = Seq(
    new PhysicalType {
      def name = "INT32"
      def draw(r: java.util.Random) = r.nextInt()
      def theirs(bf: BlockSplitBloomFilter, v: Any) = bf.hash(v.asInstanceOf[Int])
      def ours(v: Any) = PlainHash.int32(v.asInstanceOf[Int])
    },
    new PhysicalType {
      def name = "INT64"
      def draw(r: java.util.Random) = r.nextLong()
      def theirs(bf: BlockSplitBloomFilter, v: Any) = bf.hash(v.asInstanceOf[Long])
      def ours(v: Any) = PlainHash.int64(v.asInstanceOf[Long])
    },
    new PhysicalType {
      def name = "FLOAT"
      def draw(r: java.util.Random) = if (r.nextInt(20) == 0) -0.0f else java.lang.Float.intBitsToFloat(r.nextInt())
      def theirs(bf: BlockSplitBloomFilter, v: Any) = bf.hash(v.asInstanceOf[Float])
      def ours(v: Any) = PlainHash.float(v.asInstanceOf[Float])
    },
    new PhysicalType {
      def name = "DOUBLE"
      def draw(r: java.util.Random) = if (r.nextInt(20) == 0) -0.0 else java.lang.Double.longBitsToDouble(r.nextLong())
      def theirs(bf: BlockSplitBloomFilter, v: Any) = bf.hash(v.asInstanceOf[Double])
      def ours(v: Any) = PlainHash.double(v.asInstanceOf[Double])
    },
    new PhysicalType {
      def name = "BYTE_ARRAY"
      def draw(r: java.util.Random) = { val b = new Array[Byte](r.nextInt(80)); r.nextBytes(b); b }
      def theirs(bf: BlockSplitBloomFilter, v: Any) = bf.hash(Binary.fromConstantByteArray(v.asInstanceOf[Array[Byte]]))
      def ours(v: Any) = PlainHash.bytes(v.asInstanceOf[Array[Byte]])
    },
    new PhysicalType {
      def name = "FIXED_LEN_BYTE_ARRAY(16)"
      def draw(r: java.util.Random) = { val b = new Array[Byte](16); r.nextBytes(b); b }
      def theirs(bf: BlockSplitBloomFilter, v: Any) = {
        // A fixed-length value as a slice of a larger buffer, as parquet-java's readers hand them out.
        val buf = new Array[Byte](20); System.arraycopy(v.asInstanceOf[Array[Byte]], 0, buf, 2, 16)
        bf.hash(Binary.fromConstantByteArray(buf, 2, 16))
      }
      def ours(v: Any) = PlainHash.bytes(v.asInstanceOf[Array[Byte]])
    })

  private def bitset(bf: BlockSplitBloomFilter): Array[Byte] = {
    val out = new ByteArrayOutputStream(bf.getBitsetSize); bf.writeTo(out); out.toByteArray
  }

  private def valuesFor(numBytes: Int): Int = math.min(math.max(numBytes / 16, 4), 200000)

  for (t <- types)
    test(s"${t.name}: same hashes, same bitset bytes and same answers as parquet-java at 32 B .. 16 MiB") {
      val rnd = new java.util.Random(t.name.hashCode)
      for (numBytes <- sizes) {
        val theirs = new BlockSplitBloomFilter(numBytes, numBytes)
        assert(theirs.getBitsetSize == numBytes)
        val values = Array.fill(valuesFor(numBytes))(t.draw(rnd))
        val hashes = values.map(t.ours)
        values.indices.foreach { i =>
          val h = t.theirs(theirs, values(i))
          assert(h == hashes(i), s"hash of value $i at $numBytes bytes")
          theirs.insertHash(h)
        }
        val expected = bitset(theirs)
        val probes = Array.fill(2000)(t.ours(t.draw(rnd)))
        val theirAnswers = probes.map(theirs.findHash)
        for (k <- kernels) {
          val ours = Sbbf.empty(numBytes, k)
          ours.insertAll(hashes)
          assert(java.util.Arrays.equals(ours.toBytes, expected), s"${k.name}, $numBytes bytes")
          assert(ours.mightContainAll(hashes).forall(identity), s"${k.name}, $numBytes bytes: no false negatives")
          assert(ours.mightContainAll(probes).sameElements(theirAnswers), s"${k.name}, $numBytes bytes: same answers")
        }
      }
    }

  test("a filter we write is read by parquet-java with the same answers, and the other way round") {
    val rnd = new java.util.SplittableRandom(9)
    val hashes = Array.fill(3000)(rnd.nextLong())
    val ours = Sbbf.empty(8192); ours.insertAll(hashes)
    val theirs = new BlockSplitBloomFilter(ours.toBytes)
    val probes = hashes ++ Array.fill(20000)(rnd.nextLong())
    assert(probes.map(theirs.findHash).sameElements(ours.mightContainAll(probes)))
    val back = Sbbf.fromBytes(bitset(theirs))
    assert(back == ours)
  }

  test("serialize writes the header parquet-java's Util writes in a file, followed by the bitset") {
    val f = Sbbf.empty(2048); f.insert(PlainHash.int64(1))
    val bytes = ParquetBloomFilter.serialize(f)
    val header = org.apache.parquet.format.Util.readBloomFilterHeader(new java.io.ByteArrayInputStream(bytes))
    assert(header.getNumBytes == 2048 && header.getAlgorithm.isSetBLOCK && header.getHash.isSetXXHASH &&
      header.getCompression.isSetUNCOMPRESSED)
    assert(bytes.length == 16 + 2048)
    assert(bytes.drop(16).sameElements(f.toBytes))
  }
}

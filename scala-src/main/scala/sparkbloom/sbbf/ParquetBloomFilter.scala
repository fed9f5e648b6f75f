package sparkbloom.sbbf

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, IOException}

import org.apache.parquet.format.{
  BloomFilterAlgorithm, BloomFilterCompression, BloomFilterHash, BloomFilterHeader, SplitBlockAlgorithm, Uncompressed,
  Util, XxHash
}

/**
 * The on-disk form of a Parquet bloom filter: a Thrift-compact `BloomFilterHeader` followed by the bitset.
 * The Thrift structures are parquet-java's own (`org.apache.parquet.format`), not a hand-written codec.
 *
 * Reading is strict: only BLOCK / XXHASH / UNCOMPRESSED is accepted (the deprecated murmur3 format and
 * anything unknown are rejected), numBytes must be a positive multiple of 32 no larger than 128 MiB, and
 * when the stored length is known the header must agree with it exactly. A reader that trusted a smaller
 * numBytes than was written would probe the wrong blocks and lose rows.
 */
object ParquetBloomFilter {

  def header(numBytes: Int): BloomFilterHeader = {
    val algorithm = new BloomFilterAlgorithm(); algorithm.setBLOCK(new SplitBlockAlgorithm())
    val hash = new BloomFilterHash(); hash.setXXHASH(new XxHash())
    val compression = new BloomFilterCompression(); compression.setUNCOMPRESSED(new Uncompressed())
    new BloomFilterHeader(numBytes, algorithm, hash, compression)
  }

  /** Header + bitset, exactly as parquet-java writes it into a file. */
  def serialize(filter: Sbbf): Array[Byte] = {
    val out = new ByteArrayOutputStream(filter.numBytes + 16)
    Util.writeBloomFilterHeader(header(filter.numBytes), out)
    out.write(filter.toBytes)
    out.toByteArray
  }

  /** A parsed header: its declared bitset size and the number of bytes the header itself took. */
  final case class Parsed(numBytes: Int, headerLength: Int)

  /** Parses and validates a header at the start of `bytes(offset until offset+available)`. */
  def parseHeader(bytes: Array[Byte], offset: Int, available: Int): Parsed = {
    if (offset < 0 || available < 0 || offset.toLong + available > bytes.length)
      throw new InvalidBloomFilterException(
        s"bloom filter range $offset + $available is outside a buffer of ${bytes.length} bytes")
    val in = new ByteArrayInputStream(bytes, offset, available)
    val h = try Util.readBloomFilterHeader(in)
    catch {
      case e: IOException => throw new InvalidBloomFilterException(s"unreadable bloom filter header: ${e.getMessage}")
      case e: RuntimeException => throw new InvalidBloomFilterException(s"unreadable bloom filter header: $e")
    }
    val headerLength = available - in.available()
    if (h.getAlgorithm == null || !h.getAlgorithm.isSetBLOCK)
      throw new InvalidBloomFilterException(s"unsupported bloom filter algorithm ${h.getAlgorithm} (only BLOCK)")
    if (h.getHash == null || !h.getHash.isSetXXHASH)
      throw new InvalidBloomFilterException(s"unsupported bloom filter hash ${h.getHash} (only XXHASH)")
    if (h.getCompression == null || !h.getCompression.isSetUNCOMPRESSED)
      throw new InvalidBloomFilterException(
        s"unsupported bloom filter compression ${h.getCompression} (only UNCOMPRESSED)")
    val n = h.getNumBytes
    if (n <= 0 || n % Sbbf.BytesPerBlock != 0)
      throw new InvalidBloomFilterException(
        s"bloom filter numBytes $n is not a positive multiple of ${Sbbf.BytesPerBlock}")
    if (n > Sbbf.MaxBytes)
      throw new InvalidBloomFilterException(s"bloom filter numBytes $n exceeds the ${Sbbf.MaxBytes} byte maximum")
    Parsed(n, headerLength)
  }

  /**
   * Reads header + bitset. `storedLength` is the column chunk's `bloom_filter_length` when the file has
   * one (header + bitset); then the header's numBytes must account for exactly that many bytes.
   */
  def deserialize(bytes: Array[Byte], offset: Int, available: Int, storedLength: Option[Int],
                  kernel: Kernel = Kernel.default): Sbbf = {
    val p = parseHeader(bytes, offset, available)
    storedLength.foreach { len =>
      if (p.headerLength.toLong + p.numBytes != len)
        throw new InvalidBloomFilterException(
          s"bloom filter header says ${p.headerLength} + ${p.numBytes} bytes but the stored length is $len")
    }
    if (p.headerLength.toLong + p.numBytes > available)
      throw new InvalidBloomFilterException(
        s"bloom filter of ${p.numBytes} bytes runs past the ${available - p.headerLength} bytes available")
    Sbbf.fromBytes(bytes, offset + p.headerLength, p.numBytes, kernel)
  }

  def deserialize(bytes: Array[Byte]): Sbbf = deserialize(bytes, 0, bytes.length, Some(bytes.length))
}

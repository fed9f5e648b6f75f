package sparkbloom.parquet

import java.io.IOException

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.apache.parquet.io.SeekableInputStream

import sparkbloom.sbbf.{InvalidBloomFilterException, Kernel, ParquetBloomFilter, Sbbf}
import sparkbloom.shims.ParquetCompat

/**
 * Reads the bloom filter a Parquet writer stored for one column chunk (`ColumnMetaData.bloom_filter_offset`
 * and, since format 2.10, `bloom_filter_length`). Everything unusable is an [[InvalidBloomFilterException]]:
 * an offset or length outside the file, an unreadable or unsupported header, a header whose size disagrees
 * with the stored length. Callers treat that as "no filter" and keep the data.
 *
 * Without a stored length only a bounded prefix is read to parse the header; the bitset size then comes
 * from the header (validated to at most 128 MiB and to lie inside the file) before anything is allocated.
 */
object NativeFilterReader {
  /** Bytes read to find the header when the length is not stored (arrow-rs estimates 20; leave room). */
  final val HeaderPrefix = 256

  def read(in: SeekableInputStream, fileLength: Long, offset: Long, length: Option[Int]): Sbbf = {
    if (offset < 0 || offset >= fileLength)
      throw new InvalidBloomFilterException(s"bloom filter offset $offset is outside the file of $fileLength bytes")
    length match {
      case Some(len) =>
        if (len <= 0 || offset + len > fileLength)
          throw new InvalidBloomFilterException(
            s"bloom filter at offset $offset: its $len bytes run past the end of the file (they lie outside the file " +
              s"of $fileLength bytes)")
        if (len > Sbbf.MaxBytes + HeaderPrefix)
          throw new InvalidBloomFilterException(s"bloom filter length $len exceeds the ${Sbbf.MaxBytes} byte maximum")
        val bytes = readAt(in, offset, len)
        ParquetBloomFilter.deserialize(bytes, 0, len, Some(len))
      case None =>
        val prefixLength = math.min(HeaderPrefix.toLong, fileLength - offset).toInt
        val prefix = readAt(in, offset, prefixLength)
        val header = ParquetBloomFilter.parseHeader(prefix, 0, prefixLength)
        val total = header.headerLength.toLong + header.numBytes
        if (offset + total > fileLength)
          throw new InvalidBloomFilterException(
            s"bloom filter header says ${header.numBytes} bytes at offset $offset, past the end of the file of " +
              s"$fileLength bytes")
        val bitset = new Array[Byte](header.numBytes)
        val inPrefix = math.min(prefixLength - header.headerLength, header.numBytes)
        System.arraycopy(prefix, header.headerLength, bitset, 0, inPrefix)
        if (inPrefix < header.numBytes)
          readFully(in, offset + header.headerLength + inPrefix, bitset, inPrefix, header.numBytes - inPrefix)
        Sbbf.fromBytes(bitset)
    }
  }

  /**
   * A validated filter whose bitset has not been read: where it starts and how many 32-byte blocks it has.
   * Probing reads only the blocks the hashes select (32 bytes each) instead of the whole bitset (parquet-java
   * writes 1 MiB per chunk unless told the number of distinct values).
   */
  final class Located(in: SeekableInputStream, val bitsetOffset: Long, val numBlocks: Int) {
    private val blocks = new java.util.HashMap[Integer, Sbbf]()
    /** True if any of `hashes` may be in the filter. */
    def mightContainAny(hashes: Array[Long]): Boolean = {
      var i = 0
      while (i < hashes.length) {
        val b = Kernel.blockIndex(hashes(i), numBlocks)
        var block = blocks.get(b)
        if (block == null) {
          block = Sbbf.fromBytes(readAt(in, bitsetOffset + b.toLong * Sbbf.BytesPerBlock, Sbbf.BytesPerBlock))
          blocks.put(b, block)
        }
        // A one-block filter: its block index is always 0, and the bit test is the block's own.
        if (block.mightContain(hashes(i))) return true
        i += 1
      }
      false
    }
  }

  /**
   * Validates the filter at `offset` exactly as [[read]] does (offset and length inside the file, a supported
   * header, the header agreeing with the stored length, or with the file's end when none is stored) and
   * returns where its bitset lies, reading only the header.
   */
  def locate(in: SeekableInputStream, fileLength: Long, offset: Long, length: Option[Int]): Located = {
    if (offset < 0 || offset >= fileLength)
      throw new InvalidBloomFilterException(s"bloom filter offset $offset is outside the file of $fileLength bytes")
    length.foreach { len =>
      if (len <= 0 || offset + len > fileLength)
        throw new InvalidBloomFilterException(
          s"bloom filter at offset $offset: its $len bytes run past the end of the file (they lie outside the file " +
            s"of $fileLength bytes)")
    }
    val prefixLength = math.min(HeaderPrefix.toLong, length.map(_.toLong).getOrElse(fileLength - offset)).toInt
    val prefix = readAt(in, offset, prefixLength)
    val header = ParquetBloomFilter.parseHeader(prefix, 0, prefixLength)
    val total = header.headerLength.toLong + header.numBytes
    length match {
      case Some(len) if total != len =>
        throw new InvalidBloomFilterException(
          s"bloom filter header says ${header.headerLength} + ${header.numBytes} bytes but the stored length is $len")
      case None if offset + total > fileLength =>
        throw new InvalidBloomFilterException(
          s"bloom filter header says ${header.numBytes} bytes at offset $offset, past the end of the file of " +
            s"$fileLength bytes")
      case _ =>
    }
    new Located(in, offset + header.headerLength, header.numBytes / Sbbf.BytesPerBlock)
  }

  /** Opens `path` (its length from the file system) and reads the filter at `offset`. */
  def read(conf: Configuration, path: Path, offset: Long, length: Option[Int]): Sbbf = {
    val file = HadoopInputFile.fromPath(path, conf)
    val in = file.newStream()
    try read(in, file.getLength, offset, length)
    finally in.close()
  }

  /** The filter of one column chunk, or None when the writer stored none. */
  def read(in: SeekableInputStream, fileLength: Long, column: ColumnChunkMetaData): Option[Sbbf] = {
    val offset = column.getBloomFilterOffset
    if (offset < 0) None
    else Some(read(in, fileLength, offset, storedLength(column)))
  }

  /** `bloom_filter_length` when present and readable (parquet-java 1.13, in Spark 3.5, does not read it). */
  def storedLength(column: ColumnChunkMetaData): Option[Int] = ParquetCompat.storedBloomLength(column)

  private def readAt(in: SeekableInputStream, offset: Long, len: Int): Array[Byte] = {
    val out = new Array[Byte](len)
    readFully(in, offset, out, 0, len)
    out
  }

  private def readFully(in: SeekableInputStream, offset: Long, out: Array[Byte], from: Int, len: Int): Unit =
    try { in.seek(offset); in.readFully(out, from, len) }
    catch {
      case e: IOException =>
        throw new InvalidBloomFilterException(s"cannot read $len bloom filter bytes at offset $offset: ${e.getMessage}")
    }
}

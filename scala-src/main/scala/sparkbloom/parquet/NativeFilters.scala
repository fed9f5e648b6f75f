package sparkbloom.parquet

import org.apache.parquet.io.InputFile

import sparkbloom.sbbf.{InvalidBloomFilterException, ParquetBloomFilter, Sbbf}

/** Reads a column chunk's own bloom filter from a Parquet file, strictly (see [[ParquetBloomFilter]]). */
object NativeFilters {
  private val MaxHeader = 64

  def read(file: InputFile, fileLength: Long, offset: Long, length: Option[Int]): Sbbf = {
    if (offset < 0 || offset >= fileLength)
      throw new InvalidBloomFilterException(s"bloom filter offset $offset is outside the file ($fileLength bytes)")
    length.foreach { l =>
      if (l <= 0 || offset + l > fileLength)
        throw new InvalidBloomFilterException(s"bloom filter of $l bytes at offset $offset runs past the end of the file ($fileLength bytes)")
    }
    val in = file.newStream()
    try {
      in.seek(offset)
      length match {
        case Some(l) =>
          val buf = new Array[Byte](l); in.readFully(buf)
          ParquetBloomFilter.deserialize(buf, 0, l, Some(l))
        case None =>
          val headBytes = math.min(MaxHeader.toLong, fileLength - offset).toInt
          val head = new Array[Byte](headBytes); in.readFully(head)
          val p = ParquetBloomFilter.parseHeader(head, 0, headBytes)
          if (offset + p.headerLength + p.numBytes > fileLength)
            throw new InvalidBloomFilterException(s"bloom filter of ${p.numBytes} bytes at offset $offset runs past the end of the file")
          in.seek(offset + p.headerLength)
          val bits = new Array[Byte](p.numBytes); in.readFully(bits)
          Sbbf.fromBytes(bits, 0, bits.length)
      }
    } finally in.close()
  }
}

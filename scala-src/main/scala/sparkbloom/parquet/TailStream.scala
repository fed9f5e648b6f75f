package sparkbloom.parquet

import java.nio.ByteBuffer

import org.apache.hadoop.fs.FSDataInputStream
import org.apache.parquet.io.SeekableInputStream

/**
 * A stream over a Parquet file whose last bytes (`tail`, starting at file offset `tailStart`) were read at once:
 * reads that fall inside them are served from memory, the others seek the file and read it. A harvest
 * reads its filters through it: parquet-java writes them right before the footer, so a small file's filters
 * come with the read that fetched the footer.
 */
final class TailStream(in: FSDataInputStream, private var tailStart: Long, private var tail: Array[Byte])
  extends SeekableInputStream {
  private var pos = 0L

  /**
   * Extends the bytes held in memory back to file offset `from` with one read, when that adds at most
   * `maxBytes` (a harvest calls it with its first filter's offset: one read then serves every filter).
   */
  def prefetchFrom(from: Long, maxBytes: Int): Unit =
    if (from >= 0 && from < tailStart && tailStart - from <= maxBytes) {
      val more = new Array[Byte]((tailStart - from).toInt + tail.length)
      TailStream.readAt(in, from, more, 0, (tailStart - from).toInt)
      System.arraycopy(tail, 0, more, (tailStart - from).toInt, tail.length)
      tail = more; tailStart = from
    }

  override def getPos: Long = pos
  override def seek(newPos: Long): Unit = pos = newPos

  private def inTail(len: Int): Boolean = pos >= tailStart && pos + len <= tailStart + tail.length

  override def readFully(bytes: Array[Byte]): Unit = readFully(bytes, 0, bytes.length)

  override def readFully(bytes: Array[Byte], start: Int, len: Int): Unit = {
    if (inTail(len)) System.arraycopy(tail, (pos - tailStart).toInt, bytes, start, len)
    else TailStream.readAt(in, pos, bytes, start, len)
    pos += len
  }

  override def read(bytes: Array[Byte], start: Int, len: Int): Int = {
    if (len == 0) return 0
    val n = if (inTail(len)) { System.arraycopy(tail, (pos - tailStart).toInt, bytes, start, len); len }
    else { in.seek(pos); in.read(bytes, start, len) }
    if (n > 0) pos += n
    n
  }

  override def read(): Int = {
    val one = new Array[Byte](1)
    if (read(one, 0, 1) <= 0) -1 else one(0) & 0xff
  }

  override def read(buf: ByteBuffer): Int = {
    val bytes = new Array[Byte](buf.remaining())
    val n = read(bytes, 0, bytes.length)
    if (n > 0) buf.put(bytes, 0, n)
    n
  }

  override def readFully(buf: ByteBuffer): Unit = {
    val bytes = new Array[Byte](buf.remaining())
    readFully(bytes)
    buf.put(bytes)
  }

  override def close(): Unit = in.close()
}

object TailStream {
  /**
   * `len` bytes at file offset `pos`: a seek and a sequential read, not a positioned read. Hadoop's checksummed
   * local file system (`file:`) answers every positioned read with a new checker that opens the file and its `.crc`
   * file again; a seek keeps the open stream (still verifying checksums), and object stores seek lazily.
   */
  def readAt(in: FSDataInputStream, pos: Long, bytes: Array[Byte], start: Int, len: Int): Unit = {
    in.seek(pos)
    in.readFully(bytes, start, len)
  }
}

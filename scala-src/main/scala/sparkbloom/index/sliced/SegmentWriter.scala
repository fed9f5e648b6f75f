package sparkbloom.index.sliced

import java.util.zip.CRC32

import scala.collection.mutable

import org.apache.hadoop.fs.{FileSystem, LocalFileSystem, Path}

/** One (file, row group, column) entry of a build, as a task reports it to the driver (no filter bytes). */
final case class EntryMeta(path: String, size: Long, mtime: Long, rowGroup: Int, start: Long, end: Long, rows: Long,
                           column: String, physical: String, logical: String, typeLength: Int, rebase: Boolean,
                           hasNull: Boolean, nonNull: Long, ndv: Long, source: String, fpp: Float,
                           segment: String, slot: Int)

/**
 * Writes the filters one build task produces as block-sliced segments (see [[Segment]]): filters of the same
 * column and block count are buffered, and a buffer is written block-major, each run followed by its CRC32,
 * once it holds `maxBytes` or the task ends. Segments are named after the task's partition, so a retried task
 * rewrites the same files with the same bytes.
 */
final class SegmentWriter(fs: FileSystem, indexDir: Path, dataDirName: String, partition: Int,
                          maxBytes: Long = SegmentWriter.DefaultMaxBytes) {
  private final class Buffer(val file: String, val column: String, val blocks: Int) {
    val filters = mutable.ArrayBuffer[Array[Byte]]()
  }
  private val open = mutable.LinkedHashMap[(String, Int), Buffer]()
  private val written = mutable.Buffer[Segment]()
  private var seq = 0

  /** Adds one filter (its bitset bytes); returns the segment file and slot it will have. */
  def add(column: String, columnOrdinal: Int, bitset: Array[Byte]): (String, Int) = {
    val blocks = bitset.length / 32
    val key = (column, blocks)
    open.get(key).filter(b => (b.filters.size + 1L) * bitset.length > maxBytes && b.filters.nonEmpty).foreach { full =>
      flush(full); open.remove(key)
    }
    val buf = open.getOrElseUpdate(key, {
        seq += 1
        new Buffer(s"$dataDirName/p$partition-c$columnOrdinal-b$blocks-$seq.seg", column, blocks)
      })
    buf.filters += bitset
    (buf.file, buf.filters.size - 1)
  }

  /** Writes every open buffer; returns all segments this task wrote. */
  def close(): Seq[Segment] = { open.values.foreach(flush); open.clear(); written.toSeq }

  private def flush(b: Buffer): Unit = {
    SegmentWriter.write(fs, new Path(indexDir, b.file), SegmentWriter.blockMajor(b.filters.toSeq, b.blocks))
    written += Segment(b.file, b.column, b.blocks, b.filters.size)
  }
}

object SegmentWriter {
  /**
   * Writes a whole segment file. On the local file system straight through java.nio: Hadoop's
   * RawLocalFileSystem (without its native library) forks a `chmod` process for every file it creates and
   * another for its `.crc` side file, which cost more than a build task's own work. Segments carry a CRC32
   * per run, so the side file adds nothing; readers open them through `fs` as before.
   */
  def write(fs: FileSystem, path: Path, bytes: Array[Byte]): Unit = fs match {
    case local: LocalFileSystem =>
      val file = local.pathToFile(path).toPath
      java.nio.file.Files.createDirectories(file.getParent)
      java.nio.file.Files.write(file, bytes)
    case _ =>
      val out = fs.create(path, true)
      try out.write(bytes)
      finally out.close()
  }

  /** Bytes of filters per segment file: bounds a build task's memory, not the read size of a probe. */
  val DefaultMaxBytes: Long = 32L << 20

  /** The bytes of a segment holding `filters` (bitsets of `blocks` blocks each, in slot order). */
  def blockMajor(filters: Seq[Array[Byte]], blocks: Int): Array[Byte] = {
    val count = filters.size
    val stride = 32 * count + 4
    val out = new Array[Byte](blocks * stride)
    val crc = new CRC32()
    var block = 0
    while (block < blocks) {
      val base = block * stride
      var j = 0
      while (j < count) { System.arraycopy(filters(j), block * 32, out, base + j * 32, 32); j += 1 }
      crc.reset(); crc.update(out, base, 32 * count)
      val c = crc.getValue.toInt
      out(base + 32 * count) = c.toByte; out(base + 32 * count + 1) = (c >>> 8).toByte
      out(base + 32 * count + 2) = (c >>> 16).toByte; out(base + 32 * count + 3) = (c >>> 24).toByte
      block += 1
    }
    out
  }
}

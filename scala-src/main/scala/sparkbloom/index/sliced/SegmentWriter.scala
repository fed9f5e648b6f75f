package sparkbloom.index.sliced

import java.util.zip.CRC32

import scala.collection.mutable

import org.apache.hadoop.fs.{FileSystem, LocalFileSystem, Path}

import sparkbloom.parquet.StoreFiles
import sparkbloom.sbbf.{Kernel, Sbbf, Sizing}

/** One (file, row group, column) entry of a build, as a task reports it to the driver (no filter bytes). */
final case class EntryMeta(path: String, size: Long, mtime: Long, rowGroup: Int, start: Long, end: Long, rows: Long,
                           column: String, physical: String, logical: String, typeLength: Int, rebase: Boolean,
                           hasNull: Boolean, nonNull: Long, ndv: Long, source: String, fpp: Float,
                           segment: String, slot: Int)

/** Row-group segment `segment`'s summary is slot `slot` of summary segment `summary` (see [[Summaries]]). */
final case class SummaryLink(segment: String, summary: Segment, slot: Int, fpp: Float)

/** The summary filter (bitset) of row-group segment `segment`, as a build task hands it to the driver. */
final case class SummaryFilter(segment: String, column: String, columnOrdinal: Int, bitset: Array[Byte], fpp: Float)

/**
 * Stores the summaries of a build on the driver: one summary segment per column and block count, block-major
 * like the row groups' segments, so that checking every segment of a column reads one run per summary
 * segment, `S · 32` bytes for S segments (10^6 row groups: ~500 segments, 16 KB).
 */
object SummaryWriter {
  def write(fs: FileSystem, indexDir: Path, dataDirName: String, filters: Seq[SummaryFilter]): Seq[SummaryLink] = {
    val groups = filters.groupBy(f => (f.column, f.columnOrdinal, f.bitset.length / 32)).toSeq.sortBy(g =>
      (g._1._2, g._1._3)).map { case ((column, ordinal, blocks), fs0) =>
      (column, blocks, s"$dataDirName/summary-c$ordinal-b$blocks.sum", fs0.sortBy(_.segment))
    }
    // one file per column and block count, new files of a new data directory: side by side on a remote store
    StoreFiles.concurrently(fs,
      groups.map { case (_, blocks, file, sorted) =>
        () =>
          SegmentWriter.write(fs, new Path(indexDir, file),
            SegmentWriter.blockMajor(sorted.map(_.bitset).toIndexedSeq, blocks))
      })
    groups.flatMap { case (column, blocks, file, sorted) =>
      val seg = Segment(file, column, blocks, sorted.size)
      sorted.zipWithIndex.map { case (f, slot) => SummaryLink(f.segment, seg, slot, f.fpp) }
    }
  }
}

/**
 * Writes the filters one build task produces as block-sliced segments (see [[Segment]]): filters of the same
 * column and block count are buffered, and a buffer is written block-major, each run followed by its CRC32,
 * once it holds `maxBytes` or `maxSlots` filters, or the task ends. Segments are named after the task's
 * partition, so a retried task rewrites the same files with the same bytes.
 *
 * With `summaryFpp` (column, values, the segment's expected false row groups per absent value → the summary's
 * FPP) and the hashes of every filter of a segment, the segment also gets a summary filter ([[Summaries]]),
 * which the task hands to the driver ([[summaries]]): [[SummaryWriter]] stores every task's together. Filters
 * added without their hashes (harvested) go to segments of their own, without a summary.
 */
final class SegmentWriter(fs: FileSystem, indexDir: Path, dataDirName: String, partition: Int,
                          maxBytes: Long = SegmentWriter.DefaultMaxBytes,
                          summaryFpp: Option[(String, Long, Double) => Double] = None,
                          maxSlots: Int = SegmentWriter.DefaultMaxSlots) {
  private final class Buffer(val file: String, val column: String, val columnOrdinal: Int, val blocks: Int) {
    val filters = mutable.ArrayBuffer[Array[Byte]]()
    var hashes = Array.emptyLongArray // the values' hashes, for the summary; null once a filter came without
    var nHashes = 0
    var adopted = false // `hashes` is the first filter's own array (kept, not copied): appends copy it first
    var leafFalse = 0.0 // Σ of the filters' FPPs
  }
  private val open = mutable.LinkedHashMap[(String, Int, Boolean), Buffer]()
  private val written = mutable.Buffer[Segment]()
  private val summaryFilters = mutable.Buffer[SummaryFilter]()
  private var seq = 0

  /** Adds one filter (its bitset bytes); returns the segment file and slot it will have. */
  def add(column: String, columnOrdinal: Int, bitset: Array[Byte]): (String, Int) =
    add(column, columnOrdinal, bitset, null, 0, 1.0)

  /**
   * Adds one filter with the distinct hashes of its values (`hashes(0 until n)`, or null: not known) and its
   * FPP; returns the segment file and slot it will have. The writer may keep `hashes` until the segment is
   * written, and never changes it: the caller must not change it either.
   */
  def add(column: String, columnOrdinal: Int, bitset: Array[Byte], hashes: Array[Long], n: Int, fpp: Double)
      : (String, Int) = {
    val blocks = bitset.length / 32
    // Filters without their values (harvested) never share a segment with filters that have them, which
    // would then lose their summary.
    val key = (column, blocks, hashes != null && summaryFpp.isDefined)
    open.get(key).filter(b =>
      b.filters.nonEmpty &&
        ((b.filters.size + 1L) * bitset.length > maxBytes || b.filters.size >= maxSlots ||
          (b.hashes != null && b.nHashes + n > SegmentWriter.MaxSummaryValues))).foreach { full =>
      flush(full); open.remove(key)
    }
    val buf = open.getOrElseUpdate(key, {
        seq += 1
        new Buffer(s"$dataDirName/p$partition-c$columnOrdinal-b$blocks-$seq.seg", column, columnOrdinal, blocks)
      })
    buf.filters += bitset
    buf.leafFalse += fpp
    if (summaryFpp.isEmpty || hashes == null) buf.hashes = null
    else if (buf.hashes != null && n > 0) {
      if (buf.nHashes == 0) { buf.hashes = hashes; buf.adopted = true } // a segment's first values: kept as they are
      else {
        if (buf.adopted || buf.nHashes + n > buf.hashes.length) {
          buf.hashes = java.util.Arrays.copyOf(buf.hashes, math.max(buf.nHashes + n, 2 * buf.nHashes))
          buf.adopted = false
        }
        System.arraycopy(hashes, 0, buf.hashes, buf.nHashes, n)
      }
      buf.nHashes += n
    }
    (buf.file, buf.filters.size - 1)
  }

  /** Writes every open buffer; returns all segments this task wrote. */
  def close(): Seq[Segment] = {
    val last = open.values.toVector // a copy: on Scala 2.12 toSeq is lazy, and the map is cleared next
    open.clear()
    // the last buffers' files (one per column, new by construction) side by side on a remote store: one round trip,
    // not one per column
    StoreFiles.concurrently(fs, last.map(b => () => writeFile(b)))
    last.foreach(record)
    written.toSeq
  }

  /** The summaries of the segments written, one per segment that has one (the driver stores them). */
  def summaries: Seq[SummaryFilter] = summaryFilters.toSeq

  private def flush(b: Buffer): Unit = { writeFile(b); record(b) }

  private def writeFile(b: Buffer): Unit =
    SegmentWriter.write(fs, new Path(indexDir, b.file), SegmentWriter.blockMajor(b.filters.toIndexedSeq, b.blocks))

  /** A written buffer's segment, and its summary filter when it has one, in this task's lists. */
  private def record(b: Buffer): Unit = {
    written += Segment(b.file, b.column, b.blocks, b.filters.size)
    for (f <- summaryFpp if b.hashes != null && b.nHashes > 0; p = f(b.column, b.nHashes.toLong, b.leafFalse)
      if p < 1) {
      val summary = Sbbf.empty(Sizing.indexBytes(b.nHashes.toLong, p), Kernel.scalar)
      var i = 0
      while (i < b.nHashes) { summary.insert(Summaries.rehash(b.hashes(i))); i += 1 }
      summaryFilters += SummaryFilter(b.file, b.column, b.columnOrdinal, summary.toBytes, summary.observedFpp.toFloat)
    }
    b.hashes = null
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
    case _ if StoreFiles.objectStore(fs) => StoreFiles.writeNewOnObjectStore(fs, path, bytes) // a fresh version dir
    case _ =>
      val out = fs.create(path, true)
      try out.write(bytes)
      finally out.close()
  }

  /** Bytes of filters per segment file: bounds a build task's memory. */
  val DefaultMaxBytes: Long = 32L << 20

  /**
   * Filters per segment: a run is 32 bytes per filter, so this bounds what a probe reads in a segment its
   * summary sends it to (64 KB), and makes the segments of a column about R / 2048, the runs of their
   * summaries 32 bytes each: with R = 10^6 a point lookup reads ~16 KB of summaries and one or two runs.
   */
  val DefaultMaxSlots: Int = 2048

  /** Hashes a segment keeps for its summary (8 bytes each): bounds a build task's memory. */
  val MaxSummaryValues: Int = 4 << 20

  /**
   * The bytes of a segment holding `filters` (bitsets of `blocks` blocks each, in slot order). Indexed: each filter
   * is read once per block (a `List` here made a segment of 2,048 filters cost 2,048² steps per block).
   */
  def blockMajor(filters: IndexedSeq[Array[Byte]], blocks: Int): Array[Byte] = {
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
